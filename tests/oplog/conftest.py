"""Fixtures for the operating tests: a fake clock for the buckets, a small policy."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tmsite.callers import buckets
from tmsite.callers.clock import FakeClock

#: A caller as a proxy forwards it (documentation range, RFC 5737).
CALLER = "203.0.113.7"


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock(1_800_000_000.0)
    monkeypatch.setattr(buckets, "clock", fake)
    return fake


@pytest.fixture
def small_limit(settings: Any, tmp_path: Any, clock: FakeClock) -> Iterator[FakeClock]:
    """Burst 10, refill 1 a second, this process's memory, the fake clock."""
    settings.TM_RATE_LIMIT = True
    settings.TM_RATE_STORE = "memory"
    settings.TM_RATE_BURST = 10
    settings.TM_RATE_REFILL = 1
    buckets._stores.clear()
    yield clock
    buckets._stores.clear()
