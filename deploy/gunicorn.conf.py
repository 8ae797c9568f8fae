"""gunicorn settings for tmsite (``gunicorn tmsite.wsgi --config deploy/gunicorn.conf.py``).

Every value can be changed with the environment (``GUNICORN_*`` below) or on the command line,
which wins over this file. No access log: nginx keeps none either, so no address is written
anywhere; each request's JSON line (``tmsite.requests``, on stderr) says what was asked, how it
ended and how long it took.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("GUNICORN_WORKERS", "4"))
threads = int(os.environ.get("GUNICORN_THREADS", "4"))
worker_class = "gthread" if threads > 1 else "sync"
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "60"))
graceful_timeout = 20
keepalive = 5
# Restart a worker now and then, spread out, so none grows without bound.
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "20000"))
max_requests_jitter = max_requests // 10
accesslog = None
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "warning")
# The app is loaded in each worker: database connections, the request-log buffer and its
# flusher thread belong to one process.
preload_app = False


def on_starting(server: Any) -> None:
    """Run the start-up checks (``manage.py check``) before any worker starts; stop on an error.

    They run in a child process, so the master loads nothing of the app (each worker does).
    A failing check (``tm.E002`` for a ``TM_DATABASE_URL`` that cannot be used, …) ends the
    start with its message and exit status 1, as ``manage.py check`` and ``runserver`` do.
    """
    env = dict(os.environ)
    env.setdefault("DJANGO_SETTINGS_MODULE", "tmsite.settings")
    if server.cfg.pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(
            [server.cfg.pythonpath, *filter(None, [env.get("PYTHONPATH")])]
        )
    done = subprocess.run(
        [sys.executable, "-m", "django", "check", "--fail-level", "ERROR"],
        cwd=server.cfg.chdir,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError("the start-up checks failed:\n" + (done.stderr or done.stdout).strip())


def post_fork(server: Any, worker: Any) -> None:
    """Tell the worker how many threads it has (the http mount keeps one free of self-fetches)."""
    os.environ["TM_WORKER_THREADS"] = str(worker.cfg.threads)


def worker_exit(server: Any, worker: Any) -> None:
    """Write the worker's buffered request-log rows before it goes."""
    from tmsite.oplog import recorder

    recorder.flush_quietly()
