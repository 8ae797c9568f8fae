"""Draining a machine loses nothing: two machines (``python -m tmsite.serve``, the default
server) behind the documented nginx, a
steady load of MCP reads, and one machine stopped (SIGTERM, as a rolling restart does) in the
middle of it. Every read is answered, none with a 5xx, and the request log holds one row per
read answered — none lost with the machine that went, none written twice for a read nginx
sent on to the other."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from tests.oplog.servers import (
    free_port,
    gunicorn,
    json_lines,
    migrate,
    nginx,
    server_env,
    serving,
)
from tmsite.demo import static_site

pytestmark = pytest.mark.spec("OP5", "OP2")

FILE = "tm://tinymachines/fs/docs/index.md"
PAGE = "tm://tinymachines/http/tinymachines.ai/docs"
DEMO_PAGE = "tm://tinymachines/http/demo.tinymachines.ai/"
ROOT = Path(__file__).resolve().parents[2]
CLIENTS = 4


def _wait_exit(process: subprocess.Popen[bytes], deadline: float) -> float:
    """Seconds until the launcher exited (it waits for its workers first)."""
    start = time.monotonic()
    process.wait(timeout=deadline)
    return time.monotonic() - start


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
        machines = [  # threads as the launcher sets them
            stack.enter_context(serving(env, workers=2, log=logs[0])),
            stack.enter_context(serving(env, workers=2, log=logs[1])),
        ]
        stopping = machines[0]
        front = stack.enter_context(
            nginx([m.url for m in machines], tmp_path / "nginx", port=front_port)
        )
        with ThreadPoolExecutor(CLIENTS) as pool:
            running = [pool.submit(load, n) for n in range(CLIENTS)]
            warm = time.monotonic() + 60
            while (before := _answered(statuses, lock)) < 30:  # both machines serving
                assert time.monotonic() < warm and not any(f.done() for f in running)
                time.sleep(0.05)
            workers = stopping.workers()
            assert len(workers) == 2
            stopping.process.send_signal(signal.SIGTERM)
            drained_in = _wait_exit(stopping.process, deadline=30)
            assert stopping.process.returncode == 0
            assert not [pid for pid in workers if Path(f"/proc/{pid}").exists()], "a worker stayed"
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


@pytest.mark.slow
def test_a_stopping_server_closes_idle_kept_alive_connections_and_finishes_what_it_has(
    tmp_path: Path,
) -> None:
    """What the drain rests on with the default server: on SIGTERM an idle kept-alive connection
    is closed at once (nothing sent on it later can be taken and then lost: the client, nginx,
    sends it elsewhere), a request whose body is still arriving is answered in full, and the
    launcher exits 0 after its worker, within the graceful timeout, leaving no process behind."""
    env = server_env(tmp_path / "var")
    migrate(env)
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": FILE}}
    ).encode()
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    with serving(env, workers=1, log=tmp_path / "serve.log", threads=2) as machine:
        idle = http.client.HTTPConnection("127.0.0.1", machine.port, timeout=10)
        idle.request("POST", "/api/mcp", body, headers)
        first = idle.getresponse()
        first.read()
        assert first.status == 200
        [worker] = machine.workers()
        busy = socket.create_connection(("127.0.0.1", machine.port), timeout=10)
        busy.sendall(
            b"POST /api/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body[:10]
        )
        time.sleep(0.3)  # the request is in the worker, its body not yet whole
        machine.process.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        assert idle.sock is not None
        idle.sock.settimeout(5)
        assert idle.sock.recv(1) == b"", "the idle kept-alive connection is closed"
        busy.sendall(body[10:])
        answer = b""
        while chunk := busy.recv(65536):
            answer += chunk
        head, _, payload = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), answer[:300]
        assert json.loads(payload)["result"]["contents"][0]["uri"] == FILE
        busy.close()
        idle.close()
        assert _wait_exit(machine.process, deadline=25) < 25
        assert machine.process.returncode == 0
        assert not Path(f"/proc/{worker}").exists(), "the worker outlived the launcher"


class _Holder:
    """A loopback server that takes every connection and never answers: a page being fetched
    holds the request that asked for it on its machine for as long as the test likes."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.sock.getsockname()[1])
        self.arrived = threading.Event()
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._take, daemon=True)
        self.thread.start()

    def _take(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            self.arrived.set()

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


@pytest.mark.slow
def test_a_read_in_flight_on_a_machine_that_dies_is_answered_by_the_other(
    database_url: str, redis_url: str, cache_prefix: str, tmp_path: Path
) -> None:
    """A machine killed (SIGKILL, launcher and workers: a crash, not a drain) while a read is in
    flight on it: nginx sends that read on to the other machine, and the client gets its answer,
    not a 502. This is the documented config's ``non_idempotent`` on ``/api/``: an MCP read is a
    POST, which nginx resends after it reached a machine only when told to.

    The read is a page of the demo site, fetched through ``TM_DEMO_FRONT_DOOR``: machine A's
    points at a server that never answers, so a read nginx gave A is still in flight there when
    A is killed; machine B's points at the demo site, served here."""
    common = {
        "TM_DATABASE_URL": database_url,
        "TM_REDIS_URL": redis_url,
        "TM_RATE_BURST": "1000000",
    }
    holder = _Holder()
    demo = static_site.server(ROOT / "demo_sites" / "demo.tinymachines.ai")
    threading.Thread(target=demo.serve_forever, daemon=True).start()
    env_a = server_env(  # its own cache prefix: no page B fetched is given from the shared cache
        tmp_path / "var-a",
        TM_DEMO_FRONT_DOOR=f"http://127.0.0.1:{holder.port}",
        TM_CACHE_PREFIX=f"{cache_prefix}a",
        **common,
    )
    env_b = server_env(
        tmp_path / "var-b",
        TM_DEMO_FRONT_DOOR=f"http://127.0.0.1:{demo.server_address[1]}",
        TM_CACHE_PREFIX=f"{cache_prefix}b",
        **common,
    )
    migrate(env_b)
    try:
        with ExitStack() as stack:
            a = stack.enter_context(serving(env_a, workers=1, log=tmp_path / "a.log"))
            b = stack.enter_context(serving(env_b, workers=1, log=tmp_path / "b.log"))
            front = stack.enter_context(nginx([a.url, b.url], tmp_path / "nginx"))
            with httpx.Client(base_url=front, timeout=30) as client, ThreadPoolExecutor(1) as pool:
                for rid in range(1, 9):  # nginx takes turns: one of the first reads lands on A
                    body = {
                        "jsonrpc": "2.0",
                        "id": rid,
                        "method": "resources/read",
                        "params": {"uri": DEMO_PAGE},
                    }
                    reply = pool.submit(client.post, "/api/mcp", json=body)
                    while not reply.done() and not holder.arrived.is_set():
                        time.sleep(0.02)
                    if holder.arrived.is_set():
                        break
                    assert reply.result().status_code == 200  # B answered: try again
                else:
                    pytest.fail("no read reached machine A")
                workers = a.workers()
                a.process.kill()
                for pid in workers:
                    os.kill(pid, signal.SIGKILL)
                answer = reply.result(timeout=30)
    finally:
        holder.close()
        demo.shutdown()
        demo.server_close()
    assert answer.status_code == 200, answer.text[:300]
    result = answer.json()
    assert result["id"] == rid and result["result"]["contents"][0]["uri"] == DEMO_PAGE, result
