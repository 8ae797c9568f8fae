"""``/metrics`` under gunicorn with the deploy config: every worker's counts, whichever answers.

gunicorn started as ``deploy/gunicorn.conf.py`` starts it, two workers of one thread each;
each request goes on a connection of its own, so both workers take some. Every scrape, whichever
worker answers it, reads back exactly the requests made. A worker killed is marked dead by the
master (``child_exit``): what it counted stays, its live gauges go.
"""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.oplog.servers import gunicorn, migrate, server_env

pytestmark = [pytest.mark.spec("OBS1"), pytest.mark.slow]

HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}


def pings(url: str) -> float:
    """The ``ping`` operations one scrape reads (on a connection of its own)."""
    with httpx.Client(timeout=30) as client:
        answer = client.get(f"{url}/metrics")
    assert answer.status_code == 200, answer.text
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            if (
                sample.name == "mcp_server_operation_duration_seconds_count"
                and sample.labels.get("mcp_method_name") == "ping"
            ):
                return sample.value
    return 0.0


def ping(url: str, rid: int) -> None:
    with httpx.Client(timeout=30) as client:
        body = {"jsonrpc": "2.0", "id": rid, "method": "ping"}
        answer = client.post(f"{url}/api/mcp", json=body, headers=HEADERS)
    assert answer.json()["result"] == {}


def directory(var: Path) -> Path:
    [found] = (var / "metrics").iterdir()
    return found


def pids(var: Path, pattern: str) -> set[int]:
    return {int(path.stem.rpartition("_")[2]) for path in directory(var).glob(pattern)}


def test_every_scrape_sums_every_worker(tmp_path: Path) -> None:
    var = tmp_path / "var"
    env = server_env(var)
    migrate(env)
    with gunicorn(env, 2, tmp_path / "gunicorn.log") as url:
        sent = 0
        # which worker accepts a connection is the kernel's choice: pings two at a time, until
        # both workers have taken some (one busy, the other accepts), 24 at least
        with ThreadPoolExecutor(2) as pool:
            while sent < 24 or (len(pids(var, "histogram_*.db")) < 2 and sent < 400):
                list(pool.map(ping, [url, url], [sent, sent + 1]))
                sent += 2
        assert [pings(url) for _ in range(8)] == [float(sent)] * 8
        counted = pids(var, "histogram_*.db")
        assert len(counted) == 2, "both workers took requests"

        # a worker killed: the master marks it dead; its counts stay, its live gauges go
        victim = min(counted)
        deadline = time.monotonic() + 10
        while victim not in pids(var, "gauge_livesum_*.db") and time.monotonic() < deadline:
            time.sleep(0.1)  # its sampler writes the live gauges within a second
        assert victim in pids(var, "gauge_livesum_*.db")
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while victim in pids(var, "gauge_livesum_*.db") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert victim not in pids(var, "gauge_livesum_*.db")
        ping(url, 99)
        assert [pings(url) for _ in range(4)] == [float(sent + 1)] * 4
