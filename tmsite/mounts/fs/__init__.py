"""The fs mount and the modules that belong to it."""
