"""The change bus: who a change reaches, listeners from many threads, interest counts."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from tmsite.bus import changes
from tmsite.bus.changes import Change, affects
from tmsite.core.errors import BadUri

pytestmark = pytest.mark.spec("SUB3")


@pytest.fixture
def heard() -> Iterator[list[Change]]:
    got: list[Change] = []
    remove = changes.add_listener(got.append)
    yield got
    remove()


@pytest.mark.parametrize(
    ("subscribed", "changed", "told"),
    [
        ("tm://h/fs/a.md", "tm://h/fs/a.md", "tm://h/fs/a.md"),
        # a view of the resource is reached, and told of the URI it subscribed to
        ("tm://h/fs/a.md?lines=1-9", "tm://h/fs/a.md", "tm://h/fs/a.md?lines=1-9"),
        ("tm://h/fs/a.md?as=stat", "tm://h/fs/a.md", "tm://h/fs/a.md?as=stat"),
        # a collection is reached by what is beneath it, told of the child
        ("tm://h/fs/", "tm://h/fs/docs/a.md", "tm://h/fs/docs/a.md"),
        ("tm://h/fs/docs/", "tm://h/fs/docs/sub/", "tm://h/fs/docs/sub/"),
        ("tm://h/", "tm://h/git/r/x", "tm://h/git/r/x"),
        ("tm://h", "tm://h/git/r/x", "tm://h/git/r/x"),
        ("tm://", "tm://h/fs/a.md", "tm://h/fs/a.md"),
        ("tm://h/fs/docs/", "tm://h/fs/docs/", "tm://h/fs/docs/"),
        # the child's URI as published, canonical
        ("tm://h/fs/", "tm://h/fs/a%20b.md", "tm://h/fs/a%20b.md"),
        # at= pins a version: matched only by the same at=
        ("tm://h/git/r/x?at=main", "tm://h/git/r/x?at=main", "tm://h/git/r/x?at=main"),
        ("tm://h/git/r/", "tm://h/git/r/x?at=dev", None),
        ("tm://h/git/r/x?at=0123abcd", "tm://h/git/r/x", None),
        ("tm://h/git/r/x", "tm://h/git/r/x?at=main", None),
        # not beneath, not the same
        ("tm://h/fs/a.md", "tm://h/fs/a.md/", None),
        ("tm://h/fs/a.md", "tm://h/fs/a.mdx", None),
        ("tm://h/fs/docs/", "tm://h/fs/docsx/a", None),
        ("tm://h/fs/docs/sub/", "tm://h/fs/docs/", None),
        ("tm://h/fs/docs/a.md", "tm://h/fs/docs/", None),
        ("tm://h/fs/", "tm://other/fs/a", None),
        ("tm://h/fs", "tm://h/fs/a", None),
    ],
)
def test_which_subscription_a_change_reaches(subscribed: str, changed: str, told: str) -> None:
    assert affects(subscribed, changed) == told


def test_an_exact_change_reaches_its_own_subscribers_only(heard: list[Change]) -> None:
    secret = "tm://h/proposals/ab.cd"
    assert affects(secret + "?as=text", secret, exact=True) == secret + "?as=text"
    assert affects("tm://h/proposals/", secret, exact=True) is None
    assert affects("tm://h/", secret, exact=True) is None
    assert affects("tm://", secret, exact=True) is None
    assert affects("tm://h/proposals/", secret) == secret
    changes.publish(secret, exact=True)
    assert heard == [Change("updated", uri=secret, exact=True)]


def test_publish_reaches_every_listener_with_the_canonical_uri(heard: list[Change]) -> None:
    other: list[Change] = []
    remove = changes.add_listener(other.append)
    changes.publish("tm://h/fs/a%20b.md?lines=1-2&as=text")
    changes.publish_list_changed("tools")
    remove()
    changes.publish("tm://h/fs/b.md")
    assert heard == [
        Change("updated", uri="tm://h/fs/a%20b.md?as=text&lines=1-2"),
        Change("list_changed", list_kind="tools"),
        Change("updated", uri="tm://h/fs/b.md"),
    ]
    assert other == heard[:2]


def test_a_bad_uri_or_list_kind_is_refused_not_published(heard: list[Change]) -> None:
    with pytest.raises(BadUri):
        changes.publish("https://example.org/")
    with pytest.raises(ValueError, match="not a list kind"):
        changes.publish_list_changed("roots")  # type: ignore[arg-type]
    assert heard == []


def test_a_failing_listener_is_logged_and_the_others_still_hear(
    heard: list[Change], caplog: pytest.LogCaptureFixture
) -> None:
    def broken(change: Change) -> None:
        raise RuntimeError("listener broke")

    remove = changes.add_listener(broken)
    try:
        changes.publish("tm://h/fs/a.md")
    finally:
        remove()
    assert heard == [Change("updated", uri="tm://h/fs/a.md")]
    assert "a change listener failed" in caplog.text


def test_publishers_on_many_threads_reach_listeners_added_meanwhile() -> None:
    counts = [0, 0]
    lock = threading.Lock()

    def counter(index: int) -> changes.Listener:
        def hear(change: Change) -> None:
            with lock:
                counts[index] += 1

        return hear

    first = changes.add_listener(counter(0))
    start = threading.Barrier(5)

    def publisher(n: int) -> None:
        start.wait()
        for i in range(200):
            changes.publish(f"tm://h/fs/t{n}/{i}")

    threads = [threading.Thread(target=publisher, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    start.wait()
    second = changes.add_listener(counter(1))
    for thread in threads:
        thread.join()
    first()
    second()
    assert counts[0] == 800
    assert 0 < counts[1] <= 800


def test_interest_is_counted_and_a_watcher_hears_first_and_last_only() -> None:
    told: list[tuple[str, bool]] = []
    held = changes.interest("tm://h/fs/already.md")
    remove = changes.add_interest_watcher(lambda uri, present: told.append((uri, present)))
    try:
        assert told == [("tm://h/fs/already.md", True)]  # what is listened to already
        with changes.listening(["tm://h/fs/a%2Eb.md", "tm://h/fs/x/"]) as texts:
            assert texts == ["tm://h/fs/a.b.md", "tm://h/fs/x/"]
            changes.interest("tm://h/fs/x/")  # a second listener: no news
            assert changes.interests("tm://h/fs/x") == {"tm://h/fs/x/": 2}
        assert changes.interests("tm://h/fs/x") == {"tm://h/fs/x/": 1}
        changes.release("tm://h/fs/x/")
        changes.release("tm://h/fs/x/")  # not listened to any more: ignored
        assert changes.interests("tm://h/fs/x") == {}
    finally:
        remove()
        changes.release(held)
    assert told == [
        ("tm://h/fs/already.md", True),
        ("tm://h/fs/a.b.md", True),
        ("tm://h/fs/x/", True),
        ("tm://h/fs/a.b.md", False),
        ("tm://h/fs/x/", False),
    ]
    assert changes.interests("tm://h/fs/already") == {}


def test_a_watcher_removed_hears_nothing_more() -> None:
    told: list[tuple[str, bool]] = []
    remove = changes.add_interest_watcher(lambda uri, present: told.append((uri, present)))
    remove()
    with changes.listening(["tm://h/fs/q.md"]):
        pass
    assert told == []
