"""Run only by ``test_var_guard.py``, in a pytest of its own: one test writes into the directory
the run guards (``TM_TEST_GUARDED_VAR``), one has a subprocess write there, one writes nothing.
Not collected by ``make test`` (the name does not start with ``test_``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


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
