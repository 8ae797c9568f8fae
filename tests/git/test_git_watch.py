"""Refs moving, seen for the git URIs someone listens to: a real dulwich repository whose
branch is moved by a real new commit while the watcher polls, listened to through the bus."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gitstore.builder import Builder
from tmsite.bus import changes
from tmsite.mounts.git.mount import GitMount
from tmsite.mounts.git.watch import RefWatcher
from tmsite.mounts.namespace import Namespace

pytestmark = pytest.mark.spec("SUB3")
HOST = "test"
G = f"tm://{HOST}/git/site/"


class Heard:
    """The URIs the bus delivered, and a wait for the next ones."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self._cond = threading.Condition()

    def __call__(self, change: changes.Change) -> None:
        with self._cond:
            if change.uri is not None and change.uri.startswith(f"tm://{HOST}/git/"):
                self.uris.append(change.uri)
                self._cond.notify_all()

    def wait_for(self, uri: str, timeout: float = 5.0) -> None:
        with self._cond:
            assert self._cond.wait_for(lambda: uri in self.uris, timeout), self.uris


@pytest.fixture
def repo(tmp_path: Path) -> Builder:
    built = Builder.init(str(tmp_path / "site"))
    first = built.commit(
        "first", {"docs/a.md": b"one\n", "docs/b.md": b"bee\n", "README": b"r\n"}, when=0
    )
    built.set_ref("refs/heads/main", first)
    built.repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
    return built


@pytest.fixture
def heard() -> Iterator[Heard]:
    got = Heard()
    remove = changes.add_listener(got)
    yield got
    remove()


@pytest.fixture
def watcher(repo: Builder) -> Iterator[RefWatcher]:
    found = RefWatcher(HOST, {"site": repo.repo.path}, changes.publish, interval=0.05)
    remove = changes.add_interest_watcher(found.interest)
    yield found
    remove()


def polled(watcher: RefWatcher, more: int = 2, timeout: float = 5.0) -> None:
    """Wait until the watcher has polled ``more`` more times (it noted where the refs are)."""
    target = watcher.polls + more
    end = time.monotonic() + timeout
    while watcher.polls < target:
        assert time.monotonic() < end, "the watcher does not poll"
        time.sleep(0.01)


def test_a_moved_default_branch_fires_what_changed_and_only_that(
    repo: Builder, watcher: RefWatcher, heard: Heard
) -> None:
    first = repo.repo.refs[b"refs/heads/main"]
    pinned = f"{G}docs/a.md?at={first.decode()}"
    listened = [
        f"{G}docs/a.md",
        f"{G}docs/a.md?as=log",
        f"{G}docs/a.md?at=main",
        f"{G}docs/",
        f"{G}README",
        pinned,
    ]
    with changes.listening(listened):
        # A pinned commit never moves: it is not even watched.
        assert watcher.watched() == sorted(
            [f"{G}docs/a.md", f"{G}docs/a.md?at=main", f"{G}docs/", f"{G}README"]
        )
        polled(watcher)
        second = repo.commit(
            "second", {"docs/a.md": b"two\n", "docs/c.md": b"new\n"}, [first], when=60
        )
        repo.set_ref("refs/heads/main", second)
        heard.wait_for(f"{G}docs/c.md")
        heard.wait_for(f"{G}docs/a.md?at=main")
        polled(watcher)
    assert sorted(heard.uris) == sorted(
        [
            f"{G}docs/a.md",  # the file, its log view and its directory: once
            f"{G}docs/c.md",  # new beneath the directory
            f"{G}docs/a.md?at=main",  # the branch by name
        ]
    )
    # Nobody listens any more: nothing is watched, a move publishes nothing.
    assert watcher.watched() == []
    third = repo.commit("third", {"docs/a.md": b"three\n"}, [second], when=120)
    repo.set_ref("refs/heads/main", third)
    time.sleep(0.3)
    assert sorted(heard.uris) == sorted([f"{G}docs/a.md", f"{G}docs/c.md", f"{G}docs/a.md?at=main"])


def test_the_mount_root_hears_every_change_and_a_pinned_default_does_not_move(
    repo: Builder, tmp_path: Path, heard: Heard
) -> None:
    first = repo.repo.refs[b"refs/heads/main"]
    pinned = RefWatcher(
        HOST,
        {"site": repo.repo.path},
        changes.publish,
        default_refs={"site": "v1"},
        interval=0.05,
    )
    repo.set_ref("refs/tags/v1", first)
    remove = changes.add_interest_watcher(pinned.interest)
    try:
        with changes.listening([f"tm://{HOST}/git/", f"{G}docs/b.md"]):
            polled(pinned)
            second = repo.commit("second", {"docs/b.md": b"changed\n"}, [first], when=60)
            repo.set_ref("refs/heads/main", second)
            polled(pinned, 4)
            assert heard.uris == [], "the default is pinned to v1, which did not move"
            repo.set_ref("refs/tags/v1", second)
            heard.wait_for(f"{G}docs/b.md")
            polled(pinned)
        assert heard.uris == [f"{G}docs/b.md"]
    finally:
        remove()


def test_poll_once_without_a_thread(repo: Builder, heard: Heard) -> None:
    published: list[str] = []
    watcher = RefWatcher(HOST, {"site": repo.repo.path}, published.append, threaded=False)
    watcher.interest(f"{G}README", True)
    assert watcher.poll() == []  # the first poll notes where main is
    first = repo.repo.refs[b"refs/heads/main"]
    repo.set_ref("refs/heads/main", repo.commit("r", {"README": b"again\n"}, [first], when=9))
    assert watcher.poll() == [f"{G}README"] == published
    assert watcher.poll() == []
    watcher.interest(f"{G}README", False)
    assert heard.uris == [], "a watcher publishes only through what it is given"


def test_a_read_right_after_the_change_is_told_reads_the_new_commit(
    repo: Builder, heard: Heard
) -> None:
    mount = GitMount(HOST, {"site": repo.repo.path})
    space = Namespace(HOST, {"git": mount})
    assert space.read(f"{G}README").body == "r\n"  # resolved and trusted for REF_TTL
    watcher = RefWatcher(HOST, {"site": repo.repo.path}, changes.publish, threaded=False)
    watcher.interest(f"{G}README", True)
    watcher.poll()
    first = repo.repo.refs[b"refs/heads/main"]
    repo.set_ref("refs/heads/main", repo.commit("r", {"README": b"new\n"}, [first], when=9))
    assert watcher.poll() == [f"{G}README"]
    assert heard.uris == [f"{G}README"]
    assert space.read(f"{G}README").body == "new\n"
