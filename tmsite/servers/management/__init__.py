"""Management commands of the MCP server records."""
