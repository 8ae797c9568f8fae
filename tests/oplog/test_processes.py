"""One budget for every worker process of a machine: real processes, no doubles.

Several Python processes spend from one ``FileStore`` at the same (frozen) instant: exactly the
burst is granted, however their requests interleave. Then gunicorn with two workers, each
request answered by whichever worker takes it: the caller still gets exactly its burst.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.oplog.servers import ROOT, gunicorn, json_lines, migrate, read, server_env

pytestmark = pytest.mark.spec("OP1")

SPENDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from tmsite.callers.buckets import FileStore, Policy

    path, start, attempts = Path(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
    store = FileStore(path)
    rule = Policy(burst=float(sys.argv[4]), refill=1.0)
    while time.time() < start:
        time.sleep(0.001)
    granted = sum(store.take("198.51.100.9", 1, 5_000_000.0, rule)[0] for _ in range(attempts))
    print(granted)
    """
)


def test_processes_sharing_a_file_store_grant_exactly_the_burst(tmp_path: Path) -> None:
    path = tmp_path / "buckets"
    start = time.time() + 1.5
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", SPENDER, str(path), str(start), "400", "700"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    granted = [int(p.communicate(timeout=60)[0]) for p in processes]
    assert sum(granted) == 700  # 1600 attempts, one bucket of 700


@pytest.mark.slow
def test_gunicorn_workers_share_one_budget(tmp_path: Path) -> None:
    env = server_env(
        tmp_path / "var",
        TM_RATE_BURST="20",
        TM_RATE_REFILL="0.001",
        TM_RATE_STORE="file",
        TM_LOG_FLUSH_ROWS="1",
    )
    migrate(env)
    log = tmp_path / "gunicorn.log"
    forwarded = {"X-Forwarded-For": "198.51.100.44"}
    results: list[tuple[int, str]] = []
    lines: list[dict[str, Any]] = []
    with gunicorn(env, workers=2, log=log) as base:

        def one(i: int) -> tuple[int, str]:
            reply = read(base, "tm://tinymachines/fs/docs/index.md", i, forwarded)
            body = reply.json()
            outcome = body["error"]["data"]["reason"] if "error" in body else "ok"
            return reply.status_code, outcome

        # Which worker takes a request is the kernel's choice: keep sending, 60 at a time, until
        # both workers have answered (or 600 requests have gone without that).
        with ThreadPoolExecutor(8) as pool:
            while len(results) < 600:
                results += pool.map(one, range(len(results), len(results) + 60))
                lines = _request_lines(log, len(results))
                if len({line["pid"] for line in lines}) == 2:
                    break
    assert len({line["pid"] for line in lines}) == 2, "both workers answered"
    sent = len(results)
    assert Counter(results) == {(200, "ok"): 20, (200, "rate-limited"): sent - 20}
    assert len(lines) == sent
    assert Counter(line["outcome"] for line in lines) == {"ok": 20, "rate-limited": sent - 20}


def _request_lines(log: Path, count: int) -> list[dict[str, Any]]:
    """The ``resources/read`` lines of the log, once all ``count`` are written (30 s at most)."""
    end = time.monotonic() + 30
    while True:
        lines = [line for line in json_lines(log) if line["method"] == "resources/read"]
        if len(lines) >= count or time.monotonic() > end:
            return lines
        time.sleep(0.05)
