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
cpu        milliseconds of CPU a heavy computation took beyond what its units are charged
           (a blame's diffs): measured on its thread, for a rate-limited caller only
=========  ==========================================================================

``tmsite.callers.costs`` turns them into tokens (one table); ``tmsite.oplog.hooks`` opens the
meter around each request and charges what the units cost beyond what was spent up front.
A thread the read path starts sees the meter only if it runs in a copy of the context.

A request whose client went away is abandoned where its work is counted: the server marks it
gone (``tmsite.serve.app`` hears the disconnect in the event loop), and the next :func:`spend`
or :func:`check` on its thread raises :class:`Abandoned`. Like ``asyncio.CancelledError`` it
is not an error of the read, so no ``except Exception`` on the way up answers it;
``tmsite.oplog.hooks`` logs the request ``abandoned``.

A heavy computation (a blame, a history walk: ``tmsite.gitstore.kept``) runs :func:`heavy`:
inside it, the units spent are priced against the request's :func:`allowance` (what the
caller's whole budget buys, set by ``tmsite.oplog.hooks`` for a rate-limited caller), and the
unit that would go past it raises :class:`OverBudget` — the read is refused rather than
spending more than a whole budget. A caller with no limit has no allowance.

Spec: OP1, ANY2.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Literal, get_args

Unit = Literal["ranked", "scanned", "listed", "commits", "fetched", "peer", "bytes", "cpu"]
#: Every unit, in the order the table above gives them.
UNITS: tuple[Unit, ...] = get_args(Unit)


class Abandoned(BaseException):
    """The client of the request in flight went away: its work stops here."""


class OverBudget(BaseException):
    """A heavy computation would cost more than the request's allowance.

    Attributes:
        tokens: What it had cost when it was stopped (or what it is known to cost).
        allowance: The tokens it was allowed.
        progress: What the computation had finished when it was stopped, in its own terms
            (a blame: the lines it had blamed; a history: the commits it had found), for the
            refusal to offer narrower reads.
    """

    def __init__(self, tokens: float, allowance: float, progress: object = None) -> None:
        super().__init__(f"{tokens:g} tokens of work, past the allowance of {allowance:g}")
        self.tokens = tokens
        self.allowance = allowance
        self.progress = progress


class Allowance:
    """What the request in flight may spend on heavy work, its units priced by ``prices``.

    Heavy work costs the more of its units and its thread's CPU time (``cpu``, milliseconds):
    a step that counts one unit may do much more (a blame diffs the file at each commit).
    """

    def __init__(self, tokens: float, prices: dict[Unit, float]) -> None:
        self.tokens = tokens
        self.prices = prices
        self.spent = 0.0  # the units' tokens
        self.cpu_ms = 0.0  # CPU of the heavy blocks that ended
        self.started: float | None = None  # the thread's CPU clock when the outermost began
        self.cpu_charged = 0.0  # tokens of CPU put on the meter
        self.depth = 0  # heavy blocks open

    def cpu_now(self) -> float:
        """Milliseconds of CPU the heavy blocks took so far, the open one included."""
        running = 0.0 if self.started is None else time.thread_time() - self.started
        return self.cpu_ms + running * 1000

    def cost(self) -> float:
        """Tokens the heavy work cost so far: the more of its units and its CPU."""
        return max(self.spent, self.cpu_now() * self.prices.get("cpu", 0.0))

    def add(self, unit: Unit, amount: int) -> None:
        """Count ``amount`` of ``unit`` inside a heavy block; past the allowance, stop."""
        self.spent += amount * self.prices.get(unit, 0.0)
        cost = self.cost()
        if cost > self.tokens + 1e-9:  # float sums: exactly the allowance is allowed
            raise OverBudget(cost, self.tokens)


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
#: Set by the server when the client of the request in flight went away.
_gone: ContextVar[threading.Event | None] = ContextVar("tm_work_gone", default=None)
#: What the request in flight may spend on heavy work (None: no limit).
_allowance: ContextVar[Allowance | None] = ContextVar("tm_work_allowance", default=None)


def spend(unit: Unit, amount: int = 1) -> None:
    """Report ``amount`` of ``unit`` done for the request in flight (nothing outside one).

    Raises:
        Abandoned: the request's client went away.
    """
    check()
    meter = _meter.get()
    if meter is not None and amount > 0:
        meter.add(unit, amount)
    allowed = _allowance.get()
    if allowed is not None and allowed.depth and amount > 0:
        allowed.add(unit, amount)


def check() -> None:
    """Go on only while the client of the request in flight is there.

    Raises:
        Abandoned: it went away.
    """
    gone = _gone.get()
    if gone is not None and gone.is_set():
        raise Abandoned


@contextmanager
def abandoned_when(gone: threading.Event | None) -> Iterator[None]:
    """Run the block as a request that is abandoned once ``gone`` is set (None: never)."""
    token = _gone.set(gone)
    try:
        yield
    finally:
        _gone.reset(token)


@contextmanager
def metered() -> Iterator[Meter]:
    """Count what the block makes the box do in a fresh meter (an outer meter sees none of it)."""
    meter = Meter()
    token = _meter.set(meter)
    try:
        yield meter
    finally:
        _meter.reset(token)


@contextmanager
def allowing(tokens: float | None, prices: dict[Unit, float]) -> Iterator[None]:
    """Run the block as a request whose heavy work may cost ``tokens`` (None: no limit)."""
    token = _allowance.set(Allowance(tokens, prices) if tokens is not None else None)
    try:
        yield
    finally:
        _allowance.reset(token)


def allowance() -> float | None:
    """The tokens the request in flight may spend on heavy work (None: no limit)."""
    allowed = _allowance.get()
    return None if allowed is None else allowed.tokens


@contextmanager
def heavy() -> Iterator[None]:
    """Count the block's units against the request's allowance (see the module's text).

    Raises:
        OverBudget: a unit would take the work past the allowance.
    """
    allowed = _allowance.get()
    if allowed is None:
        yield
        return
    outermost = allowed.depth == 0
    if outermost:
        allowed.started = time.thread_time()
    allowed.depth += 1
    try:
        yield
    finally:
        allowed.depth -= 1
        if outermost:
            _charge_cpu(allowed)


def _charge_cpu(allowed: Allowance) -> None:
    """The outermost heavy block ended: charge the CPU it took beyond what its units were."""
    allowed.cpu_ms = allowed.cpu_now()
    allowed.started = None
    meter = _meter.get()
    price = allowed.prices.get("cpu", 0.0)
    due = allowed.cost() - allowed.spent - allowed.cpu_charged
    if meter is None or price <= 0 or due <= 0:
        return
    milliseconds = math.ceil(due / price)
    meter.add("cpu", milliseconds)
    allowed.cpu_charged += milliseconds * price
