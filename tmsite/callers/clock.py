"""The clock the rate limit reads: wall-clock seconds, so processes and machines agree.

Tests pass a ``FakeClock`` instead of sleeping.
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: Anything called for the current time in seconds since the epoch.
Clock = Callable[[], float]


def system_clock() -> float:
    """Wall-clock time: comparable across the workers and machines that share one bucket."""
    return time.time()


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        """The time it was last set to."""
        return self.now

    def advance(self, seconds: float) -> None:
        """Move the time on by ``seconds`` (buckets refill as if that much had passed)."""
        self.now += seconds
