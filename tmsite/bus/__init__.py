"""The change bus, on which change sources publish what changed and open streams hear it.

:mod:`~tmsite.bus.changes` is the bus in one process, :mod:`~tmsite.bus.redis_bus` carries it
across processes and machines; :mod:`~tmsite.bus.delivery` says whether this server delivers
streams at all, :mod:`~tmsite.bus.env` holds the streams' numeric settings.

Spec: SUB1, SUB2.
"""
