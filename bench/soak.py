"""A bounded mixed load against the default server while slow clients and faults happen.

``--stack one`` (the default): one machine of ``python -m tmsite.serve`` (``--workers`` ×
``--threads``) on a temporary database — SQLite, or a fresh PostgreSQL database made with
``--database-url`` (a role that may create databases; ``TM_TEST_DATABASE_URL`` by default) —
its rate-limit buckets in a redis-server of this script's own on a free loopback port when the
binary is installed. ``--stack two``: two such machines behind nginx with the documented
config (``deploy/nginx/``), on PostgreSQL (required) and the script's Redis. ``--server
gunicorn`` serves the one machine with gunicorn and ``deploy/gunicorn.conf.py`` instead, to
compare.

``--clients`` threads, each its own caller (``X-Forwarded-For`` from a documentation range,
with a burst no client reaches), send a mixed read load — 60 % an MCP file read, 20 % an MCP
listing, 20 % a REST ``resolve`` — through the front (the machine, or nginx). The phases, each
where what it needs exists:

* ``calm``           — ``--calm`` seconds, nothing wrong;
* ``slow``           — ``--slow-seconds`` (12: past the header deadline) with ``--slow`` slow
  connections held open (half trickle their headers, half their bodies, a byte a second; each
  reopened when the server cuts it);
* ``redis-frozen``   — Redis stopped with SIGSTOP (then SIGCONT);
* ``redis-stopped``  — Redis terminated (then started again on its port);
* ``database-out``   — PostgreSQL drops every connection of this database and refuses new ones
  (what a restart does to it, without restarting a server others may share);
* ``drain``          — ``--stack two``: one machine SIGTERMed under load, waited for, and
  started again (a rolling restart's step);
* ``after``          — ``--calm`` seconds, everything back.

For each phase: sent, answered (any answer from the server), results, errors by kind, 5xx,
p50/p99 of the normal reads, and for ``slow`` what the slow connections met. At the end the
request-log rows of the normal reads against the reads the server answered (the servers write
their buffers as they stop). Traffic goes to 127.0.0.1 only.

    .venv/bin/python bench/soak.py [--stack one|two] [--fault 6] [--calm 3] [--slow 256]
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import shutil
import signal
import sqlite3
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.oplog.servers import (  # noqa: E402
    Machine,
    RedisProcess,
    free_port,
    gunicorn,
    migrate,
    nginx,
    redis_server,
    server_env,
    serving,
)
from tests.services import own_database  # noqa: E402

MCP_FILE = ("resources/read", {"uri": "tm://tinymachines/fs/docs/index.md"})
MCP_LIST = ("resources/read", {"uri": "tm://tinymachines/fs/docs/"})
REST = "/api/v1/resolve?" + urlencode({"uri": "tm://tinymachines/fs/docs/mcp.md"})
PLAN = ["file"] * 6 + ["list"] * 2 + ["rest"] * 2
#: The p99 of normal reads with the slow connections open must stay under this (ms).
SLOW_P99_TARGET_MS = 100.0


@dataclass
class Tally:
    """What one phase saw of the normal load."""

    sent: int = 0
    answered: int = 0
    results: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    server_errors: int = 0
    latencies: list[float] = field(default_factory=list)

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        if not ordered:
            return 0.0
        return ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1000


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
    """One caller reading in a loop over one kept-alive connection (reopened after an error)."""
    parts = urlsplit(base)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    conn = http.client.HTTPConnection(host, port, timeout=30)
    headers = {"Content-Type": "application/json", "X-Forwarded-For": caller}
    i = offset
    while not stop.is_set():
        kind = PLAN[i % len(PLAN)]
        i += 1
        tally = phases.tally(phases.name)
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
            from_nginx = reply.status in (502, 503, 504) and b"nginx" in data
            with phases.lock:
                tally.sent += 1
                tally.latencies.append(elapsed)
                tally.answered += 0 if from_nginx else 1
                if reply.status >= 500:
                    tally.server_errors += 1
                if reply.status != 200:
                    tally.errors[f"http-{reply.status}{' (nginx)' if from_nginx else ''}"] += 1
                elif kind != "rest" and b'"error"' in data[:200]:
                    answer = json.loads(data)
                    error = answer.get("error", {})
                    reason = (error.get("data") or {}).get("reason")
                    tally.errors[f"rpc{error.get('code')}{f' {reason}' if reason else ''}"] += 1
                else:
                    tally.results += 1
        except (OSError, http.client.HTTPException) as exc:
            with phases.lock:
                tally.sent += 1
                tally.errors[type(exc).__name__] += 1
            conn.close()
            conn = http.client.HTTPConnection(host, port, timeout=30)
    conn.close()


# --- slow connections ---------------------------------------------------------------------------


@dataclass
class SlowStats:
    """What the slow connections met."""

    opened: int = 0
    open_now: int = 0
    open_min: int = -1
    open_max: int = 0
    met: Counter[str] = field(default_factory=Counter)

    def sample(self) -> None:
        self.open_max = max(self.open_max, self.open_now)
        if self.open_min < 0 or self.open_now < self.open_min:
            self.open_min = self.open_now


def _slow_request(kind: str, n: int) -> tuple[bytes, bytes]:
    """What a slow connection sends at once, and what it then trickles a byte a second."""
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}' + b" " * 960
    head = (
        b"POST /api/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        + f"X-Forwarded-For: 203.0.113.{n % 64 + 1}\r\n".encode()
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
    )
    return (b"", head + body) if kind == "head" else (head, body)


async def _slow_one(host: str, port: int, kind: str, n: int, stats: SlowStats, stop: Any) -> None:
    while not stop.is_set():
        try:
            reader, writer = await asyncio.open_connection(host, port)
        except OSError as exc:
            stats.met[f"connect {type(exc).__name__}"] += 1
            await asyncio.sleep(0.5)
            continue
        stats.opened += 1
        stats.open_now += 1
        first, trickled = _slow_request(kind, n)
        try:
            if first:
                writer.write(first)
            for byte in trickled:
                if stop.is_set():
                    break
                writer.write(bytes([byte]))
                await writer.drain()
                try:
                    got = await asyncio.wait_for(reader.read(65536), timeout=1.0)
                except TimeoutError:
                    continue
                if got:
                    status = got.split(b" ", 2)[1].decode() if got.startswith(b"HTTP/") else "?"
                    stats.met[f"{kind}: answered {status}"] += 1
                else:
                    stats.met[f"{kind}: closed by the server"] += 1
                break
        except OSError as exc:
            stats.met[f"{kind}: {type(exc).__name__}"] += 1
        finally:
            stats.open_now -= 1
            writer.close()


@contextmanager
def slow_connections(base: str, count: int) -> Iterator[SlowStats]:
    """``count`` slow connections held open against ``base`` until the block ends."""
    parts = urlsplit(base)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    stats = SlowStats()
    stop = threading.Event()

    async def run() -> None:
        kinds = ["head", "body"]
        tasks = [
            asyncio.create_task(_slow_one(host, port, kinds[n % 2], n, stats, stop))
            for n in range(count)
        ]
        while not stop.is_set():
            await asyncio.sleep(0.25)
            stats.sample()
        await asyncio.gather(*tasks, return_exceptions=True)

    thread = threading.Thread(target=asyncio.run, args=(run(),), name="soak-slow")
    thread.start()
    try:
        time.sleep(1.5)  # all of them opened
        stats.open_min = -1
        yield stats
    finally:
        stop.set()
        thread.join(timeout=30)


# --- faults -------------------------------------------------------------------------------------


@contextmanager
def database_out(database_url: str, seconds: float) -> Iterator[None]:
    """PostgreSQL drops this database's connections and refuses new ones for ``seconds``."""
    import psycopg

    name = urlsplit(database_url).path.lstrip("/")
    admin_url = urlunsplit(urlsplit(database_url)._replace(path="/postgres"))
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        try:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            )
            time.sleep(seconds)
            yield
        finally:
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')


def request_rows(env: dict[str, str], var_dir: Path) -> int:
    """Request-log rows of the normal reads (a method: not a refusal before the body)."""
    query = "SELECT COUNT(*) FROM tm_oplog_requestlog WHERE method != ''"
    url = env.get("TM_DATABASE_URL")
    if url:
        import psycopg

        with psycopg.connect(url) as db:
            row = db.execute(query).fetchone()
    else:
        with sqlite3.connect(var_dir / "tmsite.sqlite3") as db:
            row = db.execute(query).fetchone()
    return int(row[0]) if row else 0


# --- the run ------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    phases = Phases()
    seconds: dict[str, float] = {}
    slow_report: dict[str, Any] = {}
    skipped: list[str] = []
    admin_url = args.database_url or os.environ.get("TM_TEST_DATABASE_URL", "")
    has_redis = bool(
        os.environ.get("TM_REDIS_SERVER")
        or shutil.which("redis-server")
        or Path("/usr/bin/redis-server").is_file()
    )
    if args.stack == "two" and args.server == "gunicorn":
        raise SystemExit("--server gunicorn serves --stack one only")
    if args.stack == "two" and not admin_url:
        raise SystemExit("--stack two needs PostgreSQL: --database-url or TM_TEST_DATABASE_URL")
    with (
        tempfile.TemporaryDirectory(prefix="tm-soak-") as tmp,
        ExitStack() as stack,
        ExitStack() as servers,
    ):
        work = Path(tmp)
        extra = {
            "TM_RATE_BURST": "1000000000",
            "TM_RATE_REFILL": "1000",
            "TM_LOG_JSON": "0",
        }
        redis: RedisProcess | None = None
        if has_redis:
            redis = stack.enter_context(redis_server(work / "redis"))
            extra["TM_REDIS_URL"] = redis.url
        else:
            skipped += ["redis-frozen", "redis-stopped"]
        database_url = ""
        if admin_url:
            database_url = stack.enter_context(own_database(admin_url, "tm_soak"))
            extra["TM_DATABASE_URL"] = database_url
        else:
            skipped.append("database-out")
        front_port = free_port()
        if args.stack == "two":
            extra["TM_FRONT_DOOR"] = f"http://127.0.0.1:{front_port}"
        env = server_env(work / "var", **extra)
        migrate(env)
        ports = [free_port() for _ in range(2 if args.stack == "two" else 1)]
        machines: list[Machine] = []

        def start(index: int) -> Machine:
            log = work / f"machine-{index}.log"
            return servers.enter_context(
                serving(env, args.workers, log, port=ports[index], threads=args.threads)
            )

        if args.server == "gunicorn":
            log = work / "machine-0.log"
            front = servers.enter_context(
                gunicorn(env, args.workers, log, port=ports[0], threads=args.threads)
            )
        else:
            machines = [start(index) for index in range(len(ports))]
            front = machines[0].url
        if args.stack == "two":
            front = servers.enter_context(
                nginx([m.url for m in machines], work / "nginx", port=front_port)
            )
        else:
            skipped.append("drain")
        stop = threading.Event()
        threads = [
            threading.Thread(target=client, args=(front, f"198.51.100.{n + 1}", phases, stop, n))
            for n in range(args.clients)
        ]
        for thread in threads:
            thread.start()
        time.sleep(1.0)

        def phase(name: str, length: float, during: Callable[[], Any] | None = None) -> None:
            phases.name = name
            began = time.monotonic()
            if during is not None:
                during()
            time.sleep(max(0.0, length - (time.monotonic() - began)))
            seconds[name] = time.monotonic() - began

        try:
            phase("calm", args.calm)
            with slow_connections(front, args.slow) as slow:
                phase("slow", args.slow_seconds)
            slow_report = {
                "connections": args.slow,
                "opened": slow.opened,
                "open_min": max(0, slow.open_min),
                "open_max": slow.open_max,
                "met": dict(slow.met),
            }
            if redis is not None:
                redis.freeze()
                try:
                    phase("redis-frozen", args.fault)
                finally:
                    redis.thaw()
                redis.stop()
                try:
                    phase("redis-stopped", args.fault)
                finally:
                    redis.start()
            if database_url:

                def out() -> None:
                    with database_out(database_url, args.fault):
                        pass

                phase("database-out", args.fault + 1, out)
            if args.stack == "two":

                def drain() -> None:
                    machines[1].process.send_signal(signal.SIGTERM)
                    machines[1].process.wait(timeout=60)
                    machines[1] = start(1)

                phase("drain", args.fault, drain)
            phase("after", args.calm)
        finally:
            phases.name = "stopping"
            stop.set()
            for thread in threads:
                thread.join(timeout=60)
        servers.close()  # every server stopped: their buffers written
        rows = request_rows(env, work / "var")
    order = [name for name in phases.tallies if name not in ("warm-up", "stopping")]
    answered = sum(t.answered for t in phases.tallies.values())
    return {
        "stack": args.stack,
        "server": args.server,
        "workers": args.workers,
        "threads": args.threads,
        "clients": args.clients,
        "phases": [
            {
                "phase": name,
                "seconds": round(seconds.get(name, 0.0), 2),
                "sent": phases.tallies[name].sent,
                "answered": phases.tallies[name].answered,
                "results": phases.tallies[name].results,
                "errors": dict(phases.tallies[name].errors),
                "5xx": phases.tallies[name].server_errors,
                "p50_ms": round(phases.tallies[name].percentile(0.50), 1),
                "p99_ms": round(phases.tallies[name].percentile(0.99), 1),
                "max_ms": round(phases.tallies[name].percentile(1.0), 1),
            }
            for name in order
        ],
        "skipped": skipped,
        "slow": slow_report,
        "sent": sum(t.sent for t in phases.tallies.values()),
        "answered": answered,
        "5xx": sum(t.server_errors for t in phases.tallies.values()),
        "rows": rows,
        "rows_lost": answered - rows,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def print_report(report: dict[str, Any]) -> None:
    print(
        f"stack {report['stack']} on {report['server']}: {report['workers']} workers × "
        f"{report['threads']} threads a machine, {report['clients']} callers; "
        f"load average {report['load_average']}"
    )
    print(
        f"{'phase':<15}{'sent':>7}{'answered':>9}{'results':>8}{'5xx':>5}{'p50 ms':>8}"
        f"{'p99 ms':>8}{'max ms':>8}  errors"
    )
    for row in report["phases"]:
        errors = ", ".join(f"{k} {v}" for k, v in sorted(row["errors"].items())) or "none"
        print(
            f"{row['phase']:<15}{row['sent']:>7}{row['answered']:>9}{row['results']:>8}"
            f"{row['5xx']:>5}{row['p50_ms']:>8.1f}{row['p99_ms']:>8.1f}{row['max_ms']:>8.0f}"
            f"  {errors}"
        )
    slow = report["slow"]
    if slow:
        met = ", ".join(f"{k} {v}" for k, v in sorted(slow["met"].items())) or "nothing"
        print(
            f"slow connections: {slow['connections']} held (open {slow['open_min']}–"
            f"{slow['open_max']}), {slow['opened']} opened in all; met: {met}"
        )
    if report["skipped"]:
        print(f"skipped (nothing to provoke it with): {', '.join(report['skipped'])}")
    print(
        f"sent {report['sent']}, answered {report['answered']}, 5xx {report['5xx']}, "
        f"request-log rows {report['rows']}, rows lost {report['rows_lost']}"
    )
    slow_row = next((row for row in report["phases"] if row["phase"] == "slow"), None)
    if slow_row is not None:
        verdict = "holds" if slow_row["p99_ms"] < SLOW_P99_TARGET_MS else "MISSED"
        print(
            f"p99 of normal reads with the slow connections open: {slow_row['p99_ms']:.1f} ms "
            f"(target < {SLOW_P99_TARGET_MS:.0f} ms: {verdict})"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--stack", choices=("one", "two"), default="one")
    parser.add_argument("--server", choices=("serve", "gunicorn"), default="serve")
    parser.add_argument("--fault", type=float, default=6.0, help="seconds of each fault")
    parser.add_argument("--calm", type=float, default=3.0, help="seconds of calm before/after")
    parser.add_argument("--slow", type=int, default=256, help="slow connections held open")
    parser.add_argument(
        "--slow-seconds", type=float, default=12.0, help="seconds the slow connections are held"
    )
    parser.add_argument("--clients", type=int, default=8, help="callers of the normal load")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--database-url", default="", help="PostgreSQL role that may create DBs")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args()
    report = run(args)
    if args.json:
        print(json.dumps(report))
    else:
        print_report(report)
    return 1 if report["5xx"] or report["rows_lost"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
