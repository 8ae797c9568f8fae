"""Paths, lookups, listings, blob reads and .gitmodules at a commit."""

from __future__ import annotations

import pytest

from tests.git_oracle import needs_git
from tests.gitstore.conftest import BIG, PIN_1, PIN_2, World
from tmsite import gitstore
from tmsite.gitstore import HostileName, NotABlob, NotATree, OutOfRoot, PathNotFound

pytestmark = pytest.mark.spec("GIT")


@pytest.mark.parametrize(
    "path",
    [
        "..",
        "../x",
        "docs/../../x",
        "./docs",
        "docs/.",
        "/etc/passwd",
        "docs//guide.md",
        "a\\b",
        "docs/a\0b",
        ["docs", "a/b"],
        ["..", "x"],
        ["docs", ""],
        ["/abs"],
    ],
)
def test_normalise_refuses_escapes(path: str | list[str]) -> None:
    with pytest.raises(OutOfRoot) as caught:
        gitstore.normalise(path)
    assert caught.value.path == (path if isinstance(path, str) else "/".join(path))


@pytest.mark.parametrize("path", [".git", "docs/.git/config", ".GIT", ["x", ".Git"]])
def test_normalise_refuses_dot_git(path: str | list[str]) -> None:
    with pytest.raises(HostileName) as caught:
        gitstore.normalise(path)
    assert caught.value.name.lower() == ".git"


def test_normalise_accepts() -> None:
    assert gitstore.normalise("") == ()
    assert gitstore.normalise("docs/") == ("docs",)
    assert gitstore.normalise(["docs", "guide.md"]) == ("docs", "guide.md")
    assert gitstore.normalise("a/.hidden/b..c") == ("a", ".hidden", "b..c")


def test_lookup_kinds(world: World, repo: gitstore.GitRepo) -> None:
    head = world.c["c7"]
    root = gitstore.lookup(repo, head, "")
    assert (root.kind, root.mode, root.size, root.path) == ("tree", 0o40000, None, "")
    assert root.sha == repo.commit(head).tree
    readme = gitstore.lookup(repo, head, "README.md")
    assert (readme.kind, readme.mode, readme.size) == ("blob", 0o100644, len(b"# Demo\nFinal.\n"))
    docs = gitstore.lookup(repo, head, ["docs"])
    assert (docs.kind, docs.size, docs.path) == ("tree", None, "docs")
    sub = gitstore.lookup(repo, head, "vendor/lib")
    assert (sub.kind, sub.mode, sub.sha, sub.size) == ("submodule", 0o160000, PIN_2, None)
    link = gitstore.lookup(repo, head, "link")
    assert (link.kind, link.mode, link.size) == ("symlink", 0o120000, len("docs/guide.md"))
    assert gitstore.lookup(repo, world.c["c4"], "vendor/lib").sha == PIN_1


def test_symlinks_read_as_their_target_and_are_never_followed(
    world: World, repo: gitstore.GitRepo
) -> None:
    link = gitstore.lookup(repo, world.c["c7"], "link")
    assert gitstore.read_blob(repo, link.sha) == b"docs/guide.md"
    with pytest.raises(PathNotFound) as caught:
        gitstore.lookup(repo, world.c["c7"], "link/anything")
    assert caught.value.path == "link/anything"
    assert caught.value.deepest_existing == ""
    assert "link" in caught.value.siblings


def test_path_not_found_names_the_deepest_existing(world: World, repo: gitstore.GitRepo) -> None:
    with pytest.raises(PathNotFound) as caught:
        gitstore.lookup(repo, world.c["c7"], "docs/guide.md")  # renamed away in c5
    assert (caught.value.path, caught.value.deepest_existing) == ("docs/guide.md", "docs")
    assert caught.value.siblings == ["manual.md", "new.md"]
    with pytest.raises(PathNotFound) as caught:
        gitstore.lookup(repo, world.c["c7"], "deep/a/b/x/y/z")
    assert caught.value.deepest_existing == "deep/a/b"
    assert caught.value.siblings == ["c/"]
    with pytest.raises(PathNotFound) as caught:
        gitstore.lookup(repo, world.c["c7"], "README.md/x")
    assert caught.value.deepest_existing == ""
    assert caught.value.siblings[:3] == [".gitmodules", "README.md", "big.bin"]
    with pytest.raises(PathNotFound) as caught:
        gitstore.lookup(repo, world.c["c7"], "vendor/lib/inside")
    assert (caught.value.deepest_existing, caught.value.siblings) == ("vendor", ["lib"])


def test_the_same_path_at_two_refs(world: World, repo: gitstore.GitRepo) -> None:
    old = gitstore.lookup(repo, gitstore.resolve(repo, "v1").commit, "README.md")
    new = gitstore.lookup(repo, gitstore.resolve(repo, None).commit, "README.md")
    assert gitstore.read_blob(repo, old.sha) == b"# Demo\n"
    assert gitstore.read_blob(repo, new.sha) == b"# Demo\nFinal.\n"
    assert gitstore.lookup(repo, world.c["c2"], "docs/guide.md").kind == "blob"


def test_binary_large_and_non_utf8_blobs(world: World, repo: gitstore.GitRepo) -> None:
    head = world.c["c7"]
    big = gitstore.lookup(repo, head, "big.bin")
    assert big.size == len(BIG) > 256 * 1024
    assert gitstore.blob_size(repo, big.sha) == len(BIG)
    assert gitstore.read_blob(repo, big.sha) == BIG
    assert gitstore.read_blob(repo, big.sha, 100_000, 100_010) == BIG[100_000:100_010]
    assert gitstore.read_blob(repo, big.sha, start=len(BIG) - 3) == BIG[-3:]
    assert gitstore.read_blob(repo, big.sha, end=4) == BIG[:4]
    data = gitstore.read_blob(repo, gitstore.lookup(repo, head, "bin/data.bin").sha)
    assert gitstore.looks_binary(data)
    assert gitstore.guess_mime("bin/data.bin", data) == "application/octet-stream"
    latin = gitstore.read_blob(repo, gitstore.lookup(repo, head, "latin1.txt").sha)
    assert latin == "café crème\n".encode("latin-1")
    assert gitstore.looks_binary(latin)  # not UTF-8, so not sniffed as text
    assert gitstore.guess_mime("latin1.txt", latin) == "text/plain"  # by its extension


def test_read_blob_refuses_trees(world: World, repo: gitstore.GitRepo) -> None:
    docs = gitstore.lookup(repo, world.c["c7"], "docs")
    with pytest.raises(NotABlob) as caught:
        gitstore.read_blob(repo, docs.sha)
    assert (caught.value.path, caught.value.kind) == (docs.sha, "tree")
    with pytest.raises(NotABlob) as caught:
        gitstore.blob_size(repo, world.c["c7"])
    assert (caught.value.path, caught.value.kind) == (world.c["c7"], "commit")


def test_list_tree_one_level(world: World, repo: gitstore.GitRepo) -> None:
    entries = gitstore.list_tree(repo, world.c["c7"], "")
    assert [(e.name, e.kind) for e in entries] == [
        ("bin", "tree"),
        ("deep", "tree"),
        ("docs", "tree"),
        ("src", "tree"),
        ("vendor", "tree"),
        (".gitmodules", "blob"),
        ("README.md", "blob"),
        ("big.bin", "blob"),
        ("blame.txt", "blob"),
        ("latin1.txt", "blob"),
        ("link", "symlink"),
    ]
    sizes = {e.name: e.size for e in entries}
    assert sizes["big.bin"] == len(BIG)
    assert sizes["docs"] is None
    assert all(e.depth == 1 and e.path == e.name for e in entries)


@needs_git
def test_list_tree_matches_ls_tree(world: World, repo: gitstore.GitRepo) -> None:
    oracle = {}
    for line in world.git("ls-tree", "-r", "-t", "-l", "v2").splitlines():
        meta, path = line.split("\t", 1)
        mode, _type, sha, size = meta.split()
        oracle[path] = (int(mode, 8), sha, None if size == "-" else int(size))
    entries = gitstore.list_tree(repo, gitstore.resolve(repo, "v2").commit, "", depth=8)
    mine = {e.path: (e.mode, e.sha, e.size) for e in entries}
    assert mine == oracle


def test_list_tree_depth_and_order(world: World, repo: gitstore.GitRepo) -> None:
    entries = gitstore.list_tree(repo, world.c["c7"], "deep", depth=3)
    assert [(e.path, e.depth) for e in entries] == [
        ("deep/a", 1),
        ("deep/a/b", 2),
        ("deep/a/b/c", 3),
    ]
    entries = gitstore.list_tree(repo, world.c["c7"], ["deep", "a", "b"], depth=8)
    assert [e.path for e in entries][-1] == "deep/a/b/c/d/e/f.txt"
    for depth in (0, 9, -1):
        with pytest.raises(ValueError, match="depth must be 1 to 8"):
            gitstore.list_tree(repo, world.c["c7"], "", depth=depth)
    with pytest.raises(NotATree) as caught:
        gitstore.list_tree(repo, world.c["c7"], "README.md")
    assert (caught.value.path, caught.value.kind) == ("README.md", "blob")
    with pytest.raises(NotATree) as caught:
        gitstore.list_tree(repo, world.c["c7"], "vendor/lib")
    assert (caught.value.path, caught.value.kind) == ("vendor/lib", "submodule")


def test_hostile_entries_are_never_listed_or_entered(world: World, repo: gitstore.GitRepo) -> None:
    h1 = gitstore.resolve(repo, "hostile").commit
    entries = gitstore.list_tree(repo, h1, "", depth=8)
    assert [e.path for e in entries] == ["sub", "sub/config", "ok.txt"]
    for path in ("..", ".", "../config"):
        with pytest.raises(OutOfRoot):
            gitstore.lookup(repo, h1, path)
    for path in (".git", ".git/config", ".GIT/config"):
        with pytest.raises(HostileName):
            gitstore.lookup(repo, h1, path)
    with pytest.raises(PathNotFound) as caught:
        gitstore.lookup(repo, h1, "nope")
    assert caught.value.siblings == ["ok.txt", "sub/"]
    assert gitstore.log(repo, h1, "ok.txt") and gitstore.blame(repo, h1, "ok.txt")


def test_gitmodules(world: World, repo: gitstore.GitRepo) -> None:
    assert gitstore.gitmodules(repo, world.c["c3"]) == {}
    assert gitstore.gitmodules(repo, world.c["c7"]) == {
        "vendor/lib": "https://github.com/tinymachines/lib.git"
    }


def test_repeated_reads_are_cache_hits(world: World, repo: gitstore.GitRepo) -> None:
    calls = []
    original = repo.raw

    def counting(sha: str) -> tuple[int, bytes]:
        calls.append(sha)
        return original(sha)

    repo.raw = counting  # type: ignore[method-assign]
    first = gitstore.list_tree(repo, world.c["c5"], "docs")
    node = gitstore.lookup(repo, world.c["c5"], "src/app.py")
    gitstore.read_blob(repo, node.sha)
    assert calls
    calls.clear()
    assert gitstore.list_tree(repo, world.c["c5"], "docs") == first
    assert gitstore.lookup(repo, world.c["c5"], "src/app.py") == node
    gitstore.read_blob(repo, node.sha)
    assert calls == []
