"""A test run's own ``var/``: loaded with ``-p`` (see ``addopts``), before Django's settings.

``tmsite.settings`` reads ``TM_VAR_DIR`` once, when it is imported, and writes into that
directory at once (the signing key) and later (the rate-limit file, a SQLite database, static
files). pytest-django imports the settings before any conftest is loaded, so the directory is
chosen here, at plugin load: a fresh temporary one for each run, never the checkout's ``var/``
that ``make run`` serves from. The variable is in the environment, so xdist workers and every
subprocess a test starts without a ``TM_VAR_DIR`` of its own inherit it; the run that made the
directory removes it at the end. ``tests/conftest.py`` checks that the checkout's ``var/`` is
left as it was.
"""

from __future__ import annotations

import os
import shutil
import tempfile

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
