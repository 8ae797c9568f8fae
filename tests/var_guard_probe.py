"""Run only by ``test_var_guard.py``, in a pytest of its own: one test writes into the directory
the run guards (``TM_TEST_GUARDED_VAR``), one writes nothing. Not collected by ``make test``
(the name does not start with ``test_``)."""

from __future__ import annotations

import os
from pathlib import Path


def test_writes_into_the_guarded_directory() -> None:
    guarded = Path(os.environ["TM_TEST_GUARDED_VAR"])
    guarded.mkdir(exist_ok=True)
    (guarded / "x").write_text("written by a test\n")


def test_writes_nothing() -> None:
    assert os.environ["TM_TEST_GUARDED_VAR"]
