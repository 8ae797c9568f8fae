"""One handle read by many threads at once gives the same answers as one thread."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.gitstore.conftest import World
from tmsite import gitstore

pytestmark = pytest.mark.spec("GIT")


def _read_everything(repo: gitstore.GitRepo, start: str) -> tuple[object, ...]:
    commit = gitstore.resolve(repo, start).commit
    entries = gitstore.list_tree(repo, commit, "", depth=8)
    blobs = tuple(gitstore.read_blob(repo, e.sha) for e in entries if e.kind in ("blob", "symlink"))
    return (
        commit,
        tuple(entries),
        blobs,
        tuple(gitstore.log(repo, commit, "blame.txt", n=100)),
        tuple(gitstore.blame(repo, commit, "blame.txt")),
    )


def test_threads_share_a_handle(world: World) -> None:
    starts = ["HEAD", "v1", "v2", "feature", "release/1.0"] * 8
    with gitstore.open_repo(world.path) as repo:
        gitstore.clear_caches()
        expected = {s: _read_everything(repo, s) for s in set(starts)}
        for _round in range(3):
            gitstore.clear_caches()
            with ThreadPoolExecutor(max_workers=8) as pool:
                results = list(pool.map(lambda s: (s, _read_everything(repo, s)), starts))
            for start, result in results:
                assert result == expected[start]


def test_threads_with_their_own_handles(world: World) -> None:
    def work(start: str) -> tuple[object, ...]:
        with gitstore.open_repo(world.path) as repo:
            return _read_everything(repo, start)

    gitstore.clear_caches()
    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(work, ["HEAD", "v2"] * 6))
    assert all(r == results[0] for r in results[0::2])
    assert all(r == results[1] for r in results[1::2])
