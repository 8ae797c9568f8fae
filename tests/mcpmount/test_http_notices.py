"""An HTTP server's own notifications, told on the bus: a real 2026-07-28 peer on loopback
(``listen_peer.py``) answers ``subscriptions/listen`` with an event stream; what it sends while
a URI of it is listened to reaches the bus as the matching ``tm://`` address. A stream that
ends is opened again with a doubling wait; an event past the cap and a flood end the stream
(bounded) and it is opened again; a 2025-era HTTP server is not listened to, and says so."""

from __future__ import annotations

import itertools
import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.mcpmount.conftest import BASE, HOST
from tests.mcpmount.test_notices import Heard, hand_over, res
from tests.peers.processes import HttpPeer, peer, start_http_peer, stop_http_peer
from tests.waiting import wait_until
from tmsite.bus import changes
from tmsite.mcpclient import http as mcphttp
from tmsite.mounts.namespace import Namespace
from tmsite.servers.models import McpServer
from tmsite.servers.notices import PeerNotices

pytestmark = [pytest.mark.slow, pytest.mark.spec("SUB3", "MCP")]


@pytest.fixture
def heard() -> Iterator[Heard]:
    got = Heard()
    remove = changes.add_listener(got)
    yield got
    remove()


@pytest.fixture
def listen_peer(tmp_path: Path) -> Iterator[HttpPeer]:
    p = start_http_peer(peer("listen_peer.py", str(tmp_path)))
    yield p
    stop_http_peer(p)


def listens(directory: Path) -> list[dict[str, Any]]:
    path = directory / "listens"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def record(url: str) -> McpServer:
    return McpServer.objects.create(
        name="notes", transport="http", url=url, start_timeout=10.0, call_timeout=10.0
    )


@pytest.fixture
def notices() -> Iterator[PeerNotices]:
    made = PeerNotices(
        HOST, changes.publish, retry_seconds=(0.2, 2.0), read_seconds=5.0, reprobe_seconds=1.0
    )
    remove = changes.add_interest_watcher(made.interest)
    yield made
    remove()


@pytest.mark.django_db(transaction=True)
def test_a_listen_streams_notifications_become_updates_of_its_addresses(
    listen_peer: HttpPeer, tmp_path: Path, heard: Heard, ns: Namespace, notices: PeerNotices
) -> None:
    record(listen_peer.url())
    with changes.listening([res("note://a"), f"{BASE}notes/tools/"]):
        wait_until(lambda: len(listens(tmp_path)) == 1)
        assert listens(tmp_path)[0]["notifications"] == {
            "toolsListChanged": True,
            "promptsListChanged": True,
            "resourcesListChanged": True,
            "resourceSubscriptions": ["note://a"],
        }
        lines = [
            {"method": "notifications/resources/updated", "params": {"uri": "note://b"}},
            {"method": "notifications/resources/updated", "params": {"uri": "note://a"}},
        ]
        hand_over(tmp_path, "\n".join(json.dumps(x) for x in lines))
        heard.wait_for(res("note://a"))
        assert heard.uris == [res("note://a")], "note://b is not listened to"
        (tmp_path / "tools.json").write_text(json.dumps(["first", "second"]))
        hand_over(tmp_path, json.dumps({"method": "notifications/tools/list_changed"}))
        heard.wait_for(f"{BASE}notes/tools/")
        tools = ns.read(f"{BASE}notes/tools/").body["children"]
        assert [t["name"] for t in tools] == ["first", "second"], "asked again, then told"
        with changes.listening([res("note://b")]):
            # the listened set changed: the stream is opened again with the new set
            wait_until(lambda: len(listens(tmp_path)) == 2)
            wanted = listens(tmp_path)[1]["notifications"]["resourceSubscriptions"]
            assert wanted == ["note://a", "note://b"]
            update = {"method": "notifications/resources/updated", "params": {"uri": "note://b"}}
            hand_over(tmp_path, json.dumps(update))
            heard.wait_for(res("note://b"))
        wait_until(lambda: len(listens(tmp_path)) == 3)
        assert listens(tmp_path)[2]["notifications"]["resourceSubscriptions"] == ["note://a"]
    assert heard.uris == [res("note://a"), f"{BASE}notes/tools/", res("note://b")]
    assert notices.listened() == {}
    assert notices.connected("notes") is None


@pytest.mark.django_db(transaction=True)
def test_a_stream_the_server_closes_is_opened_again_with_a_doubling_wait(
    listen_peer: HttpPeer, tmp_path: Path, heard: Heard, notices: PeerNotices
) -> None:
    record(listen_peer.url())
    with changes.listening([res("note://a")]):
        wait_until(lambda: len(listens(tmp_path)) == 1)
        (tmp_path / "close_at_once").touch()
        hand_over(tmp_path, json.dumps({"close": True}))
        wait_until(lambda: len(listens(tmp_path)) >= 5, seconds=15)
        (tmp_path / "close_at_once").unlink()
        times = [x["at"] for x in listens(tmp_path)[1:5]]
        gaps = [b - a for a, b in itertools.pairwise(times)]
        assert gaps[0] >= 0.3, gaps  # 0.2, 0.4 then 0.8: doubled, not hammered
        assert gaps[2] >= 0.7, gaps
        assert gaps[2] > gaps[0] * 1.5, gaps
        wait_until(lambda: res("note://a") in heard.uris)  # what changed meanwhile: told once
        count = len(listens(tmp_path))
        update = {"method": "notifications/resources/updated", "params": {"uri": "note://a"}}
        wait_until(lambda: len(listens(tmp_path)) == count)
        hand_over(tmp_path, json.dumps(update))
        wait_until(lambda: not (tmp_path / "send.jsonl").exists())
        wait_until(lambda: heard.uris.count(res("note://a")) >= 2)
    assert notices.listened() == {}


@pytest.mark.django_db(transaction=True)
def test_an_event_past_the_cap_ends_the_stream_and_it_is_opened_again(
    listen_peer: HttpPeer, tmp_path: Path, heard: Heard, notices: PeerNotices, caplog: Any
) -> None:
    record(listen_peer.url())
    caplog.set_level(logging.INFO, logger="tmsite.subscriptions.mcp")
    with changes.listening([res("note://a")]):
        wait_until(lambda: len(listens(tmp_path)) == 1)
        hand_over(tmp_path, json.dumps({"huge": 4 * 1024 * 1024}))
        wait_until(lambda: len(listens(tmp_path)) == 2)
        ended = [r.getMessage() for r in caplog.records if "stream of the MCP" in r.getMessage()]
        assert any(f"cap of {mcphttp.LISTEN_EVENT_BYTES}" in m for m in ended), ended
        update = {"method": "notifications/resources/updated", "params": {"uri": "note://a"}}
        hand_over(tmp_path, json.dumps(update))
        wait_until(lambda: heard.uris.count(res("note://a")) >= 2)  # the re-ack, then the update


@pytest.mark.django_db(transaction=True)
def test_a_flood_ends_the_stream_and_costs_one_probe_a_period(
    listen_peer: HttpPeer, tmp_path: Path, heard: Heard, notices: PeerNotices, caplog: Any
) -> None:
    record(listen_peer.url())
    caplog.set_level(logging.INFO, logger="tmsite.subscriptions.mcp")
    with changes.listening([f"{BASE}notes/tools/"]):
        wait_until(lambda: len(listens(tmp_path)) == 1)
        hand_over(tmp_path, json.dumps({"flood": True}))
        wait_until(lambda: (tmp_path / "flooded").exists())  # the client hung up on it
        sent = int((tmp_path / "flooded").read_text())
        wait_until(lambda: any("events a second" in r.getMessage() for r in caplog.records))
        assert sent < 10 * mcphttp.LISTEN_EVENTS_PER_SECOND
        wait_until(lambda: len(listens(tmp_path)) == 2)
        assert threading.active_count() < 50, "no thread a notification"
        # told at least once: by the re-ack of the stream opened again, and by the one probe
        # of the events read before the flood was seen (none when its first read held too
        # many); told some time after the peer saw the second listen, so waited for
        wait_until(lambda: f"{BASE}notes/tools/" in heard.uris)
        wait_until(lambda: not notices.asking("notes"))
    assert heard.uris.count(f"{BASE}notes/tools/") <= 3


@pytest.mark.django_db(transaction=True)
def test_the_official_sdk_servers_listen_stream_is_held(
    sdk_stateless: HttpPeer, notices: PeerNotices
) -> None:
    record(sdk_stateless.url())
    with changes.listening([f"{BASE}notes/tools/"]):
        wait_until(lambda: notices.streaming("notes"))
        client = notices.connected("notes")
        assert client is not None and client.handshake().era == "discover"
    wait_until(lambda: not notices.streaming("notes"))
    assert notices.listened() == {}


@pytest.mark.django_db(transaction=True)
def test_a_2025_era_http_server_is_not_listened_to_and_says_so(
    tmp_path: Path, heard: Heard, notices: PeerNotices, caplog: Any
) -> None:
    old = start_http_peer(peer("listen_peer.py", str(tmp_path), "--2025"))
    try:
        caplog.set_level(logging.WARNING, logger="tmsite.subscriptions.mcp")
        record(old.url())
        with changes.listening([f"{BASE}notes/tools/"]):
            wait_until(lambda: any("not heard" in r.getMessage() for r in caplog.records))
            assert notices.listened() == {"notes": [f"{BASE}notes/tools/"]}
            assert notices.connected("notes") is None
            assert not notices.streaming("notes")
        message = next(r.getMessage() for r in caplog.records if "not heard" in r.getMessage())
        assert "notes speaks 2025-11-25 over HTTP" in message
        assert listens(tmp_path) == [], "no listen was tried"
        assert notices.listened() == {}
    finally:
        stop_http_peer(old)


@pytest.mark.django_db(transaction=True)
def test_a_stream_of_comments_that_never_ends_is_ended_too(
    listen_peer: HttpPeer, tmp_path: Path, notices: PeerNotices, caplog: Any
) -> None:
    record(listen_peer.url())
    caplog.set_level(logging.INFO, logger="tmsite.subscriptions.mcp")
    with changes.listening([f"{BASE}notes/tools/"]):
        wait_until(lambda: len(listens(tmp_path)) == 1)
        hand_over(tmp_path, json.dumps({"comments": True}))
        wait_until(lambda: (tmp_path / "flooded").exists())  # no event, no silence: the bytes count
        wait_until(lambda: any("bytes or" in r.getMessage() for r in caplog.records))
        wait_until(lambda: len(listens(tmp_path)) == 2)
