"""The client's ``subscriptions/listen`` stream against the official SDK server (a real uvicorn
process on loopback): the acknowledgement with the listen's subscription id, a hang-up from
another thread, the read deadline on a silent stream, and no listen in the 2025 era."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from tests.peers.processes import HttpPeer
from tmsite.core.addresses import DialPolicy
from tmsite.mcpclient import Client, Hangup, ProtocolError, Timeout

pytestmark = [pytest.mark.slow, pytest.mark.spec("SUB3", "MCP")]
ACK = "notifications/subscriptions/acknowledged"


def test_a_listen_is_acknowledged_and_a_hangup_ends_it(sdk_stateless: HttpPeer) -> None:
    told: list[tuple[str, dict[str, Any]]] = []
    hangup = Hangup()
    policy = DialPolicy.of(["127.0.0.1"])  # through the judged connections, as a record's are
    with Client.http(sdk_stateless.url(), policy=policy) as client:
        acked = threading.Event()

        def each(method: str, params: dict[str, Any]) -> None:
            told.append((method, params))
            acked.set()

        threading.Thread(target=lambda: (acked.wait(10), hangup()), daemon=True).start()
        started = time.monotonic()
        ended = client.listen({"toolsListChanged": True}, each, hangup, read_seconds=20)
        assert ended == "hung up"
        assert time.monotonic() - started < 5, "the hang-up ended the read at once"
    [(method, params)] = told
    assert method == ACK
    assert params["notifications"] == {"toolsListChanged": True}
    sid = params["_meta"]["io.modelcontextprotocol/subscriptionId"]
    assert isinstance(sid, int)


def test_a_silent_stream_ends_at_the_read_deadline(sdk_stateless: HttpPeer) -> None:
    with Client.http(sdk_stateless.url()) as client:
        started = time.monotonic()
        with pytest.raises(Timeout) as caught:
            client.listen({"toolsListChanged": True}, lambda m, p: None, Hangup(), read_seconds=1)
        assert 0.9 <= time.monotonic() - started < 5
    assert caught.value.method == "subscriptions/listen"


def test_no_listen_in_the_2025_era(sdk_stateless: HttpPeer) -> None:
    with Client.http(sdk_stateless.url(), mode="initialize") as client:
        assert client.handshake().era == "initialize"
        with pytest.raises(ProtocolError, match="needs 2026-07-28 over HTTP"):
            client.listen({"toolsListChanged": True}, lambda m, p: None, Hangup())
