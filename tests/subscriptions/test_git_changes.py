"""A git ref moving reaches a listen stream: the box served by ``tmsite.serve.app`` on loopback,
its checkout a real dulwich repository whose branch a real new commit moves during the test.
The change sources are the ones the first stream installs (``sources.install``), not a watcher
the test builds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.gitstore.builder import Builder
from tests.subscriptions.helpers import (
    HOST,
    SUB_ID,
    Events,
    listen_body,
    listen_headers,
    own_box,
    stream_client,
)
from tests.waiting import wait_until
from tmsite.subscriptions import sources

pytestmark = [pytest.mark.spec("SUB3"), pytest.mark.slow]

REPO = f"tm://{HOST}/git/box"


@pytest.fixture
def repo(tmp_path: Path, settings: Any) -> Iterator[Builder]:
    built = Builder.init(str(tmp_path / "box"))
    first = built.commit("first", {"docs/a.md": b"one\n", "docs/b.md": b"bee\n"}, when=0)
    built.set_ref("refs/heads/main", first)
    built.repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
    settings.TM_CHECKOUT_REPO = "box"
    settings.TM_GIT_REPOS = {}
    settings.TM_SUB_GIT_POLL = 0.05
    # the first stream of this test installs the change sources over this repository
    with own_box(settings, tmp_path / "box", ["docs"], fresh_sources=True):
        yield built


def test_a_branch_moved_by_a_new_commit_is_told_and_a_pinned_address_is_not(
    listen_url: str, repo: Builder
) -> None:
    first = repo.repo.refs[b"refs/heads/main"].decode()
    wanted = [f"{REPO}/docs/a.md", f"{REPO}/docs/b.md?at={first}", f"{REPO}/docs/"]
    body = listen_body("g-1", resourceSubscriptions=wanted)
    with (
        stream_client() as client,
        client.stream("POST", listen_url, json=body, headers=listen_headers()) as response,
    ):
        assert response.status_code == 200
        events = Events(response)
        ack = events.message()
        assert ack["params"]["notifications"] == {"resourceSubscriptions": wanted}
        watcher = _installed("git")  # by the stream, not by this test
        _polled(watcher)  # it noted where the refs are before they move
        second = repo.commit(
            "second",
            {"docs/a.md": b"two\n", "docs/b.md": b"bee, changed\n"},
            parents=[first.encode()],
            when=1,
        )
        repo.set_ref("refs/heads/main", second)
        told = [events.message() for _ in range(2)]
    assert all(m["method"] == "notifications/resources/updated" for m in told), told
    assert all(m["params"]["_meta"] == {SUB_ID: "g-1"} for m in told), told
    # a.md by its own address, b.md beneath docs/; the address pinned to the first commit: never
    assert sorted(m["params"]["uri"] for m in told) == [f"{REPO}/docs/a.md", f"{REPO}/docs/b.md"]


def _installed(name: str, timeout: float = 10.0) -> Any:
    wait_until(
        lambda: name in sources.installed(), timeout, f"no {name} change source was installed", 0.01
    )
    return sources.installed()[name]


def _polled(watcher: Any, more: int = 2, timeout: float = 10.0) -> None:
    target = watcher.polls + more
    wait_until(lambda: watcher.polls >= target, timeout, "the git watcher does not poll", 0.01)
