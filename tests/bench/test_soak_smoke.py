"""The soak script runs end to end with tiny counts: every phase it can provoke here, nothing
lost, no 5xx, and the slow connections met the server's limits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spec("OP5"), pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "soak.py"


def test_the_soak_runs_and_loses_nothing() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--calm",
            "0.5",
            "--fault",
            "1",
            "--slow-seconds",
            "4.5",
            "--slow",
            "8",
            "--clients",
            "2",
            "--workers",
            "1",
            "--threads",
            "2",
            "--database-url",
            "",
            "--json",
        ],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != "TM_TEST_DATABASE_URL"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    ran = [row["phase"] for row in report["phases"]]
    assert ran[:2] == ["calm", "slow"] and ran[-1] == "after"
    assert set(ran) | set(report["skipped"]) >= {"redis-frozen", "redis-stopped", "drain"}
    assert "database-out" in report["skipped"]
    for row in report["phases"]:
        assert row["sent"] > 0 and row["5xx"] == 0, row
        assert row["answered"] == row["sent"] == row["results"], row
        assert row["p50_ms"] <= row["p99_ms"]
    assert report["rows"] == report["answered"] > 0 and report["rows_lost"] == 0
    slow = report["slow"]
    assert slow["connections"] == 8 and slow["open_max"] == 8
    assert slow["met"].get("body: answered 408", 0) >= 4  # each cut at the rate's grace (3 s)
