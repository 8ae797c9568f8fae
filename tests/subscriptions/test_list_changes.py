"""What ``resources/list`` answers changes: a real directory made in the served checkout. The
map is read while a stream listens to its changes, never otherwise; on a listen stream the
change is told as ``notifications/resources/list_changed``, by the sources the stream installs."""

from __future__ import annotations

import time
from collections.abc import Hashable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.subscriptions.helpers import (
    SUB_ID,
    Events,
    listen_body,
    listen_headers,
    own_box,
    stream_client,
    write_files,
)
from tests.waiting import wait_until
from tmsite.bus import changes
from tmsite.subscriptions import sources
from tmsite.subscriptions.lists import ListWatcher, resources_answer

pytestmark = pytest.mark.spec("SUB3")


@pytest.fixture
def checkout(tmp_path: Path, settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    settings.TM_SUB_LIST_POLL = 0.1
    monkeypatch.setenv("TM_LISTEN_IDLE", "10")  # a list never told ends the stream, not the run
    root = write_files(tmp_path / "box", {"docs/a.md": "# a\n"})
    with own_box(settings, root, ["docs"], ["fs"], fresh_sources=True):
        yield root


def test_the_map_is_read_only_while_listened_and_told_when_it_moved(checkout: Path) -> None:
    reads: list[Hashable] = []

    def answer() -> Hashable:
        reads.append(resources_answer())
        return reads[-1]

    told: list[str] = []
    watcher = ListWatcher("resources", answer, told.append, threaded=False)
    (checkout / "docs" / "early").mkdir()
    assert watcher.poll() is False
    assert reads == []  # nobody listens: the map is not read
    changes.listen_lists(["resources"])
    try:
        assert watcher.poll() is False  # the first reading
        assert watcher.poll() is False  # the same
        (checkout / "docs" / "guide").mkdir()
        assert watcher.poll() is True
        assert watcher.poll() is False
    finally:
        changes.listen_lists(["resources"], present=False)
    assert told == ["resources"]
    assert len(reads) == 4
    assert changes.lists_listened() == frozenset()


@pytest.mark.slow
def test_a_stream_is_told_the_resource_list_changed(listen_url: str, checkout: Path) -> None:
    body = listen_body("l-1", resourcesListChanged=True, toolsListChanged=True)
    with (
        stream_client() as client,
        client.stream("POST", listen_url, json=body, headers=listen_headers()) as response,
    ):
        assert response.status_code == 200
        events = Events(response)
        events.message()  # the acknowledgement
        wait_until(
            lambda: "resources-list" in sources.installed() and bool(changes.lists_listened()),
            10,
            "the list's source was never installed",
        )
        time.sleep(0.5)  # its first reading
        (checkout / "docs" / "guide").mkdir()
        told = events.message()
    assert told == {
        "jsonrpc": "2.0",
        "method": "notifications/resources/list_changed",
        "params": {"_meta": {SUB_ID: "l-1"}},
    }
