"""The memory mount and the modules that belong to it."""
