"""The request log's purge bench runs end to end on PostgreSQL with tiny counts: both sides take
out the same rows, one by ``DELETE``, the other by dropping whole days."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.services import missing

pytestmark = [pytest.mark.spec("OBS5"), pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "log_partitions.py"


def test_the_purge_bench_runs_on_postgresql(tmp_path: Path) -> None:
    url = os.environ.get("TM_TEST_DATABASE_URL")
    if not url:
        missing("no PostgreSQL: TM_TEST_DATABASE_URL is not set", "source .ci/services.sh as root")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--database-url", url, "--rows-per-day", "240",
         "--expired-days", "3", "--live-days", "2", "--insert-rows", "500",
         "--var", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines() if line}
    assert rows["deleted"] == ["720", "0"]
    assert rows["dropped"] == ["0", "3"]
    assert rows["rows_left"][0] == rows["rows_left"][1]
    assert "purge: DELETE " in done.stdout
