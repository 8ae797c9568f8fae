"""The default server's limits on slow and greedy clients, for real: a launcher on loopback and
real sockets that trickle their bodies or hold requests open.

* A body that falls below the minimum rate after the grace is answered 408 ("arrived too
  slowly") as soon as it falls behind, long before the whole-body deadline; one that keeps the
  rate is answered in full.
* One caller (the address a trusted proxy forwards) may have only so many requests in flight:
  the next is refused at once with 429, ``Retry-After`` and the JSON refusal of its surface,
  while another caller and the box's own loopback calls are answered; once the caller's
  requests end, it is answered again.
* Each 408 and 429 leaves a request-log row with its outcome and status, and nothing of the
  caller: no address in the rows nor in the server's log.
"""

from __future__ import annotations

import json
import socket
import sqlite3
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.oplog.servers import Machine, migrate, server_env, serving

pytestmark = [pytest.mark.spec("OP1", "OP2", "OP5"), pytest.mark.slow]

RATE = 200  # bytes a second a body must average after the grace
GRACE = 1.5
CAP = 3
CALLER = "203.0.113.7"
OTHER = "198.51.100.9"


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Machine, Path, Path]]:
    where = tmp_path_factory.mktemp("guard")
    env = server_env(
        where / "var",
        TM_BODY_TIMEOUT="30",
        TM_BODY_MIN_RATE=str(RATE),
        TM_BODY_RATE_GRACE=str(GRACE),
        TM_CALLER_MAX_REQUESTS=str(CAP),
        TM_LOG_FLUSH_ROWS="1",
        TM_LOG_FLUSH_SECONDS="0.2",  # the flusher writes a row queued in the loop at once
    )
    migrate(env)
    log = where / "serve.log"
    with serving(env, workers=1, log=log, threads=4) as running:
        yield running, log, where / "var" / "tmsite.sqlite3"


def _head(length: int, path: str = "/api/mcp", forwarded: str | None = CALLER) -> bytes:
    lines = [
        f"POST {path} HTTP/1.1",
        "Host: 127.0.0.1",
        "Content-Type: application/json",
        "Accept: application/json",
        "MCP-Protocol-Version: 2025-11-25",
        f"Content-Length: {length}",
    ]
    if forwarded is not None:
        lines.append(f"X-Forwarded-For: {forwarded}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _ping(rid: int, size: int) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "ping"}).encode()
    return body + b" " * (size - len(body))  # JSON allows the trailing blanks


def _trickle(port: int, body: bytes, per_second: float, step: int = 10) -> tuple[float, bytes]:
    """Send the head at once, then ``body`` ``step`` bytes at a time at ``per_second`` bytes a
    second until it is sent or the server answers; the seconds it took and the answer."""
    started = time.monotonic()
    answer = b""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(_head(len(body)))
        sock.setblocking(False)
        for at in range(0, len(body), step):
            try:
                sock.sendall(body[at : at + step])
            except OSError:
                break
            try:
                chunk = sock.recv(65536)
            except BlockingIOError:
                time.sleep(step / per_second)
                continue
            except OSError:
                break
            answer += chunk
            break
        sock.setblocking(True)
        sock.settimeout(30)
        try:
            while chunk := sock.recv(65536):
                answer += chunk
                if b"\r\n\r\n" in answer and _complete(answer):
                    break
        except OSError:
            pass
    return time.monotonic() - started, answer


def _complete(answer: bytes) -> bool:
    head, _, body = answer.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(body) >= int(line.split(b":", 1)[1])
    return False


def _rows(database: Path) -> list[tuple[str, str, str, int]]:
    with sqlite3.connect(database) as db:
        found = db.execute("SELECT surface, method, outcome, status FROM tm_oplog_requestlog")
        return [(str(s), str(m), str(o), int(t)) for s, m, o, t in found]


def test_a_body_below_the_minimum_rate_is_cut_early(machine: tuple[Machine, Path, Path]) -> None:
    running, _, database = machine
    before = len(_rows(database))
    with ThreadPoolExecutor(2) as pool:
        slow = pool.submit(_trickle, running.port, _ping(1, 400), RATE / 4)  # 16 s at this rate
        steady = pool.submit(_trickle, running.port, _ping(2, 400), RATE * 2)  # 1 s
        slow_took, slow_answer = slow.result()
        steady_took, steady_answer = steady.result()
    head, _, payload = slow_answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408"), slow_answer[:300]
    assert json.loads(payload)["error"] == {
        "code": -32600,
        "message": "The request body arrived too slowly.",
    }
    assert GRACE - 0.2 < slow_took < GRACE + 3, slow_took  # not the 30 s whole-body deadline
    head, _, payload = steady_answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), steady_answer[:300]
    assert json.loads(payload) == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert steady_took < 5
    time.sleep(1.0)  # the flusher writes the rows
    assert sorted(_rows(database)[before:]) == [
        ("mcp-http", "", "http-408", 408),
        ("mcp-http", "ping", "ok", 200),
    ]


def test_a_caller_past_its_cap_is_refused_at_once(machine: tuple[Machine, Path, Path]) -> None:
    running, log, database = machine
    before = len(_rows(database))
    held = _ping(3, 600)  # 600 bytes at 1.5 × the rate: in flight for 2 s
    with ThreadPoolExecutor(CAP) as pool, httpx.Client(timeout=10) as client:
        holders = [pool.submit(_trickle, running.port, held, RATE * 1.5) for _ in range(CAP)]
        time.sleep(0.5)  # every holder's request is in flight
        ping = {"jsonrpc": "2.0", "id": 9, "method": "ping"}
        started = time.monotonic()
        refused = client.post(
            f"{running.url}/api/mcp", json=ping, headers={"X-Forwarded-For": CALLER}
        )
        took = time.monotonic() - started
        rest = client.get(
            f"{running.url}/api/v1/resolve",
            params={"uri": "tm://tinymachines/fs/docs/index.md"},
            headers={"X-Forwarded-For": CALLER},
        )
        other = client.post(f"{running.url}/api/mcp", json=ping, headers={"X-Forwarded-For": OTHER})
        own = client.post(f"{running.url}/api/mcp", json=ping)  # loopback, no proxy: exempt
        answers = [future.result() for future in holders]
        again = client.post(
            f"{running.url}/api/mcp", json=ping, headers={"X-Forwarded-For": CALLER}
        )
    assert refused.status_code == 429 and took < 1.0
    assert refused.headers["retry-after"] == "1"
    assert refused.json() == {
        "jsonrpc": "2.0",
        "error": {
            "code": -32000,
            "message": f"Too many requests at once from this caller: at most {CAP} may be in "
            "flight; retry after 1 seconds.",
            "data": {"reason": "rate-limited", "retryAfter": 1},
        },
    }
    assert rest.status_code == 429 and rest.headers["retry-after"] == "1"
    assert rest.json()["reason"] == "rate-limited" and rest.json()["retryAfter"] == 1
    for reply in (other, own, again):
        assert reply.status_code == 200 and reply.json()["result"] == {}, reply.text
    for _, answer in answers:
        assert answer.startswith(b"HTTP/1.1 200"), answer[:300]
    time.sleep(1.0)
    rows = sorted(_rows(database)[before:])
    assert rows == sorted(
        [("mcp-http", "ping", "ok", 200)] * (CAP + 3)
        + [("mcp-http", "", "rate-limited", 429), ("rest", "", "rate-limited", 429)]
    )
    with sqlite3.connect(database) as db:
        every = " ".join(str(row) for row in db.execute("SELECT * FROM tm_oplog_requestlog"))
    assert CALLER not in every and OTHER not in every
    text = log.read_text(errors="replace")
    assert '"outcome":"rate-limited"' in text.replace(" ", "")
    assert CALLER not in text and OTHER not in text
