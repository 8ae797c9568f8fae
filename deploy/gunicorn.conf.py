"""gunicorn settings for tmsite (``gunicorn tmsite.wsgi --config deploy/gunicorn.conf.py``).

Every value can be changed with the environment (``GUNICORN_*`` below) or on the command line,
which wins over this file. No access log: nginx keeps none either, so no address is written
anywhere; each request's JSON line (``tmsite.requests``, on stderr) says what was asked, how it
ended and how long it took, and gunicorn's own lines lose the caller's address
(``logger_class``).

Stopping (SIGTERM, or a rolling restart: see deploy/README.md): each worker stops accepting at
once, finishes the requests it has (``graceful_timeout``), answers a request that arrives on a
kept-alive connection meanwhile with ``Connection: close``, and closes its idle connections
within two seconds; nginx sends what reaches a stopping machine too late to another one.

Metrics: as under ``python -m tmsite.serve``, the workers count into ``var/metrics/<master
pid>/`` (``PROMETHEUS_MULTIPROC_DIR``, made empty at each start), and any worker's ``/metrics``
sums them all; the master marks a worker that exits dead (``child_exit``).
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from typing import Any

from gunicorn.glogging import Logger

bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("GUNICORN_WORKERS", "4"))
threads = int(os.environ.get("GUNICORN_THREADS", "4"))
worker_class = "gthread" if threads > 1 else "sync"
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "60"))
# A stopping worker's in-flight requests have this long to finish: more than a page fetch's
# deadline (TM_HTTP_DEADLINE, 10 s), so a drained machine answers what it took.
graceful_timeout = 20
# Idle connections from nginx are kept 5 s; nginx gives up on its side first (its upstream
# keepalive_timeout is 4 s, deploy/nginx/upstream.conf), so it never sends a request on a
# connection gunicorn is closing.
keepalive = 5
# Restart a worker now and then, spread out, so none grows without bound.
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "20000"))
max_requests_jitter = max_requests // 10
accesslog = None
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "warning")


class _NoCallerAddress(logging.Filter):
    """gunicorn's own lines without the caller's address.

    gunicorn writes ``Invalid request from ip=<address>: <what was wrong>`` for a malformed
    request; this keeps ``Invalid request: <what was wrong>``. (An IPv6 address has no ``": "``
    in it, so the address ends at the first one.)
    """

    _ADDRESS = re.compile(r" from ip=\S*?: ")

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "ip=" in message:
            record.msg, record.args = self._ADDRESS.sub(": ", message), ()
        return True


_NO_CALLER_ADDRESS = _NoCallerAddress()


class AddresslessLogger(Logger):  # type: ignore[misc]
    """gunicorn's logger with :class:`_NoCallerAddress` on its error log (set up again on HUP)."""

    def setup(self, cfg: Any) -> None:
        """The logger as gunicorn sets it up, then the filter."""
        super().setup(cfg)
        self.error_log.addFilter(_NO_CALLER_ADDRESS)  # the same filter once, however often


logger_class = AddresslessLogger
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
    # Every worker counts into files of this start's directory, and whichever answers /metrics
    # sums them all; set before the first fork, so each worker's metrics module finds it.
    from tmsite.oplog import metrics_dir

    metrics_dir.count_workers_here(os.getpid())


def post_fork(server: Any, worker: Any) -> None:
    """Tell the worker how many threads it has (the http mount keeps one free of self-fetches)."""
    os.environ["TM_WORKER_THREADS"] = str(worker.cfg.threads)


def child_exit(server: Any, worker: Any) -> None:
    """In the master, once a worker has gone (however it went): its live gauges no longer count.

    Its counters and histograms stay, as Prometheus expects of a counter.
    """
    from prometheus_client.multiprocess import mark_process_dead

    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        mark_process_dead(worker.pid)


def worker_exit(server: Any, worker: Any) -> None:
    """Write the worker's buffered request-log rows before it goes."""
    from tmsite.oplog import recorder

    recorder.flush_quietly()
