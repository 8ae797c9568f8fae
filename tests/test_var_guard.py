"""The check in ``tests/own_var.py`` that a run leaves the checkout's ``var/`` as it was.

A pytest of its own runs ``var_guard_probe.py`` with the guard pointed at a temporary directory
(``TM_TEST_GUARDED_VAR``): a test that writes there fails the run (under xdist, where only the
controller checks) with a line naming the file; a run that writes nothing passes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spec("OP5")

ROOT = Path(__file__).resolve().parents[1]
PROBE = "tests/var_guard_probe.py"


def run(guarded: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TM_TEST_GUARDED_VAR": str(guarded), "PYTHONPATH": str(ROOT)}
    env.pop("TM_TEST_REVERSE", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", PROBE, "-p", "no:randomly", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.slow
def test_a_run_that_writes_var_fails_and_names_the_file(tmp_path: Path) -> None:
    guarded = tmp_path / "var"  # absent: creating it is a change too
    done = run(guarded, "-n", "2", "--dist", "load")
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout + done.stderr
    assert f"the run changed {guarded}:" in done.stdout
    assert "  x (added)" in done.stdout
    assert (guarded / "x").exists()

    (guarded / "x").write_text("changed before the run\n")
    done = run(guarded, "-p", "no:xdist")
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout + done.stderr
    assert "  x (changed)" in done.stdout


@pytest.mark.slow
def test_a_run_that_leaves_var_alone_passes(tmp_path: Path) -> None:
    guarded = tmp_path / "var"
    guarded.mkdir()
    (guarded / "kept").write_text("as it was\n")
    done = run(guarded, "-p", "no:xdist", "-k", "nothing")
    assert done.returncode == pytest.ExitCode.OK, done.stdout + done.stderr
    assert "the run changed" not in done.stdout
