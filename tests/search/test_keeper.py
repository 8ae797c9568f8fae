"""The keeper: a changed, new or removed file is found as it is now within 2 seconds.

It runs as the box runs it: started with the change sources over this process's namespace
(``sources.serve``), told of a file by the fs watch, applying that file alone.

Spec: SRCH1.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from django.db import OperationalError

from tests.waiting import wait_until
from tmsite.bus import changes
from tmsite.core.types import Document
from tmsite.core.uri import TmUri
from tmsite.entities import models as m
from tmsite.entities.loaders import fill, read_checkout
from tmsite.mounts import registry
from tmsite.mounts.entity.mount import EntityMount
from tmsite.mounts.fs.mount import FsMount
from tmsite.search import index
from tmsite.search.keeper import Keeper
from tmsite.search.query import parse_query
from tmsite.subscriptions import sources

pytestmark = [pytest.mark.spec("SRCH1"), pytest.mark.django_db(transaction=True)]
BOUND = 2.0


@contextlib.contextmanager
def serving(checkout: Path, settings: Any) -> Iterator[Keeper]:
    """This machine's keeper over the checkout, started with the change sources as a serving
    worker starts them; the safety net's next walk an hour away."""
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
        yield keeper
    finally:
        sources.stop()
        registry.reset()


@pytest.fixture
def kept(checkout: Path, settings: Any) -> Iterator[Keeper]:
    """The keeper serving the checkout, its first round (the full walk) done and the roots
    watched."""
    with serving(checkout, settings) as keeper:
        wait_until(lambda: keeper.walks == 1 and bool(changes.interests("tm://test/fs/")))
        yield keeper


@pytest.fixture
def keepers() -> Iterator[Any]:
    """Makes keepers that are stopped after the test: a walk takes interest in the roots."""
    made: list[Keeper] = []

    def make(*args: Any, **kwargs: Any) -> Keeper:
        made.append(Keeper(*args, **kwargs))
        return made[-1]

    yield make
    for keeper in made:
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
    assert kept.walks == 1  # each change applied alone: no walk of the mount since the first


def test_a_change_made_as_the_first_walk_ends_is_found(
    checkout: Path, settings: Any, fs: FsMount
) -> None:
    """The roots are watched before the walk reads, not after: a file written the moment the
    first walk is done is told, not left to the next walk ten minutes on."""
    index.sync({"fs": fs})  # the index make run's setup built
    with serving(checkout, settings) as keeper:
        wait_until(lambda: keeper.walks == 1)
        (checkout / "docs" / "patterns.md").write_text("# Patterns\n\nA joystick routine.\n")
        within(BOUND, "joystick", ["tm://test/fs/docs/patterns.md"])
        assert keeper.walks == 1


def test_a_change_reads_only_the_document_it_names(
    checkout: Path, fs: FsMount, keepers: Any
) -> None:
    """A round told of one changed file rewrites it and reads no other document."""
    keeper = keepers(lambda: {"fs": fs}, "test", every=3600, full_every=3600)
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


def test_what_a_round_wrote_is_not_published_nor_read_again(checkout: Path, fs: FsMount) -> None:
    """A round publishes nothing on the bus: what it wrote is not sent to every machine, nor
    taken by the keeper, listening to the same bus, for news to read again. (After a first walk
    of the checkout's entity records that second reading, one record at a time, took tens of
    seconds and held back the next change.)"""
    keeper = Keeper(lambda: {"fs": fs}, "test", every=0.05, full_every=3600)
    read: list[str] = []
    under = fs.documents_under

    def counted(uri: TmUri) -> Iterator[Document]:
        read.append(str(uri))
        return under(uri)

    fs.documents_under = counted  # type: ignore[method-assign]
    told: list[str | None] = []
    unlisten = changes.add_listener(lambda change: told.append(change.uri))
    keeper.start()
    try:
        wait_until(lambda: keeper.walks == 1 and keeper.rounds >= 4)
        assert told == []  # the walk's documents were not published
        assert read == []  # nor read again
        (checkout / "docs" / "patterns.md").write_text("# Patterns\n\nA joystick routine.\n")
        changes.publish("tm://test/fs/docs/patterns.md")  # news from elsewhere is applied
        within(BOUND, "joystick", ["tm://test/fs/docs/patterns.md"])
        assert read == ["tm://test/fs/docs/patterns.md"]
    finally:
        unlisten()
        keeper.stop()


class Records:
    """A mount of records: its documents stamped as a whole, as the entity mount's are."""

    root = TmUri("test", "records", (), True)

    def __init__(self) -> None:
        self.texts = {"a": "An albatross.", "b": "A bittern."}
        self.version = 1
        self.walks = 0

    def documents(self) -> Iterator[Document]:
        self.walks += 1
        for key, text in self.texts.items():
            yield Document(
                f"tm://test/records/{key}", key, "record", text, "text/plain", partial(str, text)
            )

    def documents_under(self, uri: TmUri) -> Iterator[Document]:
        raise AssertionError("a mount with a stamp is walked when it moves, never told")

    def reindexes(self, changed: TmUri) -> list[TmUri]:
        return []

    def documents_stamp(self) -> int:
        return self.version


def test_records_are_walked_only_when_their_stamp_moved(keepers: Any) -> None:
    records = Records()
    keeper = keepers(lambda: {"records": records}, "test", every=3600, full_every=3600)
    assert keeper.round().written == 2 and records.walks == 1
    assert keeper.round().written == 0 and records.walks == 1  # a quiet round reads no row
    records.texts["b"] = "A corrected heron."
    records.version = 2  # a correction moves the version
    done = keeper.round()
    assert (done.written, done.unchanged, records.walks) == (1, 1, 2)
    assert documents("heron") == ["tm://test/records/b"]
    assert documents("bittern") == []
    assert keeper.walks == 1  # one mount walked, not a full walk


def test_a_corrected_record_is_found_and_a_quiet_round_reads_no_record(keepers: Any) -> None:
    fill(read_checkout(Path(__file__).resolve().parents[2]))
    entity = EntityMount("test", None)
    walked: list[int] = []
    whole = entity.documents

    def counted() -> Iterator[Document]:
        walked.append(1)
        return whole()

    entity.documents = counted  # type: ignore[method-assign]
    keeper = keepers(lambda: {"entity": entity}, "test", every=3600, full_every=3600)
    pad_poll = "tm://test/entity/pattern/pad-poll"
    keeper.round()
    assert keeper.round().written == 0 and walked == [1]  # the stamp did not move: no walk
    for number, word in enumerate(("gamepad", "joystick"), start=2):
        m.Correction.objects.create(
            entity="pattern", key="pad-poll", field="description", value=f"Polls the {word}."
        )
        m.Pattern.objects.filter(key="pad-poll").update(description=f"Polls the {word}.")
        done = keeper.round()
        assert (done.written, done.changed, len(walked)) == (1, [pad_poll], number)
        assert documents(word) == [pad_poll]
    assert documents("gamepad") == []  # the corrected text is gone


def test_a_refresh_reads_only_its_addresses_on_both_engines(
    checkout: Path, fs: FsMount, using: str
) -> None:
    index.sync({"fs": fs}, using)
    docs = checkout / "docs"
    (docs / "patterns.md").write_text("# Patterns\n\nA joystick routine.\n")
    (docs / "other.md").unlink()
    (docs / "more").mkdir()
    (docs / "more" / "new.md").write_text("# New\n\nAn aardvark.\n")
    (docs / "bresenham.md").write_text("# Bresenham\n\nNot told: left as it was indexed.\n")
    told = [
        TmUri("test", "fs", ("docs", "patterns.md"), False),
        TmUri("test", "fs", ("docs", "other.md"), False),
        TmUri("test", "fs", ("docs", "more"), True),
    ]
    done = index.refresh("fs", fs, told, using)
    assert (done.written, done.dropped, done.unchanged) == (2, 1, 0)

    def found(text: str) -> list[str]:
        return [hit.uri for hit in index.search(parse_query(text), "tm://test/", (), 10, using)]

    assert found("joystick") == ["tm://test/fs/docs/patterns.md"]
    assert found("aardvark") == ["tm://test/fs/docs/more/new.md"]
    assert "tm://test/fs/docs/other.md" not in found("drawing")
    assert found("told") == []  # what was not told waits for its change, or the next walk
