"""``python -m tmsite.serve`` for real: the launcher, granian, the ASGI application, on loopback.

One server process (one worker) on a migrated temporary database answers the MCP endpoint as
the transport tests expect; slow clients trickling their headers or bodies one byte a second
hold no thread and are cut at their deadlines while ordinary reads keep answering; a stopped
worker writes its buffered request-log rows; a failing start-up check stops the start.
"""

from __future__ import annotations

import json
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.oplog.servers import ROOT, free_port, migrate, server_env, wait_for

pytestmark = [pytest.mark.spec("T1", "T2", "T3", "T8", "OP2", "OP5"), pytest.mark.slow]

HEADER_TIMEOUT = 2.0
BODY_TIMEOUT = 3.0
PROTOCOL = {"MCP-Protocol-Version": "2025-11-25"}
README = "tm://tinymachines/fs/docs/README.md"


@dataclass
class Running:
    url: str
    process: subprocess.Popen[bytes]
    log: Path
    database: Path

    def rows(self) -> list[tuple[str, str, int]]:
        with sqlite3.connect(self.database) as db:
            found = db.execute(
                "SELECT method, outcome, status FROM tm_oplog_requestlog ORDER BY id"
            ).fetchall()
        return [(str(m), str(o), int(s)) for m, o, s in found]


@contextmanager
def serve(var_dir: Path, log: Path, **extra: str) -> Iterator[Running]:
    """The launcher on a free port with one worker; stopped with SIGTERM when the block ends."""
    env = server_env(var_dir, TM_BODY_TIMEOUT=str(BODY_TIMEOUT), **extra)
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "tmsite.serve",
        "--port",
        str(port),
        "--workers",
        "1",
        "--threads",
        "4",
        "--header-timeout",
        str(HEADER_TIMEOUT),
    ]
    with log.open("ab") as sink:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=sink, stderr=sink)
    running = Running(f"http://127.0.0.1:{port}", process, log, var_dir / "tmsite.sqlite3")
    try:
        wait_for(f"{running.url}/api/v1/health", deadline=90)
        yield running
    finally:
        stop(process)


def stop(process: subprocess.Popen[bytes]) -> int:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return int(process.returncode)


@pytest.fixture(scope="module")
def var_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("serve") / "var"
    migrate(server_env(where))
    return where


@pytest.fixture(scope="module")
def server(var_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    log = tmp_path_factory.mktemp("serve-log") / "server.log"
    with serve(var_dir, log) as running:
        yield running


def rpc(
    client: httpx.Client, url: str, body: Any, headers: dict[str, str] | None = None
) -> httpx.Response:
    sent = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    sent.update(PROTOCOL if headers is None else headers)
    return client.post(f"{url}/api/mcp", content=json.dumps(body), headers=sent)


def result_of(response: httpx.Response, rid: Any, session: bool = False) -> dict[str, Any]:
    """A result; ``session``: it carries a 2025-11-25 session id (an initialize, SUB2)."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert ("mcp-session-id" in response.headers) is session
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] == rid and "error" not in body, body
    return dict(body["result"])


# --- the endpoint as the transport tests expect it ----------------------------------------------


def test_initialize_ping_list_and_read(server: Running) -> None:
    with httpx.Client(timeout=10) as client:
        init = {
            "jsonrpc": "2.0",
            "id": "a",
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "serve-tests", "version": "1"},
            },
        }
        issued = set()
        for _ in range(2):  # built on a thread, then prepared in the loop: the same answer
            reply = rpc(client, server.url, init, {})
            answered = result_of(reply, "a", session=True)
            assert answered["protocolVersion"] == "2025-11-25"
            assert answered["serverInfo"]["name"]
            issued.add(reply.headers["mcp-session-id"])
        assert len(issued) == 2  # a new session each time, prepared answer or not
        for rid in (1, 2):
            assert (
                result_of(
                    rpc(client, server.url, {"jsonrpc": "2.0", "id": rid, "method": "ping"}), rid
                )
                == {}
            )
        tools = result_of(
            rpc(client, server.url, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}), 3
        )
        assert {"overview", "resolve"} <= {tool["name"] for tool in tools["tools"]}
        read = {"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": README}}
        contents = result_of(rpc(client, server.url, read), 4)["contents"]
        assert contents[0]["uri"] == README
        assert contents[0]["text"] == (ROOT / "docs" / "README.md").read_text()


def test_errors_notifications_and_batches(server: Running) -> None:
    with httpx.Client(timeout=10) as client:
        missing = rpc(client, server.url, {"jsonrpc": "2.0", "id": 5, "method": "no/such"})
        assert missing.status_code == 200
        assert missing.json()["error"]["code"] == -32601 and missing.json()["id"] == 5
        notified = rpc(
            client, server.url, {"jsonrpc": "2.0", "method": "notifications/initialized"}
        )
        assert notified.status_code == 202 and notified.content == b""
        batch = [{"jsonrpc": "2.0", "id": 6, "method": "ping"}]
        refused = rpc(client, server.url, batch)
        assert refused.status_code == 400
        assert refused.json()["error"]["code"] == -32600 and "id" not in refused.json()
        assert (
            "batches are not accepted under protocol 2025-11-25"
            in refused.json()["error"]["message"]
        )
        old = rpc(client, server.url, batch, {"MCP-Protocol-Version": "2025-03-26"})
        assert old.status_code == 200 and old.json() == [{"jsonrpc": "2.0", "id": 6, "result": {}}]
        broken = client.post(
            f"{server.url}/api/mcp", content=b"{", headers={"Content-Type": "application/json"}
        )
        assert broken.status_code == 400 and broken.json()["error"]["code"] == -32700


def test_an_event_stream_client_gets_json_and_get_opens_no_stream(server: Running) -> None:
    with httpx.Client(timeout=10) as client:
        sse_first = {"Accept": "text/event-stream, application/json", **PROTOCOL}
        answer = rpc(client, server.url, {"jsonrpc": "2.0", "id": 7, "method": "ping"}, sse_first)
        assert result_of(answer, 7) == {}
        stream = client.get(f"{server.url}/api/mcp", headers={"Accept": "text/event-stream"})
        assert stream.status_code == 405 and stream.headers["allow"] == "POST"
        assert stream.json()["error"]["code"] == -32600
        only_sse = rpc(
            client,
            server.url,
            {"jsonrpc": "2.0", "id": 8, "method": "ping"},
            {"Accept": "text/event-stream", **PROTOCOL},
        )
        assert only_sse.status_code == 406


def test_the_site_and_rest_are_served_too(server: Running) -> None:
    with httpx.Client(timeout=10) as client:
        home = client.get(f"{server.url}/")
        assert home.status_code == 200 and "text/html" in home.headers["content-type"]
        health = client.get(f"{server.url}/api/v1/health")
        assert health.status_code == 200 and health.json()["status"] in ("ok", "degraded")
        head = client.head(f"{server.url}/")
        assert head.status_code == 200 and head.content == b""


# --- slow clients ---------------------------------------------------------------------------------


SLOW_HEAD = (
    b"POST /api/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    b"Content-Length: 40\r\n\r\n"
)
SLOW_BODY = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'


def _trickle(port: int, first: bytes, trickled: bytes, limit: float) -> tuple[float, bytes]:
    """Send ``first`` at once, then ``trickled`` one byte a second until the server answers or
    closes (at most ``limit`` seconds); returns the seconds it stayed open and what came back.
    """
    started = time.monotonic()
    received = b""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        if first:
            sock.sendall(first)
        sock.settimeout(1.0)
        for byte in trickled:
            try:
                sock.sendall(bytes([byte]))
                chunk = sock.recv(65536)
            except TimeoutError:  # a second went by: the next byte
                continue
            except OSError:
                break
            if not chunk:
                break
            received += chunk
            if time.monotonic() - started > limit:
                break
        sock.settimeout(2.0)
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except OSError:
            pass
    return time.monotonic() - started, received


def test_slow_clients_hold_no_thread_and_meet_their_deadlines(server: Running) -> None:
    """16 connections trickle their headers and 16 their bodies, one byte a second, while
    ordinary reads keep answering quickly; the header deadline closes the first, the body
    deadline answers the others 408 and closes them."""
    port = int(server.url.rsplit(":", 1)[1])
    slow = 16
    with ThreadPoolExecutor(2 * slow) as pool:
        by_head = [pool.submit(_trickle, port, b"", SLOW_HEAD + SLOW_BODY, 60) for _ in range(slow)]
        by_body = [pool.submit(_trickle, port, SLOW_HEAD, SLOW_BODY, 60) for _ in range(slow)]
        time.sleep(1.0)
        took: list[float] = []
        with httpx.Client(timeout=10) as client:
            read = {
                "jsonrpc": "2.0",
                "id": 9,
                "method": "resources/read",
                "params": {"uri": README},
            }
            for _ in range(40):
                started = time.monotonic()
                result_of(rpc(client, server.url, read), 9)
                took.append(time.monotonic() - started)
        heads = [future.result() for future in by_head]
        bodies = [future.result() for future in by_body]
    assert max(took) < 1.0, sorted(took)[-5:]
    for stayed, answer in heads:
        assert stayed < HEADER_TIMEOUT + 3, (stayed, answer)
        assert b" 200 " not in answer, answer
    for stayed, answer in bodies:
        assert BODY_TIMEOUT - 0.5 < stayed < BODY_TIMEOUT + 3, (stayed, answer)
        head, _, payload = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 408"), answer
        assert json.loads(payload)["error"] == {
            "code": -32600,
            "message": "The request body did not arrive in time.",
        }


# --- a worker's exit, the start-up checks ------------------------------------------------------


def test_a_stopped_worker_writes_its_buffered_rows(tmp_path: Path) -> None:
    """With batches too large and too slow to be written by themselves, SIGTERM writes them.

    On a database of its own: the module's is written by the other tests' servers, whose
    workers may still be writing their last rows when this one starts.
    """
    own = tmp_path / "var"
    migrate(server_env(own))
    with serve(
        own, tmp_path / "log", TM_LOG_FLUSH_ROWS="100000", TM_LOG_FLUSH_SECONDS="3600"
    ) as running:
        before = len(running.rows())
        with httpx.Client(timeout=10) as client:
            for rid in range(25):
                result_of(
                    rpc(client, running.url, {"jsonrpc": "2.0", "id": rid, "method": "ping"}), rid
                )
        assert len(running.rows()) == before  # all of them still buffered
        assert stop(running.process) == 0
    rows = running.rows()[before:]
    assert rows == [("ping", "ok", 200)] * 25


def test_a_failing_start_up_check_stops_the_start(tmp_path: Path) -> None:
    env = server_env(tmp_path / "var", TM_DATABASE_URL="mysql://nowhere/tm")
    done = subprocess.run(
        [sys.executable, "-m", "tmsite.serve", "--port", str(free_port())],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert "the start-up checks failed" in done.stderr
    assert "tm.E002" in done.stderr
