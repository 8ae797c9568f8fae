"""A 2025-era HTTP peer's own notifications, told on the bus: a real server of the official
Python SDK 1.x (``session_peer.py``, stateful Streamable HTTP, on loopback) is met in a session
of its own while a URI of it is listened to; the listened resources are subscribed in that
session, its GET stream is held, and what it sends there reaches the bus as the matching
``tm://`` address. The session is ended (``DELETE``) when nothing listens any more; a stream the
server cuts is resumed with ``Last-Event-ID``; a peer that dies is met again, in a new session,
once it is back; a peer that offers no session stream (405) is not heard, nor asked again."""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.conf import settings

from tests.clients.sdk_clients import SDK_VENV, client_env
from tests.mcpmount.test_notices import Heard, hand_over, res
from tests.peers.processes import HttpPeer, start_http_peer, stop_http_peer
from tests.services import missing
from tests.subscriptions.helpers import SUB_ID, Events, listen_body, listen_headers
from tests.waiting import wait_until
from tmsite.bus import changes
from tmsite.core.uri import TmUri
from tmsite.mcpclient import http as mcphttp
from tmsite.servers.models import McpServer
from tmsite.servers.notices import PeerNotices
from tmsite.subscriptions import sources

pytestmark = [pytest.mark.slow, pytest.mark.spec("SUB3", "MCP")]

HOST = "test"
BASE = f"tm://{HOST}/mcp/"
PEER = Path(__file__).resolve().parent / "session_peer.py"
TOOLS = str(TmUri(HOST, "mcp", ("notes", "tools"), True))


def start_peer(directory: Path, port: int = 0) -> HttpPeer:
    """``session_peer.py`` under the SDK 1.x venv (skipped, naming ``make sdk-clients``)."""
    python = SDK_VENV / "bin" / "python"
    if not (SDK_VENV / ".installed").is_file() or not python.is_file():
        missing("the Python SDK 1.x is not installed", "make sdk-clients installs it")
    proc = subprocess.Popen(
        [str(python), "-B", str(PEER), str(directory), str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=client_env(),
        cwd=directory,
        start_new_session=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith(b"PORT "):
        stop_http_peer(HttpPeer(proc, 0))
        raise RuntimeError(f"session_peer.py did not start: {line!r}")
    return HttpPeer(proc, int(line.split()[1]))


@pytest.fixture
def peer_dir(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def session_peer(peer_dir: Path) -> Iterator[HttpPeer]:
    p = start_peer(peer_dir)
    yield p
    stop_http_peer(p)


@pytest.fixture(autouse=True)
def loopback_peers_allowed(settings: Any) -> None:
    """The peer listens on loopback: allowed as an operator allows a host."""
    settings.TM_MCP_ALLOWED_HOSTS = ["127.0.0.1"]


@pytest.fixture
def heard() -> Iterator[Heard]:
    got = Heard()
    remove = changes.add_listener(got)
    yield got
    remove()


@pytest.fixture
def notices() -> Iterator[PeerNotices]:
    made = PeerNotices(
        HOST, changes.publish, retry_seconds=(0.2, 1.0), read_seconds=20.0, reprobe_seconds=1.0
    )
    remove = changes.add_interest_watcher(made.interest)
    yield made
    remove()


def requests(directory: Path) -> list[dict[str, Any]]:
    path = directory / "requests.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def answered(directory: Path, verb: str, session: str | None = None) -> list[dict[str, Any]]:
    """The requests of ``verb`` the peer answered (of ``session``, when given)."""
    return [
        r
        for r in requests(directory)
        if r["verb"] == verb and "status" in r and session in (None, r["session"])
    ]


def subscriptions(directory: Path) -> list[tuple[str, str, str]]:
    return [
        (r["verb"], r["uri"], r["session"])
        for r in requests(directory)
        if r["verb"] in ("subscribe", "unsubscribe")
    ]


def record(url: str) -> McpServer:
    return McpServer.objects.create(
        name="notes", transport="http", url=url, start_timeout=10.0, call_timeout=10.0
    )


def session_of(notices: PeerNotices) -> str:
    client = notices.connected("notes")
    assert client is not None and client.handshake().era == "initialize"
    sid = client.session_id
    assert sid is not None
    return sid


@pytest.mark.django_db(transaction=True)
def test_a_session_peers_notifications_become_updates_of_its_addresses(
    session_peer: HttpPeer, peer_dir: Path, heard: Heard, notices: PeerNotices
) -> None:
    record(session_peer.url())
    with changes.listening([res("note://a"), TOOLS]):
        wait_until(lambda: notices.streaming("notes"))
        sid = session_of(notices)
        [get] = answered(peer_dir, "GET", sid)
        assert {k: get[k] for k in ("accept", "version", "last_event_id", "status")} == {
            "accept": "text/event-stream",
            "version": "2025-11-25",
            "last_event_id": None,
            "status": 200,
        }
        assert subscriptions(peer_dir) == [("subscribe", "note://a", sid)]
        hand_over(peer_dir, json.dumps({"updated": "note://a"}))
        heard.wait_for(res("note://a"))
        assert heard.uris == [res("note://a")]
        (peer_dir / "tools.json").write_text(json.dumps(["first", "second"]))
        hand_over(peer_dir, json.dumps({"tools_changed": True}))
        heard.wait_for(TOOLS)
        assert heard.uris == [res("note://a"), TOOLS]
        with changes.listening([res("note://b")]):
            # the listened set changed: subscribed in the same session, the stream stays
            wait_until(lambda: len(subscriptions(peer_dir)) == 2)
            assert subscriptions(peer_dir)[1] == ("subscribe", "note://b", sid)
            hand_over(peer_dir, json.dumps({"updated": "note://b"}))
            heard.wait_for(res("note://b"))
        wait_until(lambda: len(subscriptions(peer_dir)) == 3)
        assert subscriptions(peer_dir)[2] == ("unsubscribe", "note://b", sid)
        hand_over(peer_dir, json.dumps({"updated": "note://b"}))  # unsubscribed: not sent
        hand_over_and_wait(peer_dir, json.dumps({"updated": "note://a"}))
        wait_until(lambda: heard.uris.count(res("note://a")) == 2)
        assert len(answered(peer_dir, "GET", sid)) == 1, "one stream the whole time"
        assert answered(peer_dir, "DELETE", sid) == []
    # nothing listens any more: the session is ended, and said so to the peer
    wait_until(lambda: len(answered(peer_dir, "DELETE", sid)) == 1)
    [delete] = answered(peer_dir, "DELETE", sid)
    assert delete["status"] == 200
    assert heard.uris == [res("note://a"), TOOLS, res("note://b"), res("note://a")]
    assert notices.listened() == {}
    assert notices.connected("notes") is None
    assert not notices.streaming("notes")


def hand_over_and_wait(directory: Path, lines: str) -> None:
    """Hand ``lines`` over once the peer took what it was handed before."""
    wait_until(lambda: not (directory / "send.jsonl").exists())
    hand_over(directory, lines)


@pytest.mark.django_db(transaction=True)
def test_a_stream_the_peer_cuts_is_resumed_with_the_last_event_id(
    session_peer: HttpPeer, peer_dir: Path, heard: Heard, notices: PeerNotices
) -> None:
    record(session_peer.url())
    with changes.listening([res("note://a")]):
        wait_until(lambda: notices.streaming("notes"))
        sid = session_of(notices)
        hand_over(peer_dir, json.dumps({"updated": "note://a"}))
        heard.wait_for(res("note://a"))
        hand_over_and_wait(peer_dir, json.dumps({"cut": True}))
        wait_until(lambda: len(answered(peer_dir, "GET", sid)) == 2)
        first, again = answered(peer_dir, "GET", sid)
        assert first["last_event_id"] is None
        assert again["last_event_id"] is not None and again["last_event_id"].isdigit()
        assert again["status"] == 200
        # what changed while not heard: told once as the stream opened again
        wait_until(lambda: heard.uris.count(res("note://a")) == 2)
        wait_until(lambda: notices.streaming("notes"))
        hand_over_and_wait(peer_dir, json.dumps({"updated": "note://a"}))
        wait_until(lambda: heard.uris.count(res("note://a")) == 3)
        assert session_of(notices) == sid, "the same session"
        assert subscriptions(peer_dir) == [("subscribe", "note://a", sid)]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.django_db(transaction=True)
def test_a_peer_that_dies_is_met_again_in_a_new_session_once_it_is_back(
    peer_dir: Path, heard: Heard, notices: PeerNotices
) -> None:
    port = free_port()
    peer = start_peer(peer_dir, port)
    try:
        record(peer.url())
        with changes.listening([res("note://a")]):
            wait_until(lambda: notices.streaming("notes"))
            old = session_of(notices)
            stop_http_peer(peer)  # mid-stream: killed, the stream cut with it
            wait_until(lambda: not notices.streaming("notes"))
            started = time.monotonic()
            time.sleep(1.5)  # tried again meanwhile, with a doubling wait: nobody answers
            assert not notices.streaming("notes")
            assert threading.active_count() < 50
            peer = start_peer(peer_dir, port)
            wait_until(lambda: notices.streaming("notes"), seconds=15)
            assert time.monotonic() - started < 10, "no hang"
            new = session_of(notices)
            assert new != old
            statuses = [r["status"] for r in answered(peer_dir, "GET", old)]
            assert statuses[-1] == 404, "the old session is unknown to the new process"
            assert subscriptions(peer_dir)[-1] == ("subscribe", "note://a", new)
            # what changed while it was away: told once, as the new session's stream opened
            wait_until(lambda: res("note://a") in heard.uris)
            count = heard.uris.count(res("note://a"))
            hand_over_and_wait(peer_dir, json.dumps({"updated": "note://a"}))
            wait_until(lambda: heard.uris.count(res("note://a")) == count + 1)
        wait_until(lambda: len(answered(peer_dir, "DELETE", new)) == 1)
        assert notices.connected("notes") is None
    finally:
        stop_http_peer(peer)


@pytest.mark.django_db(transaction=True)
def test_a_peer_without_a_session_stream_is_not_heard_nor_asked_again(
    peer_dir: Path, notices: PeerNotices, caplog: Any
) -> None:
    caplog.set_level(logging.WARNING, logger="tmsite.subscriptions.mcp")
    no_stream = start_http_peer(
        [sys.executable, str(PEER.with_name("no_stream_peer.py")), str(peer_dir)]
    )
    try:
        record(no_stream.url())
        with changes.listening([res("note://a")]):
            wait_until(lambda: any("no session stream" in r.getMessage() for r in caplog.records))
            wait_until(lambda: notices.connected("notes") is None)
            time.sleep(1.0)  # the first waits are 0.2 s and 0.4 s: nothing is tried again
            assert [(r["verb"], r["method"], r["session"]) for r in requests(peer_dir)] == [
                ("POST", "server/discover", None),
                ("POST", "initialize", None),
                ("POST", "notifications/initialized", "s-1"),
                ("GET", None, "s-1"),
                ("DELETE", None, "s-1"),
            ]
            assert notices.listened() == {"notes": [res("note://a")]}
            assert not notices.streaming("notes")
        [message] = [r.getMessage() for r in caplog.records if "session stream" in r.getMessage()]
        assert message == (
            "the MCP server notes offers no session stream (HTTP 405): its notifications are "
            "not heard"
        )
        assert len(requests(peer_dir)) == 5
        assert notices.listened() == {}
    finally:
        stop_http_peer(no_stream)


@pytest.mark.django_db(transaction=True)
def test_an_event_past_the_cap_ends_the_session_stream_and_it_is_opened_again(
    peer_dir: Path, heard: Heard, notices: PeerNotices, caplog: Any
) -> None:
    caplog.set_level(logging.INFO, logger="tmsite.subscriptions.mcp")
    argv = [sys.executable, str(PEER.with_name("no_stream_peer.py")), str(peer_dir), "--huge"]
    huge = start_http_peer(argv)
    try:
        record(huge.url())
        with changes.listening([res("note://a")]):
            heard.wait_for(res("note://a"))  # the second stream's notification
            ended = [
                r.getMessage() for r in caplog.records if "session stream of" in r.getMessage()
            ]
            assert len(ended) == 1, ended
            assert ended[0].startswith("the session stream of the MCP server notes ended: failed:")
            assert f"cap of {mcphttp.LISTEN_EVENT_BYTES}" in ended[0]
            gets = [r for r in requests(peer_dir) if r["verb"] == "GET"]
            assert [g["session"] for g in gets] == ["s-1", "s-1"], "the same session, again"
            wait_until(lambda: heard.uris.count(res("note://a")) == 2)  # told once as it reopened
            assert notices.streaming("notes")
        wait_until(lambda: requests(peer_dir)[-1]["verb"] == "DELETE")
    finally:
        stop_http_peer(huge)


@pytest.fixture
def box_sources() -> Iterator[None]:
    sources.uninstall()  # the first stream of the test installs them, the peers' notices too
    yield
    sources.uninstall()


def test_a_listen_on_the_box_is_told_what_a_session_peer_says_changed(
    session_peer: HttpPeer, peer_dir: Path, listen_url: str, box_sources: None
) -> None:
    record(session_peer.url())
    uri = str(TmUri(settings.TM_HOST, "mcp", ("notes", "resources", "note://a")))
    body = listen_body("s-1", resourceSubscriptions=[uri])
    with (
        httpx.Client(timeout=httpx.Timeout(20, read=20)) as client,
        client.stream("POST", listen_url, json=body, headers=listen_headers()) as response,
    ):
        assert response.status_code == 200
        events = Events(response)
        ack = events.message()
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"]["notifications"] == {"resourceSubscriptions": [uri]}
        wait_until(lambda: [v for v, u, _ in subscriptions(peer_dir)] == ["subscribe"], seconds=20)
        [(_, upstream, sid)] = subscriptions(peer_dir)
        assert upstream == "note://a"
        hand_over(peer_dir, json.dumps({"updated": "note://a"}))
        assert events.message() == {
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"uri": uri, "_meta": {SUB_ID: "s-1"}},
        }
    # the listener went: the box ends its session with the peer
    wait_until(lambda: len(answered(peer_dir, "DELETE", sid)) == 1, seconds=20)


def test_an_event_id_is_kept_only_when_it_is_visible_ascii_and_short() -> None:
    ids: list[str] = []
    stream = [
        b"id: 7\ndata: {}\n\n",
        b"id: bad id\ndata: {}\n\n",
        b"id: " + b"x" * (mcphttp.MAX_EVENT_ID + 1) + b"\ndata: {}\n\n",
        b"id: 9\ndata:\n\n",  # a priming event: no data, an id
    ]
    seen: list[tuple[bytes, list[str]]] = []
    events = mcphttp._events(iter(stream), mcphttp._no_deadline(), 1024, ids)
    for data in events:
        seen.append((data, list(ids)))
    assert seen == [(b"{}", ["7"]), (b"{}", ["7"]), (b"{}", ["7"])]
    assert ids == ["9"]
