"""A test run's own ``var/``: loaded with ``-p`` (see ``addopts``), before Django's settings.

``tmsite.settings`` reads ``TM_VAR_DIR`` once, when it is imported, and writes into that
directory at once (the signing key) and later (the rate-limit file, a SQLite database, static
files). pytest-django imports the settings before any conftest is loaded, so the directory is
chosen here, at plugin load: a fresh temporary one for each run, never the checkout's ``var/``
that ``make run`` serves from. The variable is in the environment, so xdist workers and every
subprocess a test starts without a ``TM_VAR_DIR`` of its own inherit it; the run that made the
directory removes it at the end. The same plugin checks
that the run leaves the checkout's ``var/`` as it was, and names who wrote it:

* each process of the run (the controller, each xdist worker) watches its own writes there with
  an audit hook; such a write fails the run, naming the test and the file;
* the directory is hashed when the run starts and again when it ends. ``make run`` may serve
  from it meanwhile: every process of the box holds a shared lock on ``var/in-use.lock``
  (``tmsite.settings``), so ``/proc/locks`` names them. A change while one of them holds it is
  theirs: the run says so in one line and is not failed. A change with no such process is the
  run's (a subprocess it started wrote there): the run fails, naming what changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
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


#: The audit events that write (or remove) a path, and which of their arguments are paths.
_WRITING_EVENTS = {
    "os.mkdir": (0,),
    "os.remove": (0,),
    "os.rmdir": (0,),
    "os.rename": (0, 1),
    "os.truncate": (0,),
    "os.symlink": (1,),
    "os.link": (1,),
    "shutil.rmtree": (0,),
    "sqlite3.connect": (0,),
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
#: What this process of the run wrote into the guarded directory: (test, event, path).
_written: list[tuple[str, str, str]] = []
_current_test = ""
_hooked = False


def _inside_guarded(path: object) -> str | None:
    """``path`` relative to the guarded directory when it is inside it, else None."""
    if not isinstance(path, str | bytes | os.PathLike):
        return None
    absolute = os.path.abspath(os.fsdecode(path))
    guarded = os.fspath(GUARDED)
    if absolute == guarded or absolute.startswith(guarded + os.sep):
        return os.path.relpath(absolute, guarded)
    return None


def _audit(event: str, args: tuple[object, ...]) -> None:
    try:
        for path in _written_paths(event, args):
            inside = _inside_guarded(path)
            if inside is not None:
                _written.append((_current_test or "(outside any test)", event, inside))
    except Exception:  # a hook that raises would fail the very call it watches
        pass


def _written_paths(event: str, args: tuple[object, ...]) -> list[object]:
    """The paths an audit event writes, when it writes any."""
    if event == "open":
        mode = args[1] if len(args) > 1 else None
        flags = args[2] if len(args) > 2 else None
        writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & _WRITE_FLAGS
        )
        return [args[0]] if writes and args else []
    return [args[i] for i in _WRITING_EVENTS.get(event, ()) if i < len(args)]


#: Where an xdist worker leaves what it wrote, for the controller: one directory per run.
_REPORTS = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    global _hooked
    if not _hooked:  # an audit hook cannot be removed: one per process
        sys.addaudithook(_audit)
        _hooked = True
    worker = getattr(config, "workerinput", None)
    if worker is not None:
        config.stash[_REPORTS] = Path(worker["tm_var_guard_reports"])
    else:
        config.stash[_REPORTS] = Path(tempfile.mkdtemp(prefix="tmsite-var-guard-"))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    node.workerinput["tm_var_guard_reports"] = str(node.config.stash[_REPORTS])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> object:
    global _current_test
    _current_test = item.nodeid
    try:
        return (yield)
    finally:
        _current_test = ""


def _writes_of_the_run(reports: Path) -> list[tuple[str, str, str]]:
    """This process's writes and those its xdist workers reported (the reports then removed)."""
    found = list(_written)
    for report in sorted(reports.glob("*.json")):
        found += [(test, event, path) for test, event, path in json.loads(report.read_text())]
    shutil.rmtree(reports, ignore_errors=True)
    return found


def users_of(directory: Path) -> dict[int, str]:
    """The processes that hold ``directory``'s ``in-use.lock`` (``tmsite.settings``), by pid.

    Read from ``/proc/locks``; empty where there is none (another system, no such file).
    """
    try:
        info = (directory / "in-use.lock").stat()
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return {}
    device = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    users = {}
    for line in lines:
        fields = line.split()
        if "->" in fields or len(fields) < 6 or fields[1] != "FLOCK" or fields[5] != device:
            continue
        pid = int(fields[4])
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").strip()
        except OSError:
            command = b"?"
        users[pid] = command.decode(errors="replace")[:100]
    return users


_USERS = pytest.StashKey[dict[int, str]]()


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
    session.config.stash[_USERS] = users_of(GUARDED)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    reports = session.config.stash[_REPORTS]
    if hasattr(session.config, "workerinput"):
        if _written:  # the controller reads it in its own sessionfinish, after the workers'
            (reports / f"{os.getpid()}.json").write_text(json.dumps(_written))
        return
    before = session.config.stash.get(_SNAPSHOT, None)
    if before is None:
        shutil.rmtree(reports, ignore_errors=True)
        return
    written = _writes_of_the_run(reports)
    changed = changes(before, snapshot(GUARDED))
    users = {**session.config.stash.get(_USERS, {}), **users_of(GUARDED)}
    if written:
        lines = [f"the run wrote into {GUARDED}:"]
        lines += [f"  {path} ({event}) by {test}" for test, event, path in dict.fromkeys(written)]
        lines += [f"  {line}" for line in changed]
        _say(session, "the checkout's var/ was written", lines, failed=True)
    elif changed and users:
        serving = "; ".join(f"pid {pid} ({command})" for pid, command in sorted(users.items()))
        lines = [
            f"{GUARDED} changed during the run: {', '.join(changed)}; written by the box "
            f"serving from it, not by the run: {serving}"
        ]
        _say(session, "var/ is in use", lines, failed=False)
    elif changed:
        lines = [f"the run changed {GUARDED}:", *(f"  {line}" for line in changed)]
        lines.append("  (no process of the box held it: a process the run started wrote there)")
        _say(session, "the checkout's var/ was written", lines, failed=True)


def _say(session: pytest.Session, title: str, lines: list[str], failed: bool) -> None:
    """Print ``lines`` at the end of the run; fail the run when ``failed``."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.line("")
        reporter.write_sep("!" if failed else "-", title)
        for line in lines:
            reporter.write_line(line, red=failed)
    else:
        print("\n".join(lines))
    if failed and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
