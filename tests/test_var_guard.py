"""The check in ``tests/own_var.py`` that a run leaves the checkout's ``var/`` as it was.

A pytest of its own runs ``var_guard_probe.py`` with the guard pointed at a temporary directory
(``TM_TEST_GUARDED_VAR``): a test that writes there fails the run (under xdist too) with a line
naming the file and the test; a subprocess that writes there fails it naming the file; a run
that writes nothing passes. A process of the box using that directory (it imports
``tmsite.settings`` with ``TM_VAR_DIR`` there, as ``make run`` does) and writing into it all
along does not fail a run beside it: the run names it; a test's own write still fails the run.

Spec: OP5.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
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
    assert f"the run wrote into {guarded}:" in done.stdout
    assert f"  x (open) by {PROBE}::test_writes_into_the_guarded_directory" in done.stdout
    assert "  x (added)" in done.stdout
    assert (guarded / "x").exists()

    (guarded / "x").write_text("changed before the run\n")
    done = run(guarded, "-p", "no:xdist")
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout + done.stderr
    assert f"  x (open) by {PROBE}::test_writes_into_the_guarded_directory" in done.stdout
    assert "  x (changed)" in done.stdout


@pytest.mark.slow
def test_a_run_that_leaves_var_alone_passes(tmp_path: Path) -> None:
    guarded = tmp_path / "var"
    guarded.mkdir()
    (guarded / "kept").write_text("as it was\n")
    done = run(guarded, "-p", "no:xdist", "-k", "nothing")
    assert done.returncode == pytest.ExitCode.OK, done.stdout + done.stderr
    assert "the run changed" not in done.stdout


@pytest.mark.slow
def test_a_subprocess_that_writes_var_fails_the_run(tmp_path: Path) -> None:
    guarded = tmp_path / "var"
    guarded.mkdir()
    done = run(guarded, "-p", "no:xdist", "-k", "subprocess")
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout + done.stderr
    assert f"the run changed {guarded}:" in done.stdout
    assert "  y (added)" in done.stdout
    assert "no process of the box held it" in done.stdout


#: A process of the box: tmsite's settings with its var/ in the guarded directory, writing
#: there every 20 ms (as make run's server writes its request log) until it is stopped.
BOX = """
import os, time, django
os.environ["DJANGO_SETTINGS_MODULE"] = "tmsite.settings"
django.setup()
from django.conf import settings
count = 0
while True:
    count += 1
    (settings.VAR_DIR / "log").write_text(str(count))
    time.sleep(0.02)
"""


@contextmanager
def box_writing(guarded: Path) -> Iterator[subprocess.Popen[bytes]]:
    """The box writing into ``guarded`` while the block runs."""
    env = {**os.environ, "TM_VAR_DIR": str(guarded), "PYTHONPATH": str(ROOT)}
    for name in ("TM_TEST_RUN_VAR_DIR", "TM_SECRET_KEY"):
        env.pop(name, None)
    box = subprocess.Popen([sys.executable, "-c", BOX], cwd=ROOT, env=env)
    try:
        deadline = time.monotonic() + 60
        while not (guarded / "log").exists() and time.monotonic() < deadline:
            assert box.poll() is None, "the box stopped"
            time.sleep(0.05)
        yield box
    finally:
        box.kill()
        box.wait(timeout=30)


@pytest.mark.slow
def test_a_box_serving_from_var_is_named_not_blamed(tmp_path: Path) -> None:
    guarded = tmp_path / "var"
    guarded.mkdir()
    with box_writing(guarded) as box:
        done = run(guarded, "-n", "2", "--dist", "load", "-k", "until_the_box_writes")
        assert done.returncode == pytest.ExitCode.OK, done.stdout + done.stderr
        said = f"{guarded} changed during the run: log (changed); written by the box serving"
        assert said in done.stdout
        assert f"pid {box.pid} (" in done.stdout

        done = run(guarded, "-n", "2", "--dist", "load", "-k", "writes_into")
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout + done.stderr
    assert f"  x (open) by {PROBE}::test_writes_into_the_guarded_directory" in done.stdout
