"""Per-process counters of the kinds served, flushed to the database in batches.

``record`` is called once per finished read (``Namespace._finish``): it touches a dict under a
lock, nothing else — no read waits on the database for it. When a request has been answered
(Django's ``request_finished``), the counts are written if a batch is due — ``FLUSH_EVERY``
reads or ``FLUSH_SECONDS`` seconds since the last write, whichever comes first — in one
transaction; the process writes what is left at exit (a stdio server writes then). A flush
that fails (no database yet, a locked SQLite file) keeps its counts for the next one. Reads
made only to assemble another read (the addresses a blocks read consults) are not served and
are not counted: they run inside ``quiet()``.

Spec: KINDS.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter as Tally
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tmsite.core.types import Content

log = logging.getLogger(__name__)

FLUSH_EVERY = 200
FLUSH_SECONDS = 30.0
_QUIET: ContextVar[bool] = ContextVar("tm_kinds_quiet", default=False)


@contextmanager
def quiet() -> Iterator[None]:
    """Reads inside are not counted (they serve another read)."""
    token = _QUIET.set(True)
    try:
        yield
    finally:
        _QUIET.reset(token)


@dataclass
class Seen:
    """What one kind was served as, since the last flush."""

    count: int = 0
    media_types: Tally[str] = field(default_factory=Tally)
    rels: Tally[str] = field(default_factory=Tally)
    first: datetime | None = None
    last: datetime | None = None

    def merge(self, other: Seen) -> None:
        """Add ``other``'s counts and tallies to these, widening first and last served."""
        self.count += other.count
        self.media_types.update(other.media_types)
        self.rels.update(other.rels)
        if other.first is not None and (self.first is None or other.first < self.first):
            self.first = other.first
        if other.last is not None and (self.last is None or other.last > self.last):
            self.last = other.last

    def to_json(self, kind: str) -> dict[str, Any]:
        """What ``kinds/<kind>`` reads as: counts, tallies sorted by name, ISO times or null."""
        return {
            "kind": kind,
            "count": self.count,
            "mediaTypes": dict(sorted(self.media_types.items())),
            "rels": dict(sorted(self.rels.items())),
            "firstServed": self.first.isoformat() if self.first else None,
            "lastServed": self.last.isoformat() if self.last else None,
        }


def tally_of(content: Content) -> tuple[str, str, frozenset[str]]:
    """What a read of ``content`` counts: its kind, its media type, its links' rels."""
    media = content.mime_type.split(";")[0].strip()
    return content.kind, media, frozenset(link.rel for link in content.links)


class KindCounter:
    """The counts of one process, and their batched way to the database."""

    def __init__(self, every: int = FLUSH_EVERY, seconds: float = FLUSH_SECONDS) -> None:
        self.every = every
        self.seconds = seconds
        self._lock = threading.Lock()
        self._pending: dict[str, Seen] = {}
        self._reads = 0
        self._last_flush = time.monotonic()

    def record(self, content: Content) -> None:
        """Count one served read (cheap: a dict update under a lock)."""
        if _QUIET.get():
            return
        self.record_tally(*tally_of(content))

    def record_tally(self, kind: str, media: str, rels: frozenset[str]) -> None:
        """Count one served read of ``kind``, ``media``, ``rels`` (:func:`tally_of`)."""
        if _QUIET.get():
            return
        now = datetime.now(UTC)
        with self._lock:
            seen = self._pending.get(kind)
            if seen is None:
                seen = self._pending[kind] = Seen()
            seen.count += 1
            seen.media_types[media] += 1
            for rel in rels:
                seen.rels[rel] += 1
            seen.first = seen.first or now
            seen.last = now
            self._reads += 1

    @property
    def due(self) -> bool:
        """Whether a batch is ready: ``every`` reads, or ``seconds`` since the last flush."""
        with self._lock:
            if not self._pending:
                return False
            return self._reads >= self.every or time.monotonic() - self._last_flush >= self.seconds

    def flush_if_due(self, **_: object) -> None:
        """Flush when a batch is ready (a ``request_finished`` receiver: after the answer).

        Never inside a transaction someone else opened (it would roll back with theirs, and
        it is not this request's work): the batch waits for the next request.
        """
        from django.db import connection

        if self.due and not connection.in_atomic_block:
            self.flush()

    def pending(self) -> dict[str, Seen]:
        """A copy of what has not reached the database yet."""
        with self._lock:
            out = {kind: Seen() for kind in self._pending}
            for kind, seen in self._pending.items():
                out[kind].merge(seen)
            return out

    def flush(self) -> bool:
        """Write the pending counts in one transaction; on failure keep them. True if written."""
        with self._lock:
            batch, self._pending = self._pending, {}
            self._reads = 0
            self._last_flush = time.monotonic()
        if not batch:
            return True
        try:
            write(batch)
        except Exception as exc:  # no database, no table, a locked file: try again later
            log.info("kind counts kept for the next flush: %s", exc)
            with self._lock:
                for kind, seen in batch.items():
                    self._pending.setdefault(kind, Seen()).merge(seen)
            return False
        return True

    def reset(self) -> None:
        """Forget what is pending (tests)."""
        with self._lock:
            self._pending = {}
            self._reads = 0


def write(batch: dict[str, Seen]) -> None:
    """Add one batch to the stored counts (one row per kind, locked while merged)."""
    from django.db import transaction

    from tmsite.kinds.models import KindCount

    with transaction.atomic():
        for kind, seen in sorted(batch.items()):
            assert seen.first is not None and seen.last is not None
            row, _created = KindCount._default_manager.select_for_update().get_or_create(
                kind=kind[:64],
                defaults={"first_served": seen.first, "last_served": seen.last},
            )
            stored = _seen(row)
            stored.merge(seen)
            row.count = stored.count
            row.media_types = dict(stored.media_types)
            row.rels = dict(stored.rels)
            assert stored.first is not None and stored.last is not None
            row.first_served, row.last_served = stored.first, stored.last
            row.save()


def _seen(row: Any) -> Seen:
    """What a stored row (a ``KindCount``) says."""
    return Seen(
        row.count, Tally(row.media_types), Tally(row.rels), row.first_served, row.last_served
    )


def stored() -> dict[str, Seen]:
    """The counts in the database (empty when it cannot be read)."""
    from tmsite.kinds.models import KindCount

    return {row.kind: _seen(row) for row in KindCount._default_manager.all()}


def served(counter: KindCounter, store: bool = True) -> dict[str, Seen]:
    """Everything served: the database's counts (unless ``store`` is off) and the pending ones."""
    from django.db import DatabaseError

    try:
        out = stored() if store else {}
    except DatabaseError as exc:  # not migrated yet: what this process saw is all there is
        log.info("kind counts read from memory only: %s", exc)
        out = {}
    for kind, seen in counter.pending().items():
        out.setdefault(kind, Seen()).merge(seen)
    return dict(sorted(out.items()))


#: The process's counter (the namespace records into it).
COUNTER = KindCounter()


#: Count one served read in the process's counter (see :meth:`KindCounter.record`).
record = COUNTER.record


def record_tally(tally: tuple[str, str, frozenset[str]]) -> None:
    """Count one served read whose :func:`tally_of` was worked out before (a kept answer)."""
    COUNTER.record_tally(*tally)
