"""The curated links as this process last read them, kept while their version is unchanged.

Every read of every address asks the proposals mount for the curated links about it
(:meth:`~tmsite.mounts.proposals.mount.ProposalsMount.links_into`); they change only when a
maintainer approves a link (or one is deleted). So a process reads them all once and answers
from memory while the version (:class:`~tmsite.proposals.models.CuratedVersion`, written afresh
on every save or delete of a :class:`~tmsite.proposals.models.CuratedLink`) is the one they were
read at. The version is asked at most once in ``VERSION_RECHECK_SECONDS``: a link saved in this
process is seen at once (:func:`forget`, from the save's receiver), one saved on another machine
within that second — the window the trail index trusts its own version for.

Spec: PROP2, LK2.
"""

from __future__ import annotations

import threading
import time

from django.db import DatabaseError

from tmsite import version_rows
from tmsite.proposals import models as pm

#: How long a process trusts the curated links' version it last read before asking again.
VERSION_RECHECK_SECONDS = 1.0
_clock = time.monotonic

Row = tuple[str, str, str]

_lock = threading.Lock()
#: ``(version, {address: [(rel, source, target), …]})``: every curated link under each end.
_memo: tuple[str, dict[str, list[Row]]] | None = None
_version_read_at: float | None = None
_forgotten = 0


def forget() -> None:
    """Drop the curated links this process read (a link was saved here; tests)."""
    global _memo, _version_read_at, _forgotten
    with _lock:
        _memo = None
        _version_read_at = None
        _forgotten += 1


def forgotten() -> int:
    """How many times this process dropped its curated links: a stamp of what it read."""
    return _forgotten


def version() -> str | None:
    """The curated links' version, one query; None without the table (not migrated yet)."""
    row = version_rows.read(pm.CuratedVersion, ("version",))
    return None if row is None else row[0]


def _read() -> dict[str, list[Row]]:
    by_end: dict[str, list[Row]] = {}
    rows = pm.CuratedLink.objects.order_by("id").values_list("rel", "source", "target")
    for rel, source, target in rows:
        by_end.setdefault(source, []).append((rel, source, target))
        if target != source:
            by_end.setdefault(target, []).append((rel, source, target))
    return by_end


def about(key: str) -> list[Row]:
    """``(rel, source, target)`` of every curated link whose source or target is ``key``.

    No query while the version was asked less than ``VERSION_RECHECK_SECONDS`` ago; one when it
    is asked again and unchanged; two when it moved (the links are read again, all at once).
    """
    global _memo, _version_read_at
    now = _clock()
    with _lock:
        known, read_at, generation = _memo, _version_read_at, _forgotten
    if known is not None and read_at is not None and now - read_at < VERSION_RECHECK_SECONDS:
        return list(known[1].get(key, ()))
    stamp = version()
    if stamp is None:
        return []
    if known is None or known[0] != stamp:
        # Read after the version: what is read is at least as new as the version it is kept under.
        try:
            known = (stamp, _read())
        except DatabaseError:
            return []
    with _lock:
        if generation == _forgotten:  # not if a link was saved here meanwhile
            _memo, _version_read_at = known, now
    return list(known[1].get(key, ()))
