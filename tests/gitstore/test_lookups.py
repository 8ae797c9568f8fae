"""Shortcuts of the object lookups, each held to the long way's answer.

* an id in a sorted id table (a pack index, a commit-graph) is sought near where its bytes put
  it before its whole bucket is;
* an entry of a raw tree is sought by its text, which may also occur inside a longer name or
  an id;
* HEAD is read from its own files where it names a branch plainly, else from every ref.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from dulwich.objects import Tree
from dulwich.repo import Repo

from tests.gitstore.builder import Builder
from tmsite import gitstore
from tmsite.gitstore.repo import WINDOW, find_id, find_in_tree

pytestmark = pytest.mark.spec("GIT")


def _table(ids: list[bytes]) -> tuple[bytes, tuple[int, ...]]:
    """A sorted id table with its fan-out, as a pack index or a commit-graph lays them out."""
    ids = sorted(ids)
    fanout = tuple(sum(1 for one in ids if one[0] <= first) for first in range(256))
    return b"".join(ids), fanout


def test_ids_are_found_near_their_place_and_absent_ones_are_not() -> None:
    rng = random.Random(28)
    ids = sorted({rng.randbytes(20) for _ in range(120_000)})
    table, fanout = _table(ids)
    assert max(b - a for a, b in zip((0, *fanout), fanout, strict=False)) > 4 * WINDOW
    for index in range(0, len(ids), 7):
        assert find_id(table, 0, fanout, ids[index]) == index
    present = set(ids)
    for _ in range(5_000):
        other = rng.randbytes(20)
        if other not in present:
            assert find_id(table, 0, fanout, other) == -1
    # Ids bunched in one corner of their bucket: the guess misses, the bucket still answers.
    bunched = [bytes([7, 0xFF, 0xFF]) + rng.randbytes(17) for _ in range(500)]
    bunched += [bytes([7, 0, 0]) + rng.randbytes(17) for _ in range(500)]
    table, fanout = _table(bunched)
    ordered = sorted(bunched)
    for index, one in enumerate(ordered):
        assert find_id(table, 0, fanout, one) == index
    assert find_id(table, 0, fanout, bytes([7, 0x80]) + b"\0" * 18) == -1


def _lookalikes() -> Tree:
    tree = Tree()
    tree.add(b"x refs.c", 0o100644, b"1" * 40)  # the text " refs.c\0" ends this name
    tree.add(b"100644 refs.c", 0o100644, b"2" * 40)  # and this one, after a mode-like start
    tree.add(b"zz", 0o100644, (b" refs.c\0" + b"\1" * 12).hex().encode())  # and lies in an id
    return tree


def test_a_tree_entry_is_told_from_its_text_elsewhere() -> None:
    tree = _lookalikes()
    raw = tree.as_raw_string()
    assert raw.count(b" refs.c\0") == 3
    assert find_in_tree(raw, b"refs.c") is None
    assert find_in_tree(raw, b"x refs.c") == (0o100644, "1" * 40)
    assert find_in_tree(raw, b"nothing") is None
    tree.add(b"refs.c", 0o100755, b"3" * 40)
    tree.add(b"refs.c.orig", 0o100644, b"4" * 40)
    raw = tree.as_raw_string()
    assert find_in_tree(raw, b"refs.c") == (0o100755, "3" * 40)
    assert find_in_tree(raw, b"refs.c.orig") == (0o100644, "4" * 40)
    assert find_in_tree(raw, b"zz")[0] == 0o100644  # type: ignore[index]


def _two_commits(root: Path) -> tuple[Builder, str, str]:
    b = Builder.init(str(root))
    one = b.commit("one", {"a.txt": b"one\n"}, when=0)
    two = b.commit("two", {"a.txt": b"two\n"}, [one], when=60)
    return b, one.decode(), two.decode()


def test_head_is_read_from_its_loose_or_packed_branch(tmp_path: Path) -> None:
    b, one, two = _two_commits(tmp_path / "repo")
    b.set_ref("refs/heads/master", two.encode())
    b.set_ref("refs/tags/v1", one.encode())
    git_dir = tmp_path / "repo" / ".git"
    with gitstore.open_repo(tmp_path / "repo") as repo:
        assert repo.head() == two  # loose
        assert gitstore.resolve(repo, None).commit == two
    with Repo(str(tmp_path / "repo")) as plain:
        plain.refs.pack_refs(all=True)
    assert not (git_dir / "refs" / "heads" / "master").exists()
    with gitstore.open_repo(tmp_path / "repo") as repo:
        assert repo.head() == two  # packed
        assert gitstore.resolve(repo, None).commit == two
        assert gitstore.resolve(repo, "v1").commit == one
    (git_dir / "HEAD").write_text(one + "\n")  # detached
    with gitstore.open_repo(tmp_path / "repo") as repo:
        assert repo.head() == one
        assert gitstore.resolve(repo, None).commit == one


@pytest.mark.parametrize(
    "head",
    [
        "ref: refs/tags/v1\n",  # not a branch: every ref is read
        "ref: refs/heads/../../config\n",  # not a well-formed name: never opened
        "ref: refs/heads/missing\n",  # no such branch
    ],
)
def test_a_head_that_is_not_plain_is_left_to_every_ref(tmp_path: Path, head: str) -> None:
    b, one, _two = _two_commits(tmp_path / "repo")
    b.set_ref("refs/tags/v1", one.encode())
    (tmp_path / "repo" / ".git" / "HEAD").write_text(head)
    with gitstore.open_repo(tmp_path / "repo") as repo:
        assert repo.head() is None
        if head.startswith("ref: refs/tags/"):
            assert gitstore.resolve(repo, None).commit == one
        else:
            with pytest.raises(gitstore.NoSuchRef):
                gitstore.resolve(repo, None)
