"""Who is asking and what they may spend.

The caller (``caller``), whether it came over TLS (``tls``), the per-caller token bucket
(``buckets``, on its ``clock``) and what a request costs (``costs``). The request log
(:mod:`tmsite.oplog`) and every door read them.
"""
