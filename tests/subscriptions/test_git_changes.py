"""A git ref moving reaches a listen stream: the box served by ``tmsite.serve.app`` on loopback,
its checkout a real dulwich repository whose branch a real new commit moves during the test.
The change sources are the ones the first stream installs (``sources.install``), not a watcher
the test builds."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.gitstore.builder import Builder
from tests.subscriptions.helpers import SUB_ID, Events, listen_body, listen_headers
from tmsite.mounts import registry
from tmsite.subscriptions import sources

pytestmark = [pytest.mark.spec("SUB3"), pytest.mark.slow]

HOST = "tinymachines"
REPO = f"tm://{HOST}/git/box"


@pytest.fixture
def repo(tmp_path: Path, settings: Any) -> Iterator[Builder]:
    built = Builder.init(str(tmp_path / "box"))
    first = built.commit("first", {"docs/a.md": b"one\n", "docs/b.md": b"bee\n"}, when=0)
    built.set_ref("refs/heads/main", first)
    built.repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
    settings.TM_CHECKOUT = tmp_path / "box"
    settings.TM_CHECKOUT_REPO = "box"
    settings.TM_GIT_REPOS = {}
    settings.TM_FS_ROOTS = ["docs"]
    settings.TM_HOST = HOST
    settings.TM_SUB_GIT_POLL = 0.05
    registry.reset()
    sources.uninstall()  # the first stream of this test installs them over this repository
    yield built
    sources.uninstall()
    registry.reset()


def test_a_branch_moved_by_a_new_commit_is_told_and_a_pinned_address_is_not(
    listen_url: str, repo: Builder
) -> None:
    first = repo.repo.refs[b"refs/heads/main"].decode()
    wanted = [f"{REPO}/docs/a.md", f"{REPO}/docs/b.md?at={first}", f"{REPO}/docs/"]
    body = listen_body("g-1", resourceSubscriptions=wanted)
    with (
        httpx.Client(timeout=httpx.Timeout(20, read=20)) as client,
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
    end = time.monotonic() + timeout
    while name not in sources.installed():
        assert time.monotonic() < end, f"no {name} change source was installed"
        time.sleep(0.01)
    return sources.installed()[name]


def _polled(watcher: Any, more: int = 2, timeout: float = 10.0) -> None:
    target = watcher.polls + more
    end = time.monotonic() + timeout
    while watcher.polls < target:
        assert time.monotonic() < end, "the git watcher does not poll"
        time.sleep(0.01)
