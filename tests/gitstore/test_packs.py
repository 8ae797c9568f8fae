"""Objects read straight from pack files: whole and deltified entries, headers, commit-graphs.

The scenario repository is written loose; here a copy is packed by the git CLI with deep delta
chains, so trees, blobs and commits come back through the direct pack reader and its delta
resolution, and every answer is checked against dulwich's own reader and the git CLI.
"""

from __future__ import annotations

import io
import os
import shutil
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from dulwich.repo import Repo

from tests.git_oracle import git_cli, needs_git, run_git
from tests.gitstore.conftest import World
from tmsite import gitstore
from tmsite.gitstore.graphwrite import write_size_tables
from tmsite.gitstore.repo import COMMIT, TYPE_NAMES, inflate, parse_commit, parse_walk

pytestmark = pytest.mark.spec("GIT")


def _git(path: Path, *args: str) -> str:
    return run_git(path, *args, timeout=120)


@pytest.fixture(scope="module")
def packed(world: World, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the scenario packed with deltas, with a commit-graph written by git."""
    git_cli()  # the git CLI packs the copy
    target = tmp_path_factory.mktemp("packed") / "repo"
    shutil.copytree(world.path, target, symlinks=True)
    _git(target, "repack", "-a", "-d", "-f", "--depth=50", "--window=250")
    _git(target, "prune-packed")
    _git(target, "commit-graph", "write", "--reachable")
    return target


def _all_objects(path: Path) -> list[tuple[str, str, int]]:
    text = _git(path, "cat-file", "--batch-all-objects", "--batch-check")
    return [
        (sha, kind, int(size))
        for sha, kind, size in (line.split() for line in text.split("\n") if line)
    ]


@needs_git
def test_the_copy_is_packed_with_deltas(packed: Path) -> None:
    pack_dir = packed / ".git" / "objects" / "pack"
    index = next(p for p in os.listdir(pack_dir) if p.endswith(".idx"))
    listing = _git(packed, "verify-pack", "-v", str(pack_dir / index))
    assert "chain length" in listing  # some entries are deltas
    loose = [d for d in os.listdir(packed / ".git" / "objects") if len(d) == 2]
    assert all(not os.listdir(packed / ".git" / "objects" / d) for d in loose)


@needs_git
def test_every_object_reads_as_git_and_dulwich_read_it(packed: Path) -> None:
    gitstore.clear_caches()
    with gitstore.open_repo(packed) as repo, Repo(str(packed)) as plain:
        for sha, kind, size in _all_objects(packed):
            type_num, data = repo.raw(sha)
            assert TYPE_NAMES[type_num] == kind
            assert len(data) == size
            assert (type_num, data) == plain.object_store.get_raw(sha.encode("ascii"))
            assert repo.header(sha) == (type_num, size)
            assert repo.size(sha) == size
        assert repo._indexes is not None and all(r is not None for r in repo._indexes)
        pack = repo._packs[0]
        reader = repo._indexes[0]
        assert reader is not None
        every = {sha for sha, _kind, _size in _all_objects(packed)}
        for sha in every:
            binary = bytes.fromhex(sha)
            assert reader.offset(binary) == pack.index.object_offset(binary)
            for missing in (binary[:-1] + bytes([binary[-1] ^ 1]), b"\0" * 20, b"\xff" * 20):
                if missing.hex() not in every:
                    assert reader.offset(missing) is None


@needs_git
def test_a_git_written_commit_graph_is_read_lazily(packed: Path) -> None:
    gitstore.clear_caches()
    with gitstore.open_repo(packed) as repo:
        commits = [sha for sha, kind, _size in _all_objects(packed) if kind == "commit"]
        assert commits
        repo.walk_info(commits[0])
        assert repo._graph is not None
        for sha in commits:
            type_num, data = repo.raw(sha)
            assert type_num == COMMIT
            info = parse_commit(data)
            assert repo.walk_info(sha) == (info.tree, info.parents, info.commit_time)
            assert parse_walk(data) == (info.tree, info.parents, info.commit_time)
        assert repo._graph.walk_record(b"\0" * 20) is None
        assert repo._graph.walk_record(b"\xff" * 20) is None


@needs_git
@pytest.mark.parametrize("path", ["blame.txt", "src", "deep/a/b/c/d/e/f.txt", "vendor/lib", ""])
def test_packed_answers_equal_loose_answers(world: World, packed: Path, path: str) -> None:
    answers = []
    for where in (world.path, packed):
        gitstore.clear_caches()
        with gitstore.open_repo(where) as repo:
            head = gitstore.resolve(repo, None).commit
            answers.append(
                (
                    gitstore.log(repo, head, path, n=100),
                    gitstore.list_tree(repo, head, "", depth=8),
                    gitstore.blame(repo, head, "blame.txt"),
                    gitstore.lookup(repo, head, "big.bin"),
                )
            )
    assert answers[0] == answers[1]


def test_inflate_takes_stored_blocks_and_refuses_a_cut_stream() -> None:
    data = os.urandom(300 * 1024)  # incompressible: stored blocks, the largest growth
    stream = zlib.compress(data, 0) + b"next entry"
    assert inflate(stream, 0, len(data)) == data
    small = zlib.compress(b"hello\n" * 50)
    assert inflate(b"xx" + small + b"\x00" * 8, 2, 300) == b"hello\n" * 50
    with pytest.raises(ValueError):
        inflate(small[:-6], 0, 300)
    with pytest.raises(ValueError):
        inflate(small, 0, 299)


def test_parse_walk_falls_back_on_unusual_headers() -> None:
    tree = b"a" * 40
    plain = b"tree " + tree + b"\nauthor A <a@x> 5 +0000\ncommitter C <c@x> 7 +0100\n\nmsg\n"
    assert parse_walk(plain) == (tree.decode(), (), 7)
    odd = b"tree " + tree + b"\nauthor A <a@x> 5 +0000\n\ncommitter X <x@y> 9 +0000\n"
    assert parse_walk(odd) == (tree.decode(), (), 0)  # a committer in the message is not one
    late = (
        b"tree "
        + tree
        + b"\nauthor A <a@x> 5 +0000\nparent "
        + b"b" * 40
        + b"\ncommitter C <c@x> 7 +0000\n\nm\n"
    )
    assert parse_walk(late) == (tree.decode(), ("b" * 40,), 7)


@needs_git
def test_what_the_direct_reader_refuses_dulwich_reads(
    packed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = sys.modules["tmsite.gitstore.repo"]

    def refuse(*_args: object) -> bytes:
        raise ValueError("refused")

    monkeypatch.setattr(module, "inflate", refuse)
    monkeypatch.setattr(module, "delta_target_size", refuse)
    gitstore.clear_caches()
    with gitstore.open_repo(packed) as repo, Repo(str(packed)) as plain:
        for sha, kind, size in _all_objects(packed)[:40]:
            assert repo.raw(sha) == plain.object_store.get_raw(sha.encode("ascii"))
            assert repo.header(sha) == (repo.raw(sha)[0], size)
            assert TYPE_NAMES[repo.object_type(sha)] == kind


# --- a pack's size table (``tm_git maintain``) ----------------------------------------------


def _size_tables(path: Path) -> list[Path]:
    folder = path / ".git" / "objects" / "info" / "sizes"
    return sorted(folder.iterdir()) if folder.is_dir() else []


def _listed_sizes(path: Path) -> list[int]:
    """The sizes a whole listing gives (``tree.py`` asks for them all at once)."""
    gitstore.clear_caches()
    with gitstore.open_repo(path) as repo:
        head = gitstore.resolve(repo, None).commit
        return [e.size for e in gitstore.list_tree(repo, head, "", depth=8) if e.size is not None]


def _copy_with_its_table(packed: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the packed repository, with its pack's size table written: both paths."""
    copy = tmp_path / "repo"
    shutil.copytree(packed, copy, symlinks=True)
    gitstore.clear_caches()
    with gitstore.open_repo(copy) as repo:
        write_size_tables(repo)
    [table] = _size_tables(copy)
    return copy, table


@needs_git
def test_a_size_table_holds_every_size_git_gives_in_the_index_order(
    packed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    copy = tmp_path / "repo"
    shutil.copytree(packed, copy, symlinks=True)
    without = _listed_sizes(copy)
    settings.TM_CHECKOUT = tmp_path / "not-a-repository"
    settings.TM_GIT_REPOS = {"packed": copy}
    out = io.StringIO()
    call_command("tm_git", "maintain", stdout=out)
    assert "packed: wrote the size table of 1 pack(s)" in out.getvalue()
    [table] = _size_tables(copy)
    pack = next((copy / ".git" / "objects" / "pack").glob("*.pack"))
    assert table.name == pack.with_suffix(".sizes").name  # named by the pack's checksum
    gitstore.clear_caches()
    with gitstore.open_repo(copy) as repo:
        assert write_size_tables(repo) == 0  # the pack has its table
        [table] = repo.size_tables()
        assert table is not None
        git_sizes = {sha: size for sha, _kind, size in _all_objects(copy)}
        in_order = sorted(git_sizes)  # the index's order: by id
        assert list(table) == [git_sizes[sha] for sha in in_order]

        def unread(*_args: object) -> int:
            raise AssertionError("an entry was read for its size")

        monkeypatch.setattr(sys.modules["tmsite.gitstore.repo"], "packed_size", unread)
        assert repo.sizes(in_order) == [git_sizes[sha] for sha in in_order]
    assert _listed_sizes(copy) == without


@needs_git
@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[:-4],  # cut short
        lambda data: data + b"\0\0\0\0",  # one size too many
        lambda data: b"XXXX" + data[4:],  # not a table
        lambda data: data[:4] + b"\2\0\0\0" + data[8:],  # a version this reader does not know
        lambda data: (
            data[:8]
            + (int.from_bytes(data[8:12], "little") - 1).to_bytes(4, "little")
            + data[12:-4]
        ),  # counts one object fewer than the pack
    ],
    ids=["cut", "long", "magic", "version", "count"],
)
def test_a_size_table_that_does_not_fit_its_pack_is_not_read(
    packed: Path, tmp_path: Path, damage: Callable[[bytes], bytes]
) -> None:
    copy, table = _copy_with_its_table(packed, tmp_path)
    table.chmod(0o644)
    table.write_bytes(damage(table.read_bytes()))
    gitstore.clear_caches()
    with gitstore.open_repo(copy) as repo:
        assert repo.size_tables() == [None]
    assert _listed_sizes(copy) == _listed_sizes(packed)


@needs_git
def test_a_size_table_whose_pack_is_gone_is_removed(packed: Path, tmp_path: Path) -> None:
    copy, old = _copy_with_its_table(packed, tmp_path)
    (copy / "more.txt").write_text("more\n")
    _git(copy, "add", "more.txt")
    _git(copy, "-c", "user.name=A", "-c", "user.email=a@x", "commit", "-q", "-m", "more")
    _git(copy, "repack", "-a", "-d")  # one new pack of every object, the old one removed
    gitstore.clear_caches()
    with gitstore.open_repo(copy) as repo:
        assert write_size_tables(repo) == 1
    [new] = _size_tables(copy)
    pack = next((copy / ".git" / "objects" / "pack").glob("*.pack"))
    assert new != old and new.name == pack.with_suffix(".sizes").name
    gitstore.clear_caches()
    with gitstore.open_repo(copy) as repo:
        [table] = repo.size_tables()
        git_sizes = {sha: size for sha, _kind, size in _all_objects(copy)}
        assert table is not None and sorted(table) == sorted(git_sizes.values())
