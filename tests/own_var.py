"""A test run's own ``var/``: loaded with ``-p`` (see ``addopts``), before Django's settings.

``tmsite.settings`` reads ``TM_VAR_DIR`` once, when it is imported, and writes into that
directory at once (the signing key) and later (the rate-limit file, a SQLite database, static
files). pytest-django imports the settings before any conftest is loaded, so the directory is
chosen here, at plugin load: a fresh temporary one for each run, never the checkout's ``var/``
that ``make run`` serves from. The variable is in the environment, so xdist workers and every
subprocess a test starts without a ``TM_VAR_DIR`` of its own inherit it; the run that made the
directory removes it at the end. The same plugin checks
that the run leaves the checkout's ``var/`` as it was: hashed when the run starts and again when
it ends, a change fails the run, naming what changed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

#: Set to the directory a run made, so its workers (and runs started inside it) reuse it.
OWNER = "TM_TEST_RUN_VAR_DIR"

_made: str | None = None
if os.environ.get(OWNER) and os.environ.get("TM_VAR_DIR") == os.environ[OWNER]:
    pass
else:
    _made = tempfile.mkdtemp(prefix="tmsite-test-var-")
    os.environ["TM_VAR_DIR"] = os.environ[OWNER] = _made


def pytest_unconfigure(config: pytest.Config) -> None:
    if _made is not None and not hasattr(config, "workerinput"):
        shutil.rmtree(_made, ignore_errors=True)


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
