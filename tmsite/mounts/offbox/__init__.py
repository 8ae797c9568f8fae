"""The offbox mount and the modules that belong to it."""
