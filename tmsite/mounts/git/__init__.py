"""The git mount and the modules that belong to it."""
