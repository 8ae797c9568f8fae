"""What one request made the box do, counted where the work is done.

The read path reports the units it spends to the meter of the request in flight
(``spend("ranked", 5000)``); outside a metered request a report goes nowhere and costs a
context lookup. The units are counts of work, not guesses of it:

=========  ==========================================================================
unit       counted where
=========  ==========================================================================
ranked     names compared by a nearest-name ranking (a refusal's suggestions, a ref)
scanned    directory entries read from the disk (an fs directory not in the scan cache)
listed     entries built for a listing page (of any mount)
commits    commits visited by a git history walk (``?as=log``, ``?as=blame``)
fetched    pages fetched through the front door (the http mount)
peer       requests sent to another MCP server (the mcp mount)
bytes      bytes of the answer sent back
=========  ==========================================================================

``tmsite.oplog.costs`` turns them into tokens (one table); ``tmsite.oplog.hooks`` opens the
meter around each request and charges what the units cost beyond what was spent up front.
A thread the read path starts sees the meter only if it runs in a copy of the context.

Spec: OP1.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Literal, get_args

Unit = Literal["ranked", "scanned", "listed", "commits", "fetched", "peer", "bytes"]
#: Every unit, in the order the table above gives them.
UNITS: tuple[Unit, ...] = get_args(Unit)


class Meter:
    """The units one request spent so far (safe to add to from several threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._units: dict[Unit, int] = {}

    def add(self, unit: Unit, amount: int) -> None:
        """Count ``amount`` more of ``unit``."""
        with self._lock:
            self._units[unit] = self._units.get(unit, 0) + amount

    def units(self) -> dict[Unit, int]:
        """A copy of what was counted, by unit (a unit never spent is absent)."""
        with self._lock:
            return dict(self._units)


_meter: ContextVar[Meter | None] = ContextVar("tm_work_meter", default=None)


def spend(unit: Unit, amount: int = 1) -> None:
    """Report ``amount`` of ``unit`` done for the request in flight (nothing outside one)."""
    meter = _meter.get()
    if meter is not None and amount > 0:
        meter.add(unit, amount)


@contextmanager
def metered() -> Iterator[Meter]:
    """Count what the block makes the box do in a fresh meter (an outer meter sees none of it)."""
    meter = Meter()
    token = _meter.set(meter)
    try:
        yield meter
    finally:
        _meter.reset(token)
