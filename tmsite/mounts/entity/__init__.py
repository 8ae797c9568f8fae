"""The entity mount and the modules that belong to it."""
