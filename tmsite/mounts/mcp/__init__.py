"""The mcp mount and the modules that belong to it."""
