"""Draining a machine loses nothing: two gunicorn machines behind the documented nginx, a
steady load of MCP reads, and one machine stopped (SIGTERM, as a rolling restart does) in the
middle of it. Every read is answered, none with a 5xx, and the request log holds one row per
read answered — none lost with the machine that went, none written twice for a read nginx
sent on to the other."""

from __future__ import annotations

import http.client
import json
import os
import signal
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from tests.oplog.servers import free_port, gunicorn, json_lines, migrate, nginx, server_env

pytestmark = pytest.mark.spec("OP5", "OP2")

FILE = "tm://tinymachines/fs/docs/index.md"
PAGE = "tm://tinymachines/http/tinymachines.ai/docs"
CLIENTS = 4


def _wait_gone(pidfile: Path, deadline: float) -> float:
    """Seconds until gunicorn removed its pid file (it does as its master exits)."""
    start = time.monotonic()
    while pidfile.exists():
        assert time.monotonic() - start < deadline, "the machine did not stop in time"
        time.sleep(0.05)
    return time.monotonic() - start


def _answered(statuses: Counter[str], lock: threading.Lock) -> int:
    with lock:
        return sum(statuses.values())


@pytest.mark.slow
def test_sigterm_one_machine_under_load_loses_no_read(
    database_url: str, redis_url: str, cache_prefix: str, tmp_path: Path
) -> None:
    import psycopg

    front_port = free_port()
    env = server_env(
        tmp_path / "var",
        TM_FRONT_DOOR=f"http://127.0.0.1:{front_port}",  # pages are read through nginx
        TM_DATABASE_URL=database_url,
        TM_REDIS_URL=redis_url,
        TM_CACHE_PREFIX=cache_prefix,
        TM_RATE_BURST="1000000",  # every caller here is one (loopback, forwarded by nginx)
    )
    migrate(env)
    pidfile = tmp_path / "machine-a.pid"
    env_a = {**env, "GUNICORN_CMD_ARGS": f"--pid {pidfile}"}
    logs = [tmp_path / "machine-a.log", tmp_path / "machine-b.log"]
    statuses: Counter[str] = Counter()
    stop = threading.Event()
    lock = threading.Lock()

    def load(client_no: int) -> None:
        with httpx.Client(base_url=front, timeout=30) as client:
            i = 0
            while not stop.is_set():
                i += 1
                uri = PAGE if i % 10 == 0 else FILE
                rid = client_no * 1_000_000 + i
                try:
                    reply = client.post(
                        "/api/mcp",
                        json={
                            "jsonrpc": "2.0",
                            "id": rid,
                            "method": "resources/read",
                            "params": {"uri": uri},
                        },
                    )
                except httpx.HTTPError as exc:
                    outcome = f"transport:{type(exc).__name__}"
                else:
                    body = reply.json() if reply.status_code == 200 else {}
                    ok = body.get("id") == rid and "result" in body
                    outcome = "ok" if ok else f"http-{reply.status_code}:{body.get('error')}"
                with lock:
                    statuses[outcome] += 1

    with ExitStack() as stack:
        machines = [  # threads and keep-alive as the deploy config sets them
            stack.enter_context(gunicorn(env_a, workers=2, log=logs[0], threads=None)),
            stack.enter_context(gunicorn(env, workers=2, log=logs[1], threads=None)),
        ]
        front = stack.enter_context(nginx(machines, tmp_path / "nginx", port=front_port))
        with ThreadPoolExecutor(CLIENTS) as pool:
            running = [pool.submit(load, n) for n in range(CLIENTS)]
            warm = time.monotonic() + 60
            while (before := _answered(statuses, lock)) < 30:  # both machines serving
                assert time.monotonic() < warm and not any(f.done() for f in running)
                time.sleep(0.05)
            os.kill(int(pidfile.read_text()), signal.SIGTERM)
            drained_in = _wait_gone(pidfile, deadline=30)
            during = _answered(statuses, lock) - before
            time.sleep(1.5)  # the other machine alone
            stop.set()
            for future in running:
                future.result()
    answered = statuses["ok"]
    assert statuses == Counter(ok=answered), statuses  # nothing but answers, no 5xx
    assert during > 0, (before, during, drained_in)  # the load went on while it drained
    a_lines = [line for line in json_lines(logs[0]) if line["method"] == "resources/read"]
    b_lines = [line for line in json_lines(logs[1]) if line["method"] == "resources/read"]
    assert a_lines and b_lines, "both machines answered before the drain"
    assert len(a_lines) + len(b_lines) == answered
    with psycopg.connect(database_url) as db:
        [(rows,)] = db.execute(
            "SELECT count(*) FROM tm_oplog_requestlog WHERE method = 'resources/read'"
        ).fetchall()
    assert rows == answered


@pytest.mark.slow
def test_a_stopping_worker_answers_a_request_on_a_kept_alive_connection(tmp_path: Path) -> None:
    """What the drain rests on, gunicorn alone with the deploy config: after SIGTERM, a request
    that arrives on a connection kept alive from before is answered (with ``Connection:
    close``), not dropped, and the worker is gone within the graceful timeout."""
    env = server_env(tmp_path / "var")
    migrate(env)
    pidfile = tmp_path / "gunicorn.pid"
    env["GUNICORN_CMD_ARGS"] = f"--pid {pidfile}"
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": FILE}}
    )
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    with gunicorn(env, workers=1, log=tmp_path / "g.log", threads=None) as base:
        host, _, port = base.removeprefix("http://").rpartition(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        conn.request("POST", "/api/mcp", body, headers)
        first = conn.getresponse()
        first.read()
        assert first.status == 200 and first.getheader("Connection") != "close"
        os.kill(int(pidfile.read_text()), signal.SIGTERM)
        time.sleep(0.5)  # the worker has its signal; the connection is still open
        conn.request("POST", "/api/mcp", body, headers)
        second = conn.getresponse()
        answer = json.loads(second.read())
        assert second.status == 200 and "result" in answer
        assert second.getheader("Connection") == "close"
        conn.close()
        assert _wait_gone(pidfile, deadline=25) < 25
