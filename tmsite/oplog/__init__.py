"""Operating the box: the per-caller rate limit, the request log, health, structured logs.

``hooks`` is what the transports call: each request is one exchange, handed down with the
call it asks for; ``recorder`` batches log rows into the database. The token bucket and the
prices live in :mod:`tmsite.callers` (``buckets``, ``costs``), health in
:mod:`tmsite.rest.health`. Nothing here keeps who asked: the caller's address is used in memory
to find its bucket and is never written to the log, a log line or the namespace.
"""
