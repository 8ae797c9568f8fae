"""The keeper: a changed, new or removed file is found as it is now within 2 seconds.

Spec: SRCH1.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import OperationalError

from tmsite.mounts.fs.mount import FsMount
from tmsite.search import index
from tmsite.search.keeper import Keeper
from tmsite.search.query import parse_query
from tmsite.subscriptions import changes

pytestmark = [pytest.mark.spec("SRCH1"), pytest.mark.django_db(transaction=True)]
BOUND = 2.0


@pytest.fixture
def kept(fs: FsMount) -> Iterator[Keeper]:
    keeper = Keeper(lambda: {"fs": fs}, "test", every=0.5)
    keeper.round()
    keeper.start()
    yield keeper
    keeper.stop()


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


def test_a_changed_new_and_removed_file_within_two_seconds(checkout: Path, kept: Keeper) -> None:
    docs = checkout / "docs"
    (docs / "patterns.md").write_text("# Patterns\n\nA joystick routine.\n")
    within(BOUND, "joystick", ["tm://test/fs/docs/patterns.md"])
    within(BOUND, "poll", [])
    (docs / "fresh.md").write_text("# Fresh\n\nAn aardvark arrives.\n")
    within(BOUND, "aardvark", ["tm://test/fs/docs/fresh.md"])
    (docs / "fresh.md").unlink()
    within(BOUND, "aardvark", [])


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
        start = time.monotonic()
        while not told and time.monotonic() - start < BOUND:
            time.sleep(0.02)
        assert told and told[-1] == ["tm://test/fs/docs/fresh.md"]
        assert changes.affects(standing, "tm://test/fs/other/x.md") is None
    finally:
        remove()
        keeper.stop()
