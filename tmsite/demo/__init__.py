"""Demo servers the box reads in development and tests: a static site and an MCP server."""
