"""The kinds mount's change source: the stamp of what has been served, and reads that serve no one.

A kind changes when it is served again: its count, its types, its relations and its last
served time move. What the mount reads lives in two places, and :func:`stamp` covers both: the
``KindCount`` rows (every process's flushed batches, so another machine's reads are seen once
its batch is written) and this process's counter, not flushed yet. A
:class:`~tmsite.subscriptions.records.StampWatcher` reads it every ``TM_SUB_RECORDS_POLL``
seconds while a ``kinds/`` URI is listened to, reads each listened URI again when it moved and
publishes those whose reading changed; a batch written (``KindCount`` saved) wakes it in the
process that wrote it. A flush alone moves the stamp but changes no reading: nothing is told.

A change source's own reads are not served to anyone, and are not counted (a subscription to
``kinds/kind`` would otherwise be told of the watcher's own read of it, forever): the sources
read through :func:`tmsite.subscriptions.sources.unseen`.

Spec: SUB3, KINDS.
"""

from __future__ import annotations

from collections.abc import Hashable

from django.db import DatabaseError
from django.db.models import Count, Max, Sum

from tmsite.kinds.counter import COUNTER, KindCounter

#: The models whose saves wake the watcher in the process that saved.
SENDERS = ("tm_kinds.KindCount",)


def stamp(counter: KindCounter = COUNTER) -> Hashable:
    """What has been served, in brief: the stored counts and this process's pending ones."""
    from tmsite.kinds.models import KindCount

    pending = counter.pending()
    mine = (
        sum(seen.count for seen in pending.values()),
        max((seen.last for seen in pending.values() if seen.last), default=None),
    )
    try:
        rows = KindCount._default_manager.aggregate(
            n=Count("id"), served=Sum("count"), last=Max("last_served")
        )
    except DatabaseError:
        return ("memory", mine)
    return (rows["n"], rows["served"], rows["last"], mine)
