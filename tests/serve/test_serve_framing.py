"""How the default server reads a request's body and its framing, for real: ``python -m
tmsite.serve`` on loopback, httpx streaming its bodies and raw sockets.

* A chunked body (``Transfer-Encoding: chunked``, no ``Content-Length``: what a client that
  streams its body sends) is read whole, by the MCP endpoint in the event loop and on a
  thread, by REST and the site alike: each answer is the one the same body gets with a
  ``Content-Length``. Past 4 MiB an MCP body gets the endpoint's own 413, past 16 MiB another
  URL's body the site's.
* Both ``Content-Length`` and ``Transfer-Encoding``, in either order: granian (hyper) never
  passes such a request on as it came; it drops the ``Content-Length``, reads the body by its
  chunks and closes the connection after the one answer, so what followed the body on that
  connection is never read as a request. A body that is not chunked after all (the chunked
  framing broken) is answered 400, with the connection closed, never a bare 500. nginx in front
  (``deploy/nginx/``) answers 400 itself, in either order, before tmsite sees anything. Where
  a server would pass both on, the application refuses the request 400 itself.
* A ``Host`` not served is refused as before (400) on every request, and its log line is one
  line, no traceback, written at most once a window, saying how many it left out.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import time
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import wire_schema
from tests.oplog.servers import Machine, json_lines, migrate, nginx, server_env, serving

pytestmark = [pytest.mark.spec("T1", "T2", "OP2", "OP5"), pytest.mark.slow]

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
REFUSALS_EVERY = 3.0  # seconds between two log lines about a Host not served
BAD_HOST = "not-served.example"
MCP_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-11-25",
}


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Machine, Path]]:
    where = tmp_path_factory.mktemp("framing")
    env = server_env(where / "var", TM_LOG_HOST_REFUSALS_EVERY=str(REFUSALS_EVERY))
    migrate(env)
    log = where / "serve.log"
    with serving(env, workers=1, log=log, threads=4) as running:
        yield running, log


def _pieces(body: bytes, size: int = 7) -> Iterator[bytes]:
    """``body`` in pieces: httpx sends an iterator chunked, without a Content-Length."""
    for at in range(0, len(body), size):
        yield body[at : at + size]


def _padded(body: bytes, size: int) -> Iterator[bytes]:
    """``body`` followed by blanks up to ``size`` bytes (JSON allows them), in 64 KiB pieces."""
    yield body
    left = size - len(body)
    while left > 0:
        step = min(65536, left)
        yield b" " * step
        left -= step


def _both_ways(
    client: httpx.Client, url: str, body: bytes, headers: dict[str, str]
) -> tuple[httpx.Response, httpx.Response]:
    """The answer to ``body`` sent with a Content-Length, and sent chunked."""
    whole = client.post(url, content=body, headers=headers)
    chunked = client.post(url, content=_pieces(body), headers=headers)
    assert chunked.request.headers.get("transfer-encoding") == "chunked"
    assert "content-length" not in chunked.request.headers
    return whole, chunked


def _checked(reply: httpx.Response, sent: bytes) -> None:
    """The answer against the protocol schema (``sent``: the body, sent in chunks)."""
    wire_schema.check_http(
        reply.request.headers, sent, reply.headers.get("content-type", ""), reply.content
    )


# --- chunked bodies -----------------------------------------------------------------------------


def test_a_chunked_mcp_body_is_read_in_the_loop_and_on_a_thread(
    machine: tuple[Machine, Path],
) -> None:
    running, _ = machine
    url = f"{running.url}/api/mcp"
    bodies = [
        PING,  # answered in the event loop once prepared
        {"jsonrpc": "2.0", "id": "n", "method": "no/such"},  # answered on a thread
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "resources/read",
            "params": {"uri": "tm://tinymachines/fs/docs/README.md"},
        },
    ]
    with httpx.Client(timeout=30) as client:
        client.post(url, json=PING, headers=MCP_HEADERS)  # the ping's answer is prepared now
        answers = []
        for body in bodies:
            raw = json.dumps(body).encode()
            whole, chunked = _both_ways(client, url, raw, MCP_HEADERS)
            _checked(chunked, raw)
            assert chunked.status_code == whole.status_code == 200, chunked.text
            assert chunked.json() == whole.json()
            answers.append(chunked.json())
    assert answers[0] == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert answers[1]["id"] == "n" and answers[1]["error"]["code"] == -32601
    assert answers[2]["result"]["contents"][0]["uri"] == "tm://tinymachines/fs/docs/README.md"


def test_a_chunked_rest_body_is_read(machine: tuple[Machine, Path]) -> None:
    running, _ = machine
    raw = json.dumps({"kind": "address"}).encode()  # refused for its missing fields, not "kind"
    with httpx.Client(timeout=30) as client:
        whole, chunked = _both_ways(
            client, f"{running.url}/api/v1/proposals", raw, {"Content-Type": "application/json"}
        )
    assert chunked.status_code == whole.status_code
    assert chunked.json() == whole.json()
    assert chunked.json().get("field") != "kind", chunked.json()


def test_a_chunked_body_past_the_limit_gets_the_usual_413(machine: tuple[Machine, Path]) -> None:
    running, _ = machine
    head = json.dumps(PING).encode()
    with httpx.Client(timeout=60) as client:
        announced = client.post(
            f"{running.url}/api/mcp",
            content=b"".join(_padded(head, 6_000_000)),
            headers=MCP_HEADERS,
        )
        chunked = client.post(
            f"{running.url}/api/mcp", content=_padded(head, 6_000_000), headers=MCP_HEADERS
        )
        ping = client.post(  # the same client goes on
            f"{running.url}/api/mcp", content=_pieces(head), headers=MCP_HEADERS
        )
        site = client.post(
            f"{running.url}/api/v1/proposals",
            content=_padded(b'{"kind":"address"', 17_000_000),
            headers={"Content-Type": "application/json"},
        )
    assert announced.status_code == chunked.status_code == 413, chunked.text[:300]
    assert chunked.json() == announced.json()
    # the rest of the body is never read: the connection is not offered for another request
    assert announced.headers["connection"] == chunked.headers["connection"] == "close"
    assert chunked.json() == {
        "jsonrpc": "2.0",
        "error": {"code": -32600, "message": "The body is larger than 4 MiB."},
    }
    assert ping.status_code == 200 and ping.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert site.status_code == 413 and site.text == "The request body is too large.\n"


# --- Content-Length and Transfer-Encoding -------------------------------------------------------

BODY = json.dumps(PING).encode()
CHUNKED = b"%x\r\n" % len(BODY) + BODY + b"\r\n0\r\n\r\n"
SMUGGLED = b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
ORDERS = {
    "length-first": (f"Content-Length: {len(BODY)}", "Transfer-Encoding: chunked"),
    "coding-first": ("Transfer-Encoding: chunked", f"Content-Length: {len(BODY)}"),
}


def _exchange(port: int, request: bytes, seconds: float = 10.0) -> bytes:
    """Send ``request`` on a new loopback connection; everything read until the server closes
    it (or ``seconds`` pass)."""
    answer = b""
    with socket.create_connection(("127.0.0.1", port), timeout=seconds) as sock:
        sock.sendall(request)
        end = time.monotonic() + seconds
        try:
            while time.monotonic() < end and (chunk := sock.recv(65536)):
                answer += chunk
        except OSError:
            pass
    return answer


def _settled_lines(log: Path, seconds: float = 5.0) -> int:
    """How many JSON request lines the log holds once no more are coming (the lines' writer
    writes a request's line a moment after its answer)."""
    count = len(json_lines(log))
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.3)
        now = len(json_lines(log))
        if now == count:
            return count
        count = now
    return count


def _request(framing: tuple[str, ...], payload: bytes, path: str = "/api/mcp") -> bytes:
    lines = [
        f"POST {path} HTTP/1.1",
        "Host: 127.0.0.1",
        "Content-Type: application/json",
        "Accept: application/json",
        *framing,
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + payload


def _answers(raw: bytes) -> list[tuple[int, dict[str, str], bytes]]:
    """Each HTTP/1.1 answer in ``raw``: status, headers (lower-cased), body."""
    found = []
    while raw.startswith(b"HTTP/1.1 "):
        head, _, rest = raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = dict(
            (name.strip().lower(), value.strip())
            for name, value in (line.split(":", 1) for line in lines[1:])
        )
        size = int(headers.get("content-length", "0"))
        found.append((int(lines[0].split()[1]), headers, rest[:size]))
        raw = rest[size:]
    return found


@pytest.mark.parametrize("order", sorted(ORDERS))
def test_both_framings_on_granian_are_read_by_the_chunks_alone_and_end_the_connection(
    machine: tuple[Machine, Path], order: str
) -> None:
    """granian's behaviour (hyper's, RFC 9112 §6.3): the Content-Length is dropped before the
    application sees the request, the body read by its chunks, the connection closed after one
    answer; the request sent after the body on the same connection is never answered."""
    running, _ = machine
    answers = _answers(_exchange(running.port, _request(ORDERS[order], CHUNKED + SMUGGLED)))
    assert len(answers) == 1, answers
    status, headers, body = answers[0]
    assert headers["connection"] == "close"
    assert (status, json.loads(body)) == (200, {"jsonrpc": "2.0", "id": 1, "result": {}})


@pytest.mark.parametrize("path", ["/api/mcp", "/api/v1/proposals"])
@pytest.mark.parametrize("order", sorted(ORDERS))
def test_a_body_that_breaks_its_chunked_framing_is_a_400_not_a_500(
    machine: tuple[Machine, Path], order: str, path: str
) -> None:
    """The body follows the Content-Length, not the chunks it announces: granian's body stream
    fails (it tells the application ``http.disconnect``); the answer is the application's 400,
    with the connection closed, not the 500 granian gives an application that answered
    nothing."""
    running, log = machine
    before = _settled_lines(log)
    answers = _answers(_exchange(running.port, _request(ORDERS[order], BODY, path)))
    assert len(answers) == 1, answers
    status, headers, body = answers[0]
    assert status == 400 and headers["connection"] == "close"
    message = "The request body could not be read to its end."
    if path == "/api/mcp":
        assert json.loads(body) == {
            "jsonrpc": "2.0",
            "error": {"code": -32600, "message": message},
        }
    else:
        assert body == message.encode() + b"\n"
    _settled_lines(log)
    outcomes = [(line["outcome"], line["status"]) for line in json_lines(log)[before:]]
    assert outcomes == [("http-400", 400)]


def test_a_transfer_coding_not_served_is_a_501(machine: tuple[Machine, Path]) -> None:
    """granian passes ``gzip, chunked`` on with the body out of its chunks but still gzipped;
    the application does not take it for plain JSON."""
    running, _ = machine
    answers = _answers(
        _exchange(running.port, _request(("Transfer-Encoding: gzip, chunked",), CHUNKED))
    )
    assert [(status, json.loads(body)["error"]["message"]) for status, _, body in answers] == [
        (501, "The only transfer coding served is chunked.")
    ]


@pytest.mark.parametrize("order", sorted(ORDERS))
def test_nginx_in_front_refuses_both_framings_itself(
    machine: tuple[Machine, Path], order: str, tmp_path: Path
) -> None:
    """nginx's behaviour with the documented config: 400 in either order, whichever body
    follows, and the request never reaches tmsite (no request line is written)."""
    running, log = machine
    before = _settled_lines(log)
    with nginx([running.url], tmp_path / "nginx") as front:
        port = int(front.rsplit(":", 1)[1])
        for payload in (CHUNKED + SMUGGLED, BODY):
            answers = _answers(_exchange(port, _request(ORDERS[order], payload)))
            assert [status for status, _, _ in answers] == [400], answers
        chunked = httpx.post(
            f"{front}/api/mcp", content=_pieces(BODY), headers=MCP_HEADERS, timeout=10
        )
        assert chunked.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    _settled_lines(log)
    reached = [(line["surface"], line["outcome"]) for line in json_lines(log)[before:]]
    assert ("mcp-http", "ok") in reached  # the chunked ping
    assert [outcome for _, outcome in reached if outcome != "ok"] == []


@pytest.mark.django_db(transaction=True)
def test_the_application_refuses_both_framings_where_a_server_passes_them_on() -> None:
    """granian (and uvicorn) never pass both on; the application does not rely on that."""
    from tmsite.oplog import recorder
    from tmsite.oplog.models import RequestLog
    from tmsite.serve.app import Application

    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": CHUNKED, "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/api/mcp",
        "query_string": b"",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(BODY)).encode()),
            (b"transfer-encoding", b"chunked"),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
    asyncio.run(Application()(scope, receive, send))
    assert sent[0]["status"] == 400
    assert (b"connection", b"close") in sent[0]["headers"]
    assert json.loads(sent[1]["body"])["error"] == {
        "code": -32600,
        "message": "The request has both Content-Length and Transfer-Encoding.",
    }
    recorder.flush()
    assert list(RequestLog.objects.values_list("method", "outcome", "status")) == [
        ("", "http-400", 400)
    ]


# --- a Host not served ----------------------------------------------------------------------------


def test_a_host_not_served_is_one_line_at_most_every_window(
    machine: tuple[Machine, Path],
) -> None:
    running, log = machine
    offset = len(log.read_bytes())
    long_host = "x" * 3000 + ".example"

    def burst(host: str, times: int) -> list[int]:
        statuses = []
        with httpx.Client(timeout=10, headers={"Host": host}) as client:
            for index in range(times):
                reply = [
                    lambda: client.post(f"{running.url}/api/mcp", json=PING, headers=MCP_HEADERS),
                    lambda: client.get(f"{running.url}/api/v1/health"),
                    lambda: client.get(f"{running.url}/"),
                ][index % 3]()
                if reply.request.url.path == "/api/mcp":
                    assert reply.json()["error"]["message"] == "This Host is not served here."
                statuses.append(reply.status_code)
        return statuses

    started = time.monotonic()
    assert burst(BAD_HOST, 30) == [400] * 30
    assert time.monotonic() - started < REFUSALS_EVERY, "the burst outlasted the window"
    time.sleep(REFUSALS_EVERY + 0.5)
    assert burst(long_host, 1) == [400]
    time.sleep(0.5)
    text = log.read_bytes()[offset:].decode(errors="replace")
    assert "Traceback" not in text and "DisallowedHost" not in text, text[:2000]
    lines = [line for line in text.splitlines() if "Invalid HTTP_HOST header" in line]
    assert len(lines) == 2, lines
    assert BAD_HOST in lines[0] and not lines[0].endswith("not written)")
    assert re.search(r"\(29 more like it since the last such line, not written\)$", lines[1])
    assert len(lines[1]) < 400 and "x" * 200 in lines[1]  # the long Host cut short
