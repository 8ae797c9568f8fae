"""A bounded load test: a mixed read workload against gunicorn, on loopback, under a minute.

Configurations, each loaded for ``--seconds`` (default 4) by ``--clients`` threads (default 8)
keeping their connections open:

* ``embedded``      — the single-machine default: one gunicorn worker (gthread), SQLite, the
                      file bucket store, the request log batched (50 rows a write);
* ``embedded/row``  — the same, writing each log row as it comes (``TM_LOG_FLUSH_ROWS=1``):
                      what batching saves;
* ``pg+redis xN``   — N = 1, 2, 4 sync workers on PostgreSQL and Redis (bucket and cache).

The workload: 50 % a file (``resources/read``), 20 % a listing, 10 % ``tools/list``, 10 % a
REST ``resolve``, 10 % ``completion/complete``. Each client thread is its own caller
(``X-Forwarded-For`` from a documentation range) so every request passes through the rate
limit, with a burst no client reaches. Reports requests, errors (any non-2xx, any JSON-RPC
error), throughput and p50/p99 latency per configuration, and the scaling ratio of 2 and 4
workers over 1. Exits non-zero on any error.

PostgreSQL and Redis come from ``TM_TEST_DATABASE_URL`` and ``TM_TEST_REDIS_URL``
(``source .ci/services.sh`` installs, starts and exports them); without them only the embedded
configurations run. Traffic goes to 127.0.0.1 only.

    .venv/bin/python bench/load.py [--seconds 4] [--clients 8]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import secrets
import statistics
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.oplog.servers import gunicorn, migrate, server_env  # noqa: E402
from tests.services import own_database  # noqa: E402

MCP = [
    (50, "resources/read", {"uri": "tm://tinymachines/fs/docs/index.md"}),
    (20, "resources/read", {"uri": "tm://tinymachines/fs/docs/"}),
    (10, "tools/list", {}),
    (
        10,
        "completion/complete",
        {
            "ref": {"type": "ref/resource", "uri": "tm://tinymachines/fs/{+path}"},
            "argument": {"name": "path", "value": "docs/m"},
        },
    ),
]
REST = (10, "/api/v1/resolve?" + urlencode({"uri": "tm://tinymachines/fs/docs/mcp.md"}))
PLAN: list[tuple[str, Any]] = []
for weight, method, params in MCP:
    PLAN += [("mcp", (method, params))] * weight
PLAN += [("rest", REST[1])] * REST[0]


def client(base: str, caller: str, stop: float, out: list[float], errors: list[str]) -> None:
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    headers = {"Content-Type": "application/json", "X-Forwarded-For": caller}
    i = secrets.randbelow(len(PLAN))
    while time.monotonic() < stop:
        kind, what = PLAN[i % len(PLAN)]
        i += 7
        started = time.perf_counter()
        try:
            if kind == "mcp":
                method, params = what
                body = json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
                conn.request("POST", "/api/mcp", body, headers)
            else:
                conn.request("GET", what, headers={"X-Forwarded-For": caller})
            reply = conn.getresponse()
            data = reply.read()
            elapsed = time.perf_counter() - started
            if reply.status >= 300 or (kind == "mcp" and b'"error"' in data[:200]):
                errors.append(f"{reply.status} {data[:120]!r}")
            out.append(elapsed)
        except (OSError, http.client.HTTPException) as exc:
            errors.append(repr(exc))
            conn.close()
            conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    conn.close()


def load(base: str, seconds: float, clients: int) -> dict[str, Any]:
    # warm every worker's caches first (not counted)
    load_once(base, 0.75, clients)
    return load_once(base, seconds, clients)


def load_once(base: str, seconds: float, clients: int) -> dict[str, Any]:
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors: list[str] = []
    stop = time.monotonic() + seconds
    threads = [
        threading.Thread(
            target=client, args=(base, f"198.51.100.{n + 1}", stop, latencies[n], errors)
        )
        for n in range(clients)
    ]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.monotonic() - started
    every = sorted(x for per in latencies for x in per)
    if not every:
        return {"requests": 0, "errors": len(errors), "rps": 0.0, "p50": 0.0, "p99": 0.0}
    return {
        "requests": len(every),
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "rps": len(every) / wall,
        "p50": statistics.median(every) * 1000,
        "p99": every[min(len(every) - 1, int(len(every) * 0.99))] * 1000,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--budget", type=float, default=48.0, help="seconds for the whole run")
    args = parser.parse_args()
    began = time.monotonic()

    def time_left(name: str) -> bool:
        # a configuration needs its load, a warm-up and a start: skip it rather than overrun
        if time.monotonic() - began + args.seconds + 4 > args.budget:
            print(f"{name}: skipped, the {args.budget:g} s budget is spent")
            return False
        return True

    results: dict[str, dict[str, Any]] = {}
    common = {"TM_RATE_BURST": "1000000000", "TM_RATE_REFILL": "1000", "TM_LOG_JSON": "0"}
    with tempfile.TemporaryDirectory(prefix="tm-bench-") as tmp, ExitStack() as cleanup:
        work = Path(tmp)
        embedded = server_env(work / "embedded", TM_RATE_STORE="file", **common)
        migrate(embedded)
        for name, extra in [("embedded", {}), ("embedded/row", {"TM_LOG_FLUSH_ROWS": "1"})]:
            if not time_left(name):
                continue
            env = {**embedded, **extra}
            with gunicorn(env, workers=1, threads=8, log=work / "embedded.log") as base:
                results[name] = load(base, args.seconds, args.clients)
        database, redis = (
            os.environ.get("TM_TEST_DATABASE_URL"),
            os.environ.get("TM_TEST_REDIS_URL"),
        )
        if database and redis:
            url = cleanup.enter_context(own_database(database, "tm_bench"))
            env = server_env(work / "many", TM_DATABASE_URL=url, TM_REDIS_URL=redis, **common)
            migrate(env)
            for workers in (1, 2, 4):
                if not time_left(f"pg+redis x{workers}"):
                    continue
                with gunicorn(env, workers=workers, log=work / f"w{workers}.log") as base:
                    results[f"pg+redis x{workers}"] = load(base, args.seconds, args.clients)
        else:
            print("TM_TEST_DATABASE_URL / TM_TEST_REDIS_URL unset: PostgreSQL+Redis skipped")
    print(
        f"{'configuration':<16}{'requests':>10}{'errors':>8}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}"
    )
    for name, r in results.items():
        print(
            f"{name:<16}{r['requests']:>10}{r['errors']:>8}{r['rps']:>10.1f}{r['p50']:>9.2f}"
            f"{r['p99']:>9.2f}"
        )
    one = results.get("pg+redis x1")
    if one:
        for workers in (2, 4):
            if f"pg+redis x{workers}" not in results:
                continue
            ratio = results[f"pg+redis x{workers}"]["rps"] / one["rps"]
            print(f"scaling {workers} workers / 1: {ratio:.2f}x")
    if "embedded/row" in results:
        batch, row = results["embedded"], results["embedded/row"]
        print(
            f"log batching: {batch['rps']:.1f} req/s batched vs {row['rps']:.1f} one write each "
            f"(p50 {batch['p50']:.2f} vs {row['p50']:.2f} ms)"
        )
    print(
        f"cpus: {os.cpu_count()}  clients: {args.clients}  wall: {time.monotonic() - began:.1f} s"
    )
    errors = sum(r["errors"] for r in results.values())
    for name, r in results.items():
        if r["errors"]:
            print(f"{name}: first error {r['first_error']}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
