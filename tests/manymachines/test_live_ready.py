"""Liveness apart from readiness, against a real PostgreSQL outage.

A machine of the default server (two workers) on PostgreSQL is probed every 50 ms on both
routes while its database refuses every connection and drops the ones it has (what a stopped
server does to a client; ``test_database_blip.outage``, this test's database alone). ``live``
answers 200 throughout; ``ready`` turns 503 within a second and back to 200 within a second
of the database taking connections again, on every request thread: a thread's kept
connection the database dropped is not taken for the database being down.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.manymachines.test_database_blip import outage, serving
from tests.oplog.servers import migrate, server_env

pytestmark = pytest.mark.spec("OBS3")

OUTAGE_SECONDS = 4.0


@pytest.mark.slow
def test_ready_follows_the_database_and_live_does_not(database_url: str, tmp_path: Path) -> None:
    env = server_env(tmp_path / "var", TM_DATABASE_URL=database_url)
    migrate(env)
    seen: list[tuple[float, int, int]] = []  # (time, live status, ready status)
    stop = threading.Event()

    def probe(base: str) -> None:
        with httpx.Client(timeout=5) as client:
            while not stop.is_set():
                at = time.monotonic()
                live = client.get(f"{base}/api/v1/live").status_code
                ready = client.get(f"{base}/api/v1/ready").status_code
                seen.append((at, live, ready))
                time.sleep(0.05)

    def many(base: str) -> list[int]:
        """Readiness asked 64 times, 16 at once: every request thread of both workers."""
        with ThreadPoolExecutor(16) as pool:
            return list(
                pool.map(lambda _: httpx.get(f"{base}/api/v1/ready", timeout=10).status_code,
                         range(64))
            )  # fmt: skip

    with serving(env, tmp_path / "serve.log") as base:
        assert set(many(base)) == {200}  # each thread holds a connection (CONN_MAX_AGE)
        prober = threading.Thread(target=probe, args=(base,))
        prober.start()
        time.sleep(0.5)
        went = time.monotonic()
        with outage(database_url, OUTAGE_SECONDS):
            pass
        back = time.monotonic()
        time.sleep(2.0)
        stop.set()
        prober.join(timeout=30)
        after = many(base)
        health = httpx.get(f"{base}/api/v1/health", timeout=10).json()

    assert all(live == 200 for _, live, _ in seen), "live never depends on the database"
    assert all(ready == 200 for at, _, ready in seen if at < went)
    first_503 = min(at for at, _, ready in seen if ready == 503)
    assert first_503 - went < 1.0, f"ready turned 503 after {first_503 - went:.2f} s"
    assert all(ready == 503 for at, _, ready in seen if went + 1.0 <= at < back - 0.2)
    first_back = min(at for at, _, ready in seen if at >= back and ready == 200)
    assert first_back - back < 1.0, f"ready came back after {first_back - back:.2f} s"
    assert all(ready == 200 for at, _, ready in seen if at >= first_back)
    assert set(after) == {200}, "a connection the outage dropped is not the database down"
    assert health["status"] == "ok", health
