"""The manifest mount and the modules that belong to it."""
