"""Run only by ``test_var_guard.py`` and ``setup/test_make_run.py``, in a pytest of its own: one
test writes into the directory the run guards (``TM_TEST_GUARDED_VAR``), one has a subprocess
write there, one writes nothing, one waits until the box serving from it writes there.
Not collected by ``make test`` (the name does not start with ``test_``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.own_var import snapshot


def test_writes_into_the_guarded_directory() -> None:
    guarded = Path(os.environ["TM_TEST_GUARDED_VAR"])
    guarded.mkdir(exist_ok=True)
    (guarded / "x").write_text("written by a test\n")


def test_a_subprocess_writes_into_the_guarded_directory() -> None:
    guarded = Path(os.environ["TM_TEST_GUARDED_VAR"])
    code = f"open({str(guarded / 'y')!r}, 'w').write('written by a subprocess')"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_writes_nothing() -> None:
    assert os.environ["TM_TEST_GUARDED_VAR"]


def test_waits_until_the_box_writes() -> None:
    """Writes nothing itself: the run lasts until another process changed the directory."""
    guarded = Path(os.environ["TM_TEST_GUARDED_VAR"])
    before = snapshot(guarded)
    deadline = time.monotonic() + 60
    while snapshot(guarded) == before:
        assert time.monotonic() < deadline, "nothing wrote into the guarded directory in 60 s"
        time.sleep(0.05)
