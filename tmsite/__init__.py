"""tmsite: a box's knowledge for MCP clients."""

__version__ = "0.1.0"
