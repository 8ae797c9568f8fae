"""Changes of records, told on the bus: entity records reloaded and corrected, trails edited,
re-indexed and corrected, MCP server records asked again. Real rows saved through the models
(or filled in bulk, as another machine's reload writes them: no signal here), the real stamps,
the real namespace read; a listener added with ``add_listener`` hears the right URI."""

from __future__ import annotations

import dataclasses
import json
import shutil
import threading
from collections.abc import Callable, Hashable, Iterator
from pathlib import Path

import pytest

from tests.entitymount.conftest import HOST, ROOT, make_space
from tmsite.bus import changes
from tmsite.entities import models as m
from tmsite.entities.loaders import Records, fill
from tmsite.mounts.entity import watch as entity_watch
from tmsite.mounts.mcp import watch as mcp_watch
from tmsite.mounts.mcp.mount import McpMount
from tmsite.mounts.namespace import Namespace
from tmsite.mounts.trail import watch as trail_watch
from tmsite.servers.models import McpServer
from tmsite.subscriptions import sources
from tmsite.subscriptions.records import StampWatcher
from tmsite.trails import corrections, index

pytestmark = pytest.mark.spec("SUB3")
E = f"tm://{HOST}/entity/"


class Heard:
    def __init__(self) -> None:
        self.uris: list[str] = []
        self.cond = threading.Condition()

    def __call__(self, change: changes.Change) -> None:
        if change.uri is not None and change.uri.startswith(f"tm://{HOST}/"):
            with self.cond:
                self.uris.append(change.uri)
                self.cond.notify_all()

    def wait_for(self, uri: str, timeout: float = 5.0) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: uri in self.uris, timeout), self.uris


@pytest.fixture
def heard() -> Iterator[Heard]:
    got = Heard()
    remove = changes.add_listener(got)
    yield got
    remove()


def watching(
    space: Namespace, mount: str, stamp: Callable[[], Hashable], **more: object
) -> Iterator[StampWatcher]:
    watcher = StampWatcher(HOST, mount, stamp, space.read, changes.publish, threaded=False, **more)  # type: ignore[arg-type]
    remove = changes.add_interest_watcher(watcher.interest)
    yield watcher
    remove()


# -- entity records ----------------------------------------------------------------------------


@pytest.fixture
def entities(ns: Namespace) -> Iterator[StampWatcher]:
    yield from watching(ns, "entity", entity_watch.stamp, interval=3600)


def test_a_correction_fires_the_entity_it_corrects_and_nothing_else(
    shipped: Records, entities: StampWatcher, heard: Heard
) -> None:
    listened = [f"{E}pattern/frame-wait", f"{E}pattern/pad-poll?as=stat", f"{E}game/"]
    with changes.listening(listened):
        assert entities.watched() == [f"{E}game/", f"{E}pattern/frame-wait", f"{E}pattern/pad-poll"]
        assert entities.poll() == []  # the first fingerprints
        assert entities.poll() == []  # nothing moved
        pattern = m.Pattern.objects.get(key="frame-wait")
        m.Correction.objects.create(
            entity="pattern", key="frame-wait", field="description", value="Waits a frame."
        )
        pattern.description = "Waits a frame."
        pattern.save(update_fields=["description"])  # as the admin saves a correction
        assert entities.poll() == [f"{E}pattern/frame-wait"]
    assert heard.uris == [f"{E}pattern/frame-wait"]


def test_a_reload_by_another_process_fires_only_what_it_changed(
    shipped: Records, entities: StampWatcher, heard: Heard
) -> None:
    with changes.listening([f"{E}pattern/frame-wait", f"{E}pattern/pad-poll"]):
        entities.poll()
        assert fill(shipped).written  # the same records again: a new load token, nothing else
        assert entities.poll() == []
        changed = _with_description(shipped, "pad-poll", "Reads the pad, reloaded.")
        fill(changed)  # bulk statements only: no model signal fires here
        assert entities.poll() == [f"{E}pattern/pad-poll"]
    assert heard.uris == [f"{E}pattern/pad-poll"]


def _with_description(records: Records, key: str, text: str) -> Records:
    """``records`` with one pattern's description changed (records are frozen)."""
    patterns = tuple(
        p.model_copy(update={"description": text}) if p.key == key else p for p in records.patterns
    )
    return dataclasses.replace(records, patterns=patterns)


@pytest.mark.django_db(transaction=True)
def test_a_saved_correction_wakes_the_watcher_at_once(heard: Heard, settings: object) -> None:
    from tmsite.entities.loaders import read_checkout

    fill(read_checkout(ROOT))
    space = make_space(ROOT)
    installed = sources.install(HOST, space.read, ["entity"])
    try:
        watcher = installed["entity"]
        watcher.interval = 3600  # only a signal wakes it within this test
        with changes.listening([f"{E}pattern/bank-switch"]):
            while watcher.checked < 1:  # its first fingerprint is taken
                threading.Event().wait(0.02)
            pattern = m.Pattern.objects.get(key="bank-switch")
            pattern.description = "Switches banks, corrected."
            pattern.save(update_fields=["description"])
            heard.wait_for(f"{E}pattern/bank-switch")
    finally:
        sources.uninstall()


# -- trails ------------------------------------------------------------------------------------


@pytest.fixture
def trail_checkout(tmp_path: Path) -> Path:
    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT / "data", checkout / "data")
    trails = checkout / "notes" / "trails"
    trails.mkdir(parents=True)
    (trails / "walk.json").write_text(_trail("A walk"))
    (trails / "other.json").write_text(_trail("Another"))
    return checkout


def _trail(title: str) -> str:
    steps = [{"uri": f"tm://{HOST}/entity/pattern/pad-poll", "note": "a pattern"}]
    return json.dumps({"title": title, "description": "d", "steps": steps})


def test_a_trail_edited_or_corrected_fires(
    shipped: Records, trail_checkout: Path, heard: Heard, settings: object
) -> None:
    settings.TM_CHECKOUT = trail_checkout  # type: ignore[attr-defined]
    space = make_space(trail_checkout)
    T = f"tm://{HOST}/trail/"
    for watcher in watching(
        space, "trail", lambda: trail_watch.stamp(trail_checkout), interval=3600
    ):
        with changes.listening([f"{T}walk", f"{T}other"]):
            watcher.poll()
            (trail_checkout / "notes" / "trails" / "walk.json").write_text(_trail("A new walk"))
            index.rebuild(trail_checkout)
            assert watcher.poll() == [f"{T}walk"]
            corrections.correct(
                "other",
                json.loads(_trail("Corrected")),
                None,
                "maintainer",
                checkout=trail_checkout,
            )
            assert watcher.poll() == [f"{T}other"]
    assert heard.uris == [f"{T}walk", f"{T}other"]


# -- MCP server records ------------------------------------------------------------------------


def test_a_server_records_status_change_fires_its_record(db: None, heard: Heard) -> None:
    McpServer.objects.create(name="elements", program="elements")
    space = Namespace(HOST, {"mcp": McpMount(HOST)})
    M = f"tm://{HOST}/mcp/"
    for watcher in watching(
        space, "mcp", mcp_watch.stamp, interval=3600, accept=mcp_watch.described
    ):
        with changes.listening([f"{M}elements/", f"{M}elements/resources/peer:%2F%2Fx"]):
            assert watcher.watched() == [f"{M}elements/"], "a resource's content is not read"
            watcher.poll()
            # What a probe writes when the server did not answer (a queryset update: no signal).
            McpServer.objects.filter(name="elements").update(
                last_outcome="unreachable", last_failure="spawn", last_asked_at="2026-01-01T00:00Z"
            )
            assert watcher.poll() == [f"{M}elements/"]
            assert watcher.poll() == []
    assert heard.uris == [f"{M}elements/"]
