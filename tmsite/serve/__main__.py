"""Serve the box on granian's ASGI interface: ``python -m tmsite.serve --port 8000``.

Runs the start-up checks (``manage.py check``) once, in a child process, and stops with their
message and exit status 1 when one fails, as ``manage.py check`` and ``runserver`` do; then
becomes granian (``os.execv``), serving ``tmsite.serve.app:application`` with ``--workers``
processes, each with an event loop (uvloop) and a pool of ``--threads`` request threads
(``TM_WORKER_THREADS``, which the http mount's self-fetch budget also reads).

Deadlines: a request's headers must arrive within ``--header-timeout`` seconds (granian's
``--http1-header-read-timeout``), its body within ``TM_BODY_TIMEOUT`` seconds (the
application's own, 20 by default). No access log: nothing writes a caller's address; each
request's JSON line (``tmsite.requests``, on stderr) says what was asked and how it ended.

Metrics: the workers count into memory-mapped files under ``var/metrics/<launcher pid>/``
(``PROMETHEUS_MULTIPROC_DIR``, made empty at each start; the directories of launchers no longer
running are removed; ``tmsite.oplog.metrics_dir``), which any worker's ``/metrics`` sums
(``tmsite.oplog.metrics``).

Every option also reads an environment variable (``TM_SERVE_*``), the command line winning.

Memory: granian runs with ``MALLOC_ARENA_MAX=2`` unless the environment sets it. glibc gives
each thread that allocates its own arena, up to eight per core; a worker's request threads
reading many distinct large objects (blobs, trees) leave each arena holding freed memory the
others cannot use, and the worker's resident size climbs with the number of threads. Two
arenas keep it near what the caches hold (``bench/git_memory.py``).

Spec: OP5.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Sequence

from tmsite.oplog.metrics_dir import metrics_directory
from tmsite.serve.lifeline import LAUNCHER_ENV

#: glibc malloc arenas a worker may use (the module's text says why).
MALLOC_ARENAS = "2"


def _env(name: str, default: str) -> str:
    return os.environ.get(name, "") or default


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The launcher's options."""
    parser = argparse.ArgumentParser(prog="python -m tmsite.serve", description=__doc__)
    parser.add_argument("--host", default=_env("TM_SERVE_HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(_env("TM_SERVE_PORT", "8000")))
    parser.add_argument("--workers", type=int, default=int(_env("TM_SERVE_WORKERS", "2")))
    parser.add_argument(
        "--threads",
        type=int,
        default=int(_env("TM_SERVE_THREADS", _env("TM_WORKER_THREADS", "8"))),
        help="request threads per worker, for everything not answered in the event loop",
    )
    parser.add_argument(
        "--header-timeout",
        type=float,
        default=float(_env("TM_SERVE_HEADER_TIMEOUT", "10")),
        help="seconds a request's headers may take to arrive (at most 60)",
    )
    parser.add_argument(
        "--graceful-timeout",
        type=int,
        default=int(_env("TM_SERVE_GRACEFUL_TIMEOUT", "20")),
        help="seconds a stopping worker may finish its requests in",
    )
    parser.add_argument("--log-level", default=_env("TM_SERVE_LOG_LEVEL", "warning"))
    parser.add_argument(
        "--skip-checks", action="store_true", help="do not run the start-up checks first"
    )
    return parser.parse_args(argv)


def granian_argv(options: argparse.Namespace) -> list[str]:
    """The granian command line the launcher becomes."""
    header_ms = max(1, min(60_000, round(options.header_timeout * 1000)))
    return [
        sys.executable,
        "-m",
        "granian",
        "--interface",
        "asgi",
        "--host",
        options.host,
        "--port",
        str(options.port),
        "--workers",
        str(options.workers),
        "--loop",
        "uvloop",
        "--http",
        "1",
        "--no-ws",
        "--http1-header-read-timeout",
        str(header_ms),
        "--workers-kill-timeout",
        str(max(1, options.graceful_timeout)),
        "--respawn-failed-workers",
        "--backpressure",
        "4096",
        "--log-level",
        options.log_level,
        "--no-access-log",
        "tmsite.serve.app:application",
    ]


def check() -> None:
    """Run ``manage.py check`` in a child process; exit 1 with its message when it fails."""
    env = dict(os.environ)
    env.setdefault("DJANGO_SETTINGS_MODULE", "tmsite.settings")
    done = subprocess.run(
        [sys.executable, "-m", "django", "check", "--fail-level", "ERROR"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.stderr.write("the start-up checks failed:\n" + (done.stderr or done.stdout).strip())
        sys.stderr.write("\n")
        raise SystemExit(1)


def main(argv: Sequence[str] | None = None) -> None:
    """Check, then become granian."""
    options = parse(argv)
    if not options.skip_checks:
        check()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tmsite.settings")
    os.environ["TM_WORKER_THREADS"] = str(max(1, options.threads))
    os.environ[LAUNCHER_ENV] = str(os.getpid())  # granian keeps this pid: the workers' parent
    os.environ.setdefault("MALLOC_ARENA_MAX", MALLOC_ARENAS)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_directory(os.getpid()))
    command = granian_argv(options)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
