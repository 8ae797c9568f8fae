"""A listener that vanishes frees its slot on the real server, ``python -m tmsite.serve``.

granian, not the in-process server of the other tests: its worker must notice a connection
reset while the stream sends nothing (no keep-alive is due), and give the caller's stream back.
What is observed is the cap itself: one stream per caller, so a second listen is refused until
the first one's slot is free.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from tests.oplog.servers import migrate, server_env, serving
from tests.subscriptions.helpers import listen_body, raw_listen, reset_connection

pytestmark = [pytest.mark.spec("SUB1"), pytest.mark.slow]


def _listen(base: str, rid: str) -> tuple[socket.socket, dict[str, Any]]:
    """A listen over a raw socket: the socket and its first message (ack or refusal)."""
    sock = raw_listen(f"{base}/api/mcp", listen_body(rid))
    got = b""
    while True:
        chunk = sock.recv(65536)
        assert chunk, f"the answer ended early: {got!r}"
        got += chunk
        _, _, body = got.partition(b"\r\n\r\n")
        start = body.find(b"{")
        end = body.rfind(b"}")
        if start >= 0 and end > start:
            try:
                return sock, json.loads(body[start : end + 1])
            except ValueError:
                continue


def test_a_reset_listener_gives_its_callers_stream_back(tmp_path: Path) -> None:
    env = server_env(
        tmp_path / "var",
        TM_LISTEN_STREAMS_PER_CALLER="1",
        TM_LISTEN_KEEPALIVE="60",
        TM_LOG_LEVEL="WARNING",
    )
    migrate(env)
    with serving(env, 1, tmp_path / "serve.log", threads=2) as machine:
        first, ack = _listen(machine.url, "first")
        assert ack["method"] == "notifications/subscriptions/acknowledged", ack
        second, refusal = _listen(machine.url, "second")
        second.close()
        assert refusal["error"]["data"] == {
            "reason": "too-many-streams",
            "cap": "streams-per-caller",
            "limit": 1,
        }
        reset_connection(first)  # the listener vanishes
        deadline = time.monotonic() + 5
        while True:
            third, message = _listen(machine.url, "third")
            if message.get("method") == "notifications/subscriptions/acknowledged":
                third.close()
                break
            third.close()
            assert message["error"]["data"]["cap"] == "streams-per-caller", message
            assert time.monotonic() < deadline, "the vanished listener still holds its slot"
            time.sleep(0.2)
        assert message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "third"
