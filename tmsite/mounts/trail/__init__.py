"""The trail mount and the modules that belong to it."""
