"""A server's own notifications, told on the bus: a real stdio peer (``notify_peer.py``) sends
``resources/updated`` and ``tools/list_changed`` while a URI of it is listened to; a listener
added with ``add_listener`` hears the matching ``tm://`` address, and the peer's process ends
when nobody listens any more."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.mcpmount.conftest import BASE, HOST, peer
from tests.peers.processes import gone
from tests.waiting import wait_until
from tmsite.bus import changes
from tmsite.core.uri import TmUri
from tmsite.mounts.namespace import Namespace
from tmsite.servers.connect import probe_record
from tmsite.servers.models import McpServer
from tmsite.servers.notices import PeerNotices

pytestmark = [pytest.mark.slow, pytest.mark.spec("SUB3", "MCP")]


class Heard:
    def __init__(self) -> None:
        self.uris: list[str] = []
        self.cond = threading.Condition()

    def __call__(self, change: changes.Change) -> None:
        if change.uri is not None and change.uri.startswith(BASE):
            with self.cond:
                self.uris.append(change.uri)
                self.cond.notify_all()

    def wait_for(self, uri: str, timeout: float = 10.0) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: uri in self.uris, timeout), self.uris


def res(upstream: str) -> str:
    return str(TmUri(HOST, "mcp", ("notes", "resources", upstream)))


def hand_over(directory: Path, lines: str) -> None:
    """Give the peer ``lines`` to send, whole: written aside, then renamed into place (the peer
    takes ``send.jsonl`` as soon as it exists, and would take a file still being written)."""
    aside = directory / "send.jsonl.part"
    aside.write_text(lines)
    os.replace(aside, directory / "send.jsonl")


@pytest.fixture
def heard() -> Iterator[Heard]:
    got = Heard()
    remove = changes.add_listener(got)
    yield got
    remove()


@pytest.mark.django_db(transaction=True)
def test_a_peers_notifications_become_updates_of_its_addresses(
    stdio_server: Callable[..., McpServer], tmp_path: Path, heard: Heard, ns: Namespace
) -> None:
    record = stdio_server("notes", peer("notify_peer.py", str(tmp_path)))
    assert probe_record(record).outcome == "answered"
    notices = PeerNotices(HOST, changes.publish)
    remove = changes.add_interest_watcher(notices.interest)
    asked = tmp_path / "asked"
    try:
        with changes.listening([res("note://a"), f"{BASE}notes/tools/"]):
            wait_until(
                lambda: asked.exists() and "resources/subscribe note://a" in asked.read_text()
            )
            client = notices.connected("notes")
            assert client is not None and client.pid is not None
            pid = client.pid
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
        assert heard.uris == [res("note://a"), f"{BASE}notes/tools/"]
        wait_until(lambda: "resources/unsubscribe note://a" in asked.read_text())
        assert gone(pid), "nobody listens: the server's process ends"
        assert notices.listened() == {}
    finally:
        remove()


@pytest.mark.django_db(transaction=True)
def test_a_flood_of_list_changed_costs_one_probe_a_period(
    stdio_server: Callable[..., McpServer], tmp_path: Path, heard: Heard
) -> None:
    record = stdio_server("notes", peer("notify_peer.py", str(tmp_path)))
    assert probe_record(record).outcome == "answered"
    probes: list[float] = []

    def counted(server: McpServer) -> object:
        probes.append(time.monotonic())
        return probe_record(server)

    notices = PeerNotices(HOST, changes.publish, reprobe=counted, reprobe_seconds=1.0)
    remove = changes.add_interest_watcher(notices.interest)
    try:
        with changes.listening([f"{BASE}notes/tools/"]):
            wait_until(lambda: notices.connected("notes") is not None)
            flood = json.dumps({"method": "notifications/tools/list_changed"})
            hand_over(tmp_path, "\n".join([flood] * 500))
            heard.wait_for(f"{BASE}notes/tools/")
            assert threading.active_count() < 50, "no thread a notification"
            wait_until(lambda: not notices.asking("notes"))
            # The first notification is asked for at once; all that came while it was asked
            # are asked for once more, a period later.
            assert 1 <= len(probes) <= 2
            if len(probes) == 2:
                assert probes[1] - probes[0] >= 1.0
    finally:
        remove()
    assert heard.uris.count(f"{BASE}notes/tools/") == len(probes)


@pytest.mark.django_db(transaction=True)
def test_a_listened_peer_that_exits_is_met_again_and_its_notices_resume(
    stdio_server: Callable[..., McpServer], tmp_path: Path, heard: Heard
) -> None:
    record = stdio_server("notes", peer("notify_peer.py", str(tmp_path)))
    assert probe_record(record).outcome == "answered"
    notices = PeerNotices(HOST, changes.publish, alive_seconds=0.2, retry_seconds=(0.1, 1.0))
    remove = changes.add_interest_watcher(notices.interest)
    asked = tmp_path / "asked"
    try:
        with changes.listening([res("note://a")]):
            wait_until(
                lambda: asked.exists() and "resources/subscribe note://a" in asked.read_text()
            )
            client = notices.connected("notes")
            assert client is not None and client.pid is not None
            first = client.pid
            hand_over(tmp_path, '{"exit": true}')
            wait_until(lambda: gone(first))
            # met again: a new process, asked again for the listened resource, its URI told once
            heard.wait_for(res("note://a"))
            again = notices.connected("notes")
            assert again is not None and again.pid not in (None, first)
            assert asked.read_text().count("resources/subscribe note://a") == 2
            assert heard.uris == [res("note://a")]
            update = {"method": "notifications/resources/updated", "params": {"uri": "note://a"}}
            hand_over(tmp_path, json.dumps(update))
            wait_until(lambda: len(heard.uris) == 2)  # the new process's notices are heard
            assert heard.uris == [res("note://a")] * 2
            second = again.pid
        wait_until(lambda: gone(second))
        assert notices.listened() == {}
    finally:
        remove()
