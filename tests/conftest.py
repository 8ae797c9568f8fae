"""Fixtures every test gets, and the checks every run makes.

* The checkout's ``var/`` (what ``make run`` serves from) is hashed when the run starts and again
  when it ends; a run that changed it fails, naming what changed. Tests write into their own
  temporary directories only; ``tests/own_var.py`` gives the run its own ``TM_VAR_DIR``.
* ``TM_TEST_REVERSE=1`` runs the collected tests in reverse order, to show that no test leans
  on what an earlier one left behind.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.spec_marks import check_spec_marks
from tmsite.kinds.counter import COUNTER
from tmsite.oplog import recorder

ROOT = Path(__file__).resolve().parents[1]
#: The directory the run must leave as it found it; another only for the guard's own test.
GUARDED = Path(os.environ.get("TM_TEST_GUARDED_VAR", ROOT / "var"))
_SNAPSHOT = pytest.StashKey[dict[str, tuple[int, str] | None]]()


def snapshot(directory: Path) -> dict[str, tuple[int, str] | None]:
    """Every entry under ``directory``: a file as (size, SHA-256), a directory as ``None``.

    An absent directory is the empty snapshot, so creating it (even empty) is a change.
    """
    if not directory.is_dir():
        return {} if not directory.exists() else {".": (-1, "not a directory")}
    entries: dict[str, tuple[int, str] | None] = {".": None}
    for path in sorted(directory.rglob("*")):
        name = path.relative_to(directory).as_posix()
        if path.is_file() and not path.is_symlink():
            entries[name] = (path.stat().st_size, hashlib.sha256(path.read_bytes()).hexdigest())
        else:
            entries[name] = None if path.is_dir() else (-1, os.readlink(path))
    return entries


def changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What differs, one line per entry: ``added``, ``removed`` or ``changed``."""
    lines = []
    for name in sorted(before.keys() | after.keys()):
        if name not in before:
            lines.append(f"{name} (added)")
        elif name not in after:
            lines.append(f"{name} (removed)")
        elif before[name] != after[name]:
            lines.append(f"{name} (changed)")
    return lines


def pytest_sessionstart(session: pytest.Session) -> None:
    if hasattr(session.config, "workerinput"):
        return  # xdist: the controller checks, once for the whole run
    from django.conf import settings

    var_dir = Path(settings.VAR_DIR).resolve()
    if var_dir == (ROOT / "var").resolve():
        raise pytest.UsageError(
            "the tests would write into the checkout's var/: load tests/own_var.py "
            "(-p tests.own_var, as addopts does) or set TM_VAR_DIR to a temporary directory"
        )
    session.config.stash[_SNAPSHOT] = snapshot(GUARDED)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    before = session.config.stash.get(_SNAPSHOT, None)
    if before is None:
        return
    changed = changes(before, snapshot(GUARDED))
    if not changed:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    lines = [f"the run changed {GUARDED}:", *(f"  {line}" for line in changed)]
    if reporter is not None:
        reporter.line("")
        reporter.write_sep("!", "the checkout's var/ was written")
        for line in lines:
            reporter.write_line(line, red=True)
    else:
        print("\n".join(lines))
    if session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    check_spec_marks(items)
    if os.environ.get("TM_TEST_REVERSE") == "1":
        items.reverse()


def _forget_what_the_process_buffered() -> None:
    with recorder._lock:
        recorder._buffer.clear()
    COUNTER.reset()


@pytest.fixture(autouse=True)
def batched_writes_stay_in_their_test(settings: Any) -> Iterator[None]:
    """What a test buffers for the database (request-log rows, kind counts) lands in that test.

    Both are kept per process and written in batches, so without this one test's leftovers
    would be written during a later test — after the first test's database was rolled back or
    truncated, and from the request log's background thread, beside the later test's own
    writes. So each test starts and ends with nothing buffered, and the request log's
    age-based flush is off (rows go when a batch is full or a test flushes); a test of the
    timing sets its own value.
    """
    settings.TM_LOG_FLUSH_SECONDS = 3600
    _forget_what_the_process_buffered()
    yield
    _forget_what_the_process_buffered()
