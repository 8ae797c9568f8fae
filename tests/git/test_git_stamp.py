"""Git reads kept while their commit is: given again unread, and read anew once the ref moves.

A repository built with dulwich and served as the only mount; reads through ``/api/mcp`` (the
endpoint's ordinary path, where a kept answer is looked up before the method). Reads into the
mount are counted: an unchanged read is given again without one, and every answer is the one
the ordinary path builds with nothing kept, also after a new commit on the branch.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from tests.git.scenario import FS, REPO, Scenario
from tests.gitstore.builder import Builder
from tests.kept_reads import answer_kept, count_reads, ordinary_read, post_read
from tmsite import gitstore
from tmsite.core.uri import parse
from tmsite.mcp import prepared
from tmsite.mounts import registry
from tmsite.mounts.git import mount as git_mount
from tmsite.mounts.git import watch as git_watch

pytestmark = [pytest.mark.spec("T7", "GIT"), pytest.mark.django_db]

HOST = "tinymachines"
NOTES = f"tm://{HOST}/git/walk/notes.md"


@pytest.fixture
def walk(settings: Any, tmp_path: Path) -> Iterator[Builder]:
    """The repository ``walk`` (one commit on ``main``), the only mount served."""
    builder = Builder.init(str(tmp_path / "walk"))
    head = builder.commit("c0", {"notes.md": b"first notes\n"}, when=0)
    builder.set_ref("refs/heads/main", head)
    builder.repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
    settings.TM_HOST = HOST
    settings.TM_MOUNTS = ["git"]
    settings.TM_GIT_REPOS = {"walk": tmp_path / "walk"}
    settings.TM_CHECKOUT = tmp_path / "no-checkout"
    gitstore.clear_caches()
    registry.reset()
    prepared.clear()
    yield builder
    prepared.clear()
    registry.reset()
    gitstore.clear_caches()


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """One item per read that reached the git mount."""
    return count_reads(monkeypatch, git_mount.GitMount)


def _text(answer: bytes) -> str:
    return str(json.loads(answer)["result"]["contents"][0]["text"])


def _commit(builder: Builder, text: bytes, when: int) -> str:
    head = builder.repo.refs[b"refs/heads/main"]
    sha = builder.commit("next", {"notes.md": text}, [head], when=when)
    builder.set_ref("refs/heads/main", sha)
    return sha.decode()


def test_an_unchanged_read_is_given_again_without_reading(walk: Builder, reads: list[str]) -> None:
    first = post_read(NOTES)
    built = len(reads)
    assert built >= 1 and _text(first) == "first notes\n"
    assert answer_kept(NOTES), "kept"
    assert post_read(NOTES) == post_read(NOTES) == first
    assert len(reads) == built, "given again: the mount was not read"
    assert post_read(NOTES, 41) == ordinary_read(NOTES, 41)


def test_a_new_commit_on_the_branch_is_read_at_once(walk: Builder, reads: list[str]) -> None:
    assert _text(post_read(NOTES)) == "first notes\n"
    _commit(walk, b"second notes\n", 60)
    git_watch.refs_moved()  # as the ref watcher does when it sees main move
    before = len(reads)
    moved = post_read(NOTES)
    assert _text(moved) == "second notes\n"
    assert len(reads) > before, "read anew"
    assert moved == ordinary_read(NOTES)
    again = len(reads)
    assert post_read(NOTES) == moved and len(reads) == again, "and kept again"


def test_past_the_time_a_ref_is_trusted_the_move_is_read_untold(
    walk: Builder, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(git_mount, "REF_TTL", 0.0)  # every stamp reads the ref store
    assert _text(post_read(NOTES)) == "first notes\n"
    count = len(reads)
    assert _text(post_read(NOTES)) == "first notes\n" and len(reads) == count, (
        "kept while main stays"
    )
    _commit(walk, b"third notes\n", 120)
    assert _text(post_read(NOTES)) == "third notes\n"
    assert post_read(NOTES) == ordinary_read(NOTES)


def test_the_stamp_is_the_commit_the_branch_resolves_to(walk: Builder) -> None:
    mount = registry.namespace().mounts["git"]
    first = walk.repo.refs[b"refs/heads/main"].decode()
    assert mount.stamp(parse(NOTES))[0] == first
    second = _commit(walk, b"moved\n", 60)
    git_watch.refs_moved()
    assert mount.stamp(parse(NOTES))[0] == second


def test_addresses_the_read_refuses_by_their_form_have_no_stamp(walk: Builder) -> None:
    mount = registry.namespace().mounts["git"]
    for uri in (
        f"tm://{HOST}/git/walk/",
        f"tm://{HOST}/git/walk",
        f"tm://{HOST}/git/nowhere/notes.md",
        f"tm://{HOST}/git/walk/.env",
    ):
        assert mount.stamp(parse(uri)) is None, uri


def test_the_working_copy_link_is_in_the_stamp(fresh: Scenario) -> None:
    """The default read of a checkout file links its fs copy: the copy gone moves the stamp."""
    space = fresh.namespace()
    mount = space.mounts["git"]
    uri = parse(f"{REPO}notes/n.md")
    before = mount.stamp(uri)
    assert before is not None and before[2], "the working copy is linked"
    read = space.read(str(uri))
    assert any(link.href == f"{FS}notes/n.md" for link in read.links)
    (fresh.checkout / "notes" / "n.md").unlink()
    after = mount.stamp(uri)
    assert after is not None and after[:2] == before[:2] and after[2] == ()
    assert not any(link.rel == "tm:working-copy" for link in space.read(str(uri)).links)


def test_rest_and_the_resolve_tool_share_the_kept_read(walk: Builder, reads: list[str]) -> None:
    assert _text(post_read(NOTES)) == "first notes\n"
    count = len(reads)
    rest = Client().get("/api/v1/resolve", {"uri": NOTES})
    assert rest.status_code == 200 and rest.json()["text"] == "first notes\n"
    call = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "resolve", "arguments": {"uri": NOTES}},
    }
    tool = Client().post(
        "/api/mcp",
        json.dumps(call),
        content_type="application/json",
        headers={"MCP-Protocol-Version": "2025-11-25"},
    )
    assert "first notes" in tool.content.decode()
    assert len(reads) == count, "REST and the tool were given the namespace's kept read"
    _commit(walk, b"second notes\n", 60)
    git_watch.refs_moved()
    assert Client().get("/api/v1/resolve", {"uri": NOTES}).json()["text"] == "second notes\n"
    assert len(reads) == count + 1
