"""Reads while the shared cache fails: Redis frozen (SIGSTOP) and stopped, under a bounded load.

One gunicorn machine (``--workers`` gthread workers × ``--threads``) on a temporary SQLite
database, with ``TM_REDIS_URL`` pointing at a redis-server of this script's own on a free
loopback port. ``--clients`` threads, each its own caller (``X-Forwarded-For`` from a
documentation range, so every request passes through the rate limit, with a burst no client
reaches), send a mixed read load — 60 % an MCP file read, 20 % an MCP listing, 20 % a REST
``resolve`` — and a prober asks ``/api/v1/health`` four times a second. The phases:

* ``before``  — ``--calm`` seconds with Redis up;
* ``frozen``  — ``--fault`` seconds with Redis stopped by SIGSTOP (then SIGCONT);
* ``between`` — ``--calm`` seconds with Redis back;
* ``stopped`` — ``--fault`` seconds with Redis terminated (then started again on its port);
* ``after``   — ``--calm`` seconds with Redis back.

For each phase: requests sent and answered with a result, errors by kind (a JSON-RPC error, an
HTTP status, a timeout), 5xx, p50/p99 latency, and the slowest health answer with the statuses
it said. At the end the request-log rows the server wrote (it flushes when it stops) against
the requests answered. Traffic goes to 127.0.0.1 only.

    .venv/bin/python bench/redis_outage.py [--fault 10] [--calm 3] [--clients 8]
"""

from __future__ import annotations

import argparse
import http.client
import json
import sqlite3
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode, urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.oplog.servers import gunicorn, migrate, redis_server, server_env  # noqa: E402

MCP_FILE = ("resources/read", {"uri": "tm://tinymachines/fs/docs/index.md"})
MCP_LIST = ("resources/read", {"uri": "tm://tinymachines/fs/docs/"})
REST = "/api/v1/resolve?" + urlencode({"uri": "tm://tinymachines/fs/docs/mcp.md"})
PLAN = ["file"] * 6 + ["list"] * 2 + ["rest"] * 2


@dataclass
class Tally:
    """What one phase saw."""

    sent: int = 0
    answered: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    server_errors: int = 0
    latencies: list[float] = field(default_factory=list)
    health: list[tuple[float, str]] = field(default_factory=list)


class Phases:
    """The current phase's name, and a tally per phase."""

    def __init__(self) -> None:
        self.name = "warm-up"
        self.tallies: dict[str, Tally] = {}
        self.lock = threading.Lock()

    def tally(self, name: str) -> Tally:
        with self.lock:
            return self.tallies.setdefault(name, Tally())


def client(base: str, caller: str, phases: Phases, stop: threading.Event, offset: int) -> None:
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    headers = {"Content-Type": "application/json", "X-Forwarded-For": caller}
    i = offset
    while not stop.is_set():
        kind = PLAN[i % len(PLAN)]
        i += 1
        phase = phases.name
        tally = phases.tally(phase)
        started = time.perf_counter()
        try:
            if kind == "rest":
                conn.request("GET", REST, headers={"X-Forwarded-For": caller})
            else:
                method, params = MCP_FILE if kind == "file" else MCP_LIST
                body = json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
                conn.request("POST", "/api/mcp", body, headers)
            reply = conn.getresponse()
            data = reply.read()
            elapsed = time.perf_counter() - started
            with phases.lock:
                tally.sent += 1
                tally.latencies.append(elapsed)
                if reply.status >= 500:
                    tally.server_errors += 1
                if reply.status != 200:
                    tally.errors[f"http-{reply.status}"] += 1
                elif kind != "rest" and b'"error"' in data[:200]:
                    code = json.loads(data).get("error", {}).get("code")
                    tally.errors[f"rpc{code}"] += 1
                else:
                    tally.answered += 1
        except (OSError, http.client.HTTPException) as exc:
            with phases.lock:
                tally.sent += 1
                tally.errors[type(exc).__name__] += 1
            conn.close()
            conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    conn.close()


def prober(base: str, phases: Phases, stop: threading.Event) -> None:
    parts = urlsplit(base)
    while not stop.is_set():
        tally = phases.tally(phases.name)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        started = time.perf_counter()
        try:
            conn.request("GET", "/api/v1/health")
            reply = conn.getresponse()
            said = f"{reply.status} {json.loads(reply.read()).get('status')}"
        except (OSError, http.client.HTTPException, ValueError) as exc:
            said = type(exc).__name__
        finally:
            conn.close()
        with phases.lock:
            tally.health.append((time.perf_counter() - started, said))
        stop.wait(0.25)


def report(phases: Phases, order: list[str], seconds: dict[str, float]) -> int:
    print(
        f"{'phase':<9}{'sent':>7}{'answered':>9}{'req/s':>8}{'5xx':>5}{'p50 ms':>9}{'p99 ms':>9}"
        f"{'health max ms':>15}  errors / health said"
    )
    answered = 0
    for name in order:
        t = phases.tally(name)
        answered += t.answered
        lat = sorted(t.latencies)
        p50 = lat[len(lat) // 2] * 1000 if lat else 0.0
        p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000 if lat else 0.0
        worst = max((h[0] for h in t.health), default=0.0) * 1000
        said = Counter(h[1] for h in t.health)
        errors = ", ".join(f"{k} {v}" for k, v in t.errors.most_common()) or "none"
        health = ", ".join(f"{k} ×{v}" for k, v in said.most_common())
        print(
            f"{name:<9}{t.sent:>7}{t.answered:>9}{t.answered / seconds[name]:>8.0f}"
            f"{t.server_errors:>5}{p50:>9.1f}{p99:>9.1f}{worst:>15.0f}  {errors} / {health}"
        )
    return answered


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fault", type=float, default=10.0, help="seconds of each fault")
    parser.add_argument("--calm", type=float, default=3.0, help="seconds with Redis up")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()
    phases = Phases()
    order = ["before", "frozen", "between", "stopped", "after"]
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="tm-redis-outage-") as tmp:
        work = Path(tmp)
        with redis_server(work / "redis") as redis:
            env = server_env(
                work / "var",
                TM_REDIS_URL=redis.url,
                TM_RATE_BURST="1000000000",
                TM_RATE_REFILL="1000",
                TM_LOG_JSON="0",
            )
            migrate(env)
            log = work / "server.log"
            with gunicorn(env, workers=args.workers, threads=args.threads, log=log) as base:
                stop = threading.Event()
                threads = [
                    threading.Thread(
                        target=client, args=(base, f"198.51.100.{n + 1}", phases, stop, n)
                    )
                    for n in range(args.clients)
                ]
                threads.append(threading.Thread(target=prober, args=(base, phases, stop)))
                for thread in threads:
                    thread.start()
                time.sleep(1.0)

                def phase(name: str, length: float) -> None:
                    phases.name = name
                    began = time.monotonic()
                    time.sleep(length)
                    seconds[name] = time.monotonic() - began

                phase("before", args.calm)
                redis.freeze()
                phase("frozen", args.fault)
                redis.thaw()
                phase("between", args.calm)
                redis.stop()
                phase("stopped", args.fault)
                redis.start()
                phase("after", args.calm)
                phases.name = "drain"
                stop.set()
                for thread in threads:
                    thread.join()
            text = log.read_text(errors="replace")
            tracebacks = text.count("Traceback")
            kinds = Counter(
                line for line in text.splitlines() if line.startswith(("redis.", "builtins."))
            )
        with sqlite3.connect(work / "var" / "tmsite.sqlite3") as db:
            (rows,) = db.execute(
                "SELECT COUNT(*) FROM tm_oplog_requestlog WHERE method != ''"
            ).fetchone()
            (ok_rows,) = db.execute(
                "SELECT COUNT(*) FROM tm_oplog_requestlog WHERE outcome = 'ok'"
            ).fetchone()
    answered = report(phases, order, seconds)
    every = sum(t.sent for t in phases.tallies.values())
    answered_all = sum(t.answered for t in phases.tallies.values())
    print(
        f"requests {every} (answered {answered_all}, {answered} in the phases above); "
        f"request-log rows with a method {rows}, with outcome ok {ok_rows}; "
        f"tracebacks in the server log {tracebacks}"
    )
    for line, count in kinds.most_common(5):
        print(f"  {count} × {line[:160]}")
    errors = sum(sum(t.errors.values()) for t in phases.tallies.values())
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
