"""The official MCP conformance suite against the default server (``python -m tmsite.serve``,
the one that holds subscription streams, so the listen checks run), both requirement sets.

``conformance/run.py`` starts the server, runs ``@modelcontextprotocol/conformance`` with
``--requirements 2025-11-25`` and ``--requirements 2026-07-28`` and the fixture-only baseline;
its exit status is 0 only when every failure is a baselined one and no baselined one passes.
The server it starts migrates and serves a database in the test's own directory. Without Node.js
and npm the test is skipped (failed under ``CI=true``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.services import missing

pytestmark = pytest.mark.spec("T12", "T7")

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_conformance_baseline_holds(tmp_path: Path) -> None:
    for program in ("node", "npm"):
        if shutil.which(program) is None:
            missing(f"{program} is not on PATH", "apt-get install nodejs npm")
    var_dir = tmp_path / "var"
    done = subprocess.run(
        [
            sys.executable,
            "conformance/run.py",
            "--output-dir",
            str(tmp_path / "checks"),
            "--var-dir",
            str(var_dir),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "2025-11-25: baseline holds" in done.stdout
    assert "2026-07-28: baseline holds" in done.stdout
    assert (var_dir / "tmsite.sqlite3").is_file()  # what it served was its own
