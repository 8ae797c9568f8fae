"""The MCP servers this box reads: their records, what they declared, and their index maps.

* :mod:`tmsite.servers.models` — ``McpServer`` (how to reach a server, its token setting, its
  sources and licence basis, what happened when it was last asked), ``ServerDeclaration`` (one
  snapshot of what it declared), ``MapEntry`` (one path the index map names) and the change logs
  ``MapEntryChange`` / ``ServerChange`` (who changed what, and when).
* :mod:`tmsite.servers.connect` — a client for a record, and ``probe_record``.
* :mod:`tmsite.servers.index` — the index driver: map entries derived from a server's schemas.
* :mod:`tmsite.servers.pool` — warm clients, one per server, bounded, killed on fault.
"""
