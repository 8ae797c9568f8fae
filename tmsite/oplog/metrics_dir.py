"""Where a server's worker processes count their metrics: one directory per server start.

The process that starts the workers (``python -m tmsite.serve``'s launcher, gunicorn's master)
makes ``var/metrics/<its pid>/`` empty, sets ``PROMETHEUS_MULTIPROC_DIR`` to it before any
worker starts, and removes the directories of starts no longer running. Only the standard
library is imported here: gunicorn's master reads this from its config and loads nothing of
the app.

Spec: OBS1.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"


def metrics_directory(pid: int) -> Path:
    """The empty directory the workers of the server ``pid`` started count their metrics in.

    Under ``TM_VAR_DIR`` (``var/`` unless set, as ``tmsite.settings`` has it); the directories
    of servers that are no longer running go.
    """
    var = Path(os.environ.get("TM_VAR_DIR") or Path(__file__).resolve().parents[2] / "var")
    parent = var / "metrics"
    parent.mkdir(parents=True, exist_ok=True)
    for old in parent.iterdir():
        if old.name.isdigit() and int(old.name) != pid and not running(int(old.name)):
            shutil.rmtree(old, ignore_errors=True)
    mine = parent / str(pid)
    shutil.rmtree(mine, ignore_errors=True)
    mine.mkdir()
    return mine


def count_workers_here(pid: int) -> Path:
    """Make :func:`metrics_directory` for server ``pid`` the one its workers count in."""
    mine = metrics_directory(pid)
    os.environ[MULTIPROCESS_ENV] = str(mine)
    return mine


def running(pid: int) -> bool:
    """Whether process ``pid`` still runs (one of another user's counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
