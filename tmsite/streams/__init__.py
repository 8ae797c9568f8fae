"""Listening and subscribing over each transport: the methods and the streams that tell.

``subscriptions/listen`` (2026-07-28, :mod:`listen`) and ``resources/subscribe`` for a
2025-11-25 session (:mod:`subscribe`) are rows of the MCP method table; the streams that carry
what changed are held in the ASGI server's event loop (:mod:`stream` for a listen,
:mod:`sessionstream` for a session's GET stream) or over stdio (:mod:`stdio_stream`). What they
listen to — the sessions' records, the change sources, the bus — is below them, in
:mod:`tmsite.subscriptions` and :mod:`tmsite.bus`.
"""
