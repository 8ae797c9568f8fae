"""The keeper: a changed, new or removed file is found as it is now within 2 seconds.

It runs as the box runs it: started with the change sources over this process's namespace
(``sources.serve``), told of a file by the fs watch, applying that file alone.

Spec: SRCH1.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import OperationalError

from tmsite.mounts import registry
from tmsite.mounts.fs.mount import FsMount
from tmsite.search import index
from tmsite.search.keeper import Keeper
from tmsite.search.query import parse_query
from tmsite.subscriptions import changes, sources

pytestmark = [pytest.mark.spec("SRCH1"), pytest.mark.django_db(transaction=True)]
BOUND = 2.0


@pytest.fixture
def kept(
    checkout: Path, settings: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Keeper]:
    """This machine's keeper over the checkout, started with the change sources, its first
    round (the full walk) done; the safety net's next walk an hour away."""
    settings.TM_CHECKOUT, settings.TM_FS_ROOTS = checkout, ["docs"]
    settings.TM_HOST, settings.TM_MOUNTS = "test", ["fs"]
    settings.VAR_DIR = checkout / "var"  # beside the served root, not in it
    settings.VAR_DIR.mkdir()
    settings.TM_SEARCH_POLL, settings.TM_SEARCH_FULL_EVERY = 0.5, 3600
    registry.reset()
    sources.uninstall()
    keeper = sources.serve()
    assert keeper is not None
    try:
        wait_until(lambda: keeper.walks == 1 and bool(changes.interests("tm://test/fs/")))
        yield keeper
    finally:
        sources.stop()
        registry.reset()


def documents(text: str) -> list[str] | None:
    """The documents found, or None while the keeper writes.

    The test database is SQLite in memory with a shared cache, where a reader meets a writer's
    table lock ("database table is locked"); the box's own file in WAL mode never does.
    """
    try:
        return [hit.uri for hit in index.search(parse_query(text), "tm://test/", (), 10)]
    except OperationalError as exc:
        if "locked" not in str(exc):
            raise
        return None


def within(bound: float, text: str, expected: list[str]) -> float:
    """Seconds until a search for ``text`` finds ``expected`` (fails past ``bound``)."""
    start = time.monotonic()
    while time.monotonic() - start < bound:
        if documents(text) == expected:
            return time.monotonic() - start
        time.sleep(0.02)
    raise AssertionError(f"{text!r} did not find {expected} within {bound} s: {documents(text)}")


def wait_until(done: Any, seconds: float = 10.0) -> None:
    start = time.monotonic()
    while not done():
        assert time.monotonic() - start < seconds, "not within the time"
        time.sleep(0.02)


def test_a_changed_new_and_removed_file_within_two_seconds(checkout: Path, kept: Keeper) -> None:
    docs = checkout / "docs"
    (docs / "patterns.md").write_text("# Patterns\n\nA joystick routine.\n")
    within(BOUND, "joystick", ["tm://test/fs/docs/patterns.md"])
    within(BOUND, "poll", [])
    (docs / "fresh.md").write_text("# Fresh\n\nAn aardvark arrives.\n")
    within(BOUND, "aardvark", ["tm://test/fs/docs/fresh.md"])
    (docs / "fresh.md").unlink()
    within(BOUND, "aardvark", [])
    assert kept.walks == 1  # each change applied alone: no walk of the mount since the first


def test_a_change_reads_only_the_document_it_names(checkout: Path, fs: FsMount) -> None:
    """A round told of one changed file rewrites it and reads no other document."""
    keeper = Keeper(lambda: {"fs": fs}, "test", every=3600, full_every=3600)
    assert keeper.round().written == 6  # the first round walks everything
    walked: list[str] = []
    whole = fs.documents

    def counted() -> Iterator[Any]:
        for document in whole():
            walked.append(document.uri)
            yield document

    fs.documents = counted  # type: ignore[method-assign]
    (checkout / "docs" / "patterns.md").write_text("# Patterns\n\nA joystick routine.\n")
    keeper.wake(changes.Change("updated", "tm://test/fs/docs/patterns.md"))
    done = keeper.round()
    assert (done.written, done.dropped, done.unchanged) == (1, 0, 0)
    assert done.changed == ["tm://test/fs/docs/patterns.md"]
    assert walked == []  # no walk: the other five documents were not even listed
    assert documents("joystick") == ["tm://test/fs/docs/patterns.md"]
    assert documents("poll") == []  # its old text is gone
    (checkout / "docs" / "patterns.md").unlink()
    keeper.wake(changes.Change("updated", "tm://test/fs/docs/patterns.md"))
    done = keeper.round()
    assert (done.written, done.dropped, done.unchanged) == (0, 1, 0)
    assert documents("joystick") == []
    assert keeper.walks == 1 and walked == []


def test_a_change_on_the_bus_starts_a_round_at_once(checkout: Path, fs: FsMount) -> None:
    keeper = Keeper(lambda: {"fs": fs}, "test", every=60)
    keeper.round()
    keeper.start()
    try:
        (checkout / "docs" / "fresh.md").write_text("# Fresh\n\nA quokka.\n")
        changes.publish("tm://test/fs/docs/fresh.md")
        within(BOUND, "quokka", ["tm://test/fs/docs/fresh.md"])
        time.sleep(0.3)  # the round that found it has counted itself
        rounds = keeper.rounds
        changes.publish("tm://elsewhere/fs/docs/fresh.md")
        time.sleep(0.3)
        assert keeper.rounds == rounds
    finally:
        keeper.stop()


@pytest.mark.spec("SRCH4")
def test_a_standing_search_is_told_once_its_new_answer_reads(checkout: Path, fs: FsMount) -> None:
    standing = "tm://test/fs/docs/?as=search&q=aardvark"
    told: list[list[str] | None] = []

    def listener(change: changes.Change) -> None:
        if change.uri and changes.affects(standing, change.uri):
            told.append(documents("aardvark"))  # what a client reading it now gets

    keeper = Keeper(lambda: {"fs": fs}, "test", every=0.2)
    keeper.round()
    remove = changes.add_listener(listener)
    keeper.start()
    try:
        (checkout / "docs" / "fresh.md").write_text("# Fresh\n\nAn aardvark arrives.\n")
        keeper.wake(changes.Change("updated", "tm://test/fs/docs/fresh.md"))  # the fs watch's
        start = time.monotonic()
        while not told and time.monotonic() - start < BOUND:
            time.sleep(0.02)
        assert told and told[-1] == ["tm://test/fs/docs/fresh.md"]
        assert changes.affects(standing, "tm://test/fs/other/x.md") is None
    finally:
        remove()
        keeper.stop()
