"""A small stdio MCP server over the chemical elements, built on the official MCP SDK.

Run it with ``python -m tmsite.demo.mcp_server``; it is the MCP server the box reads by default.
"""
