"""The http mount and the modules that belong to it."""
