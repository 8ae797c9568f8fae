#!/usr/bin/env python3
"""Wait until a machine's liveness or readiness route answers 200; exit 0, else 1 at the deadline.

    probe.py live|ready [--url http://127.0.0.1:8000] [--deadline 90] [--timeout 5]

``live`` asks ``/api/v1/live`` (the process answers), ``ready`` asks ``/api/v1/ready`` (the
database and the configured Redis serve). Without ``--url`` the machine is the one the launcher
serves: ``TM_SERVE_HOST`` and ``TM_SERVE_PORT`` (loopback and 8000 when unset). The systemd
units run it (``deploy/systemd/``): after a start, and every few seconds for liveness; a rolling
restart waits on ``ready``. The standard library only, so it costs a few milliseconds.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import urllib.error
import urllib.request

ROUTES = {"live": "/api/v1/live", "ready": "/api/v1/ready"}


def answers(url: str, timeout: float) -> bool:
    """Whether ``url`` answers 200 within ``timeout`` seconds."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as reply:
            return bool(reply.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def main() -> int:
    """Ask until the route answers 200 (exit 0) or the deadline passes (exit 1)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("route", choices=sorted(ROUTES))
    host = os.environ.get("TM_SERVE_HOST") or "127.0.0.1"
    port = os.environ.get("TM_SERVE_PORT") or "8000"
    parser.add_argument("--url", default=f"http://{host}:{port}")
    parser.add_argument("--deadline", type=float, default=0.0, help="seconds to keep asking")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds one answer may take")
    args = parser.parse_args()
    url = args.url.rstrip("/") + ROUTES[args.route]
    end = time.monotonic() + args.deadline
    while True:
        if answers(url, args.timeout):
            return 0
        if time.monotonic() >= end:
            print(f"{url} did not answer 200", file=sys.stderr)
            return 1
        time.sleep(0.5)


if __name__ == "__main__":
    sys.exit(main())
