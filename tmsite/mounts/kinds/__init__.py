"""The kinds mount and the modules that belong to it."""
