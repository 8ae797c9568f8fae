"""The MCP server side: the Streamable HTTP and stdio transports, the envelope, the methods.

Both transports share ``envelope.py`` and dispatch through the one table in ``methods.py``;
the tools and resource methods are thin adapters over ``tmsite.operations``.
"""
