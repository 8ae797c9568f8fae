"""Internal failures in the log: one line per kind of failure per interval, not one per request.

A failure's class is where it happened (``mcp resources/read``, ``rest GET resolve``, ``request
log``) and the exception's type. The first failure of a class is logged with its traceback
(``ERROR`` on ``tmsite.failures``); those that follow within ``INTERVAL`` seconds are only
counted; the first one after the interval logs one line, without a traceback, saying how many
there were since the last line. A class that stays quiet for a whole interval starts again: its
next failure brings its traceback. Counts left over when failures stop are written by
``summarize``, which the request log's background thread calls on each turn.

What answers the caller is the surface's business (a JSON-RPC ``-32603`` with the request's id,
a REST ``internal`` refusal with a 5xx status) and the request log row's (``outcome`` is
``internal``); this module only keeps the server's own log readable during an outage.

Spec: OP2.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

logger = logging.getLogger("tmsite.failures")

#: Seconds between two lines about one class of failure.
INTERVAL = 60.0
#: The request log's ``outcome`` of a request that failed inside the server.
INTERNAL = "internal"

#: The clock intervals are measured on; tests replace it.
clock: Callable[[], float] = time.monotonic


@dataclass
class _Class:
    since: float  # when the last line about this class was written
    last: float  # the latest failure
    count: int = 0  # failures since that line
    total: int = 0  # failures since the process started


_lock = threading.Lock()
_classes: dict[tuple[str, str], _Class] = {}


def _type_name(exc: BaseException) -> str:
    kind = type(exc)
    module = kind.__module__
    return kind.__qualname__ if module == "builtins" else f"{module}.{kind.__qualname__}"


def _text(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]


def report(where: str, exc: BaseException) -> None:
    """Note one internal failure at ``where``; log it when its class is due a line."""
    name = _type_name(exc)
    now = clock()
    with _lock:
        seen = _classes.get((where, name))
        if seen is None or now - seen.last >= INTERVAL:
            total = seen.total + 1 if seen is not None else 1
            _classes[(where, name)] = _Class(since=now, last=now, total=total)
            first, count, span = True, 1, 0.0
        else:
            seen.last = now
            seen.total += 1
            seen.count += 1
            if now - seen.since < INTERVAL:
                return
            first, count, span = False, seen.count, now - seen.since
            seen.since, seen.count = now, 0
    if first:
        logger.error(
            "internal failure in %s: %s: %s (further ones are counted, one line a minute)",
            where,
            name,
            _text(exc),
            exc_info=(type(exc), exc, exc.__traceback__),
        )
    else:
        logger.error(
            "internal failure in %s: %s: %d more in the last %.0f s; the latest: %s",
            where,
            name,
            count,
            span,
            _text(exc),
        )


def summarize() -> None:
    """Write the line of every class whose interval is over and whose count was not told."""
    now = clock()
    due: list[tuple[str, str, int, float]] = []
    with _lock:
        for (where, name), seen in _classes.items():
            if seen.count and now - seen.since >= INTERVAL:
                due.append((where, name, seen.count, now - seen.since))
                seen.since, seen.count = now, 0
    for where, name, count, span in due:
        logger.error(
            "internal failure in %s: %s: %d more in the last %.0f s, none since",
            where,
            name,
            count,
            span,
        )


def totals() -> dict[str, int]:
    """Failures since the process started, by class (``where: type``)."""
    with _lock:
        return {f"{where}: {name}": seen.total for (where, name), seen in _classes.items()}


def reset() -> None:
    """Forget every class (tests)."""
    with _lock:
        _classes.clear()
