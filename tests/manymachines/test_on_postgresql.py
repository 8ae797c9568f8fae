"""The tests that lean on the database, run again on PostgreSQL: the records and their loader
(upserts, corrections), the entity mount's queries, trails' index and their corrections, the
request log and its retention, the kind counters (``select_for_update``), server records and
their admin. SQLite is what every other test uses; the many-machine setup runs on PostgreSQL,
so these must hold there.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.oplog.servers import ROOT

pytestmark = pytest.mark.spec("OP5")

MODULES = [
    "tests/entities",
    "tests/entitymount",
    "tests/servers",
    "tests/trails",
    "tests/oplog/test_log.py",
    "tests/oplog/test_privacy.py",
    "tests/blocks/test_kinds_counted.py",
]


@pytest.mark.slow
def test_the_database_tests_pass_on_postgresql(database_url: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TM_", "PYTEST_XDIST"))}
    env.update(TM_DATABASE_URL=database_url, TM_VAR_DIR=str(tmp_path / "var"))
    vendor = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c",
         "from django.db import connection; print(connection.vendor)"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert vendor.stdout.split()[-1] == "postgresql"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-q", "-p", "no:cacheprovider",
         "-o", "addopts=--import-mode=importlib", *MODULES],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    tail = (run.stdout + run.stderr)[-6000:]
    assert run.returncode == 0, tail
    assert " passed" in tail and " failed" not in tail, tail
