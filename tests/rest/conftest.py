"""Fixtures for the REST routes: the namespace over a real checkout, probes kept in the process.

The checkout and the process namespace are the namespace tests' own fixtures; the fake clock and
the small rate limit are the operating tests' own. Only the probes are new here: the process-wide
prober is swapped for one whose measuring function answers without a network, at an instant the
test chooses, so a REST answer and a tool answer can be compared field for field.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest

from tests.namespace.conftest import checkout, process_namespace  # noqa: F401  (fixtures)
from tests.oplog.conftest import clock, small_limit  # noqa: F401  (fixtures)
from tmsite import pieces, probes
from tmsite.probes import Measurement, Prober


@pytest.fixture
def fake_probes(monkeypatch: pytest.MonkeyPatch, settings: Any) -> Callable[[datetime], list[str]]:
    """Call with an instant; every probe from then on is measured at it. Returns the URLs probed.

    Hosted pieces answer 200 ``up`` with a fixed latency; pieces with no URL are ``not_probed``
    at the same instant. Measurements are cached as usual (for an hour), so the returned list
    shows how often each URL was really measured.
    """
    settings.TM_PROBE_CACHE_SECONDS = 3600
    pieces.clear_cache()

    def start(instant: datetime) -> list[str]:
        measured: list[str] = []

        def measure(url: str, timeout: float) -> Measurement:
            measured.append(url)
            return Measurement(
                url=url,
                reachability="up",
                http_status=200,
                latency_ms=12.5,
                detail=None,
                checked_at=instant,
            )

        monkeypatch.setattr(probes, "_default", Prober(measure=measure))
        monkeypatch.setattr(probes, "_now", lambda: instant)
        return measured

    return start
