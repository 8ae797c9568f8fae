"""No log of the deployed box holds a caller's address: not gunicorn's own lines about a
malformed request, not Django's about a disallowed host, not nginx's error log.

Real servers over loopback sockets; every caller here is 127.0.0.1, so any ``127.0.0.1`` in a
log (outside the fields naming the machines themselves) is a caller's address written down.
"""

from __future__ import annotations

import logging
import runpy
import socket
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from tests.oplog.servers import ROOT, gunicorn, migrate, nginx, refusing_port, server_env

pytestmark = pytest.mark.spec("OP2", "OP5")

MALFORMED = [
    b"GARBAGE\r\n\r\n",  # no method, target and version
    b"GET /docs HTTP/7.1\r\nHost: 127.0.0.1\r\n\r\n",  # a version gunicorn does not speak
    b"GET /docs HTTP/1.1\r\nHost: 127.0.0.1\r\nno colon here\r\n\r\n",  # a broken header
]


def _raw(base: str, request: bytes) -> bytes:
    """Send ``request`` as it is over a fresh connection; what came back until it closed."""
    host, _, port = base.removeprefix("http://").rpartition(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        sock.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def _filter() -> logging.Filter:
    conf = runpy.run_path(str(ROOT / "deploy" / "gunicorn.conf.py"))
    return conf["_NO_CALLER_ADDRESS"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("ip", ["127.0.0.1", "::1", "2001:db8::7", "::ffff:203.0.113.7"])
def test_the_filter_takes_the_address_out_whatever_its_family(ip: str) -> None:
    record = logging.LogRecord("gunicorn.error", logging.WARNING, __file__, 1, "%s", ("x",), None)
    record.msg, record.args = "Invalid request from ip={ip}: Invalid HTTP Version 'HTTP/7.1'", ()
    record.msg = record.msg.format(ip=ip)
    assert _filter().filter(record)
    assert record.getMessage() == "Invalid request: Invalid HTTP Version 'HTTP/7.1'"


@pytest.mark.slow
def test_gunicorn_and_django_lines_about_bad_requests_hold_no_address(tmp_path: Path) -> None:
    env = server_env(tmp_path / "var")
    migrate(env)
    log = tmp_path / "gunicorn.log"
    with gunicorn(env, workers=1, log=log, threads=None) as base:
        answers = [_raw(base, request) for request in MALFORMED]
        stranger = httpx.get(f"{base}/docs", headers={"Host": "evil.example"}, timeout=10)
    assert all(answer.startswith(b"HTTP/1.1 400 ") for answer in answers), answers
    assert stranger.status_code == 400
    text = log.read_text(errors="replace")
    # the lines were written (so the check below looks at something) ...
    assert text.count("Invalid request: ") == len(MALFORMED), text
    assert "Invalid HTTP_HOST header: 'evil.example'" in text
    # ... and none of them says who asked
    assert "127.0.0.1" not in text and "ip=" not in text, text


@pytest.mark.slow
def test_nginx_error_log_holds_no_client_address(tmp_path: Path) -> None:
    """nginx in front of a machine that answers and one that is down: every request first
    sent to the dead one is retried on the other (an error nginx logs with ``client:`` at
    its default level), a body too large is refused; the error log keeps none of it, the
    upstream log says what happened without the caller."""
    env = server_env(tmp_path / "var")
    migrate(env)
    with ExitStack() as stack:
        dead = f"http://127.0.0.1:{stack.enter_context(refusing_port())}"  # nothing listens
        live = stack.enter_context(gunicorn(env, workers=1, log=tmp_path / "g.log"))
        front = stack.enter_context(nginx([dead, live], tmp_path / "nginx"))
        for _ in range(4):
            assert httpx.get(f"{front}/api/v1/health", timeout=10).status_code == 200
        big = httpx.post(f"{front}/api/mcp", content=b"x" * (5 << 20), timeout=30)
        assert big.status_code == 413
        assert _raw(front, b"NOT-A-REQUEST\r\n\r\n").startswith(b"HTTP/1.1 400 ")
    errors = (tmp_path / "nginx" / "error.log").read_text(errors="replace")
    assert "client:" not in errors and "127.0.0.1" not in errors, errors
    upstream = (tmp_path / "nginx" / "tmsite-upstream.log").read_text().splitlines()
    retried = [line for line in upstream if "upstream_status=502, 200" in line]
    assert retried, upstream  # the dead machine was tried and the live one answered
    for line in upstream:
        assert " GET /api/v1/health status=200 upstream=" in line, line
        # the machines' addresses are the only ones in it
        fields = line.split(" upstream_status=")[0].split(" upstream=")
        assert "127.0.0.1" not in fields[0]
