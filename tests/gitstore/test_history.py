"""log and blame, checked against the git CLI run on the same repository."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.git_oracle import needs_git
from tests.gitstore.builder import Builder
from tests.gitstore.conftest import DAY, PIN_1, PIN_2, World, blame_lines
from tmsite import gitstore
from tmsite.gitstore import NotABlob, PathNotFound

pytestmark = pytest.mark.spec("GIT")

PATHS = [
    "",
    "README.md",
    "src/app.py",
    "src",
    "blame.txt",
    "docs",
    "docs/guide.md",
    "docs/manual.md",
    "deep/a/b/c/d/e/f.txt",
    "deep/a/b",
    "vendor/lib",
    ".gitmodules",
    "big.bin",
    "nothing/here",
]


@needs_git
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("start", ["HEAD", "v2", "feature"])
def test_log_matches_git_log(world: World, repo: gitstore.GitRepo, path: str, start: str) -> None:
    """A file's log is ``git log --follow``; a directory's and the root's ``git log``."""
    commit = gitstore.resolve(repo, start).commit
    args = ["log", "--format=%H", "-n", "100", start]
    try:
        is_file = gitstore.lookup(repo, commit, path).kind in ("blob", "symlink")
    except PathNotFound:
        is_file = False
    if is_file:
        args.insert(1, "--follow")
    oracle = world.git(*args, "--", path).split() if path else world.git(*args).split()
    assert [e.commit for e in gitstore.log(repo, commit, path, n=100)] == oracle
    assert [e.commit for e in gitstore.log(repo, commit, path, n=2)] == oracle[:2]


def test_log_entries(world: World, repo: gitstore.GitRepo) -> None:
    entries = gitstore.log(repo, world.c["c7"], "src/app.py", n=5)
    assert [e.commit for e in entries] == [world.c["f2"], world.c["c1"]]
    feature, initial = entries
    assert feature.short == world.c["f2"][:7]
    assert feature.author_name == "Ada Lovelace"
    assert feature.subject == "Feature work, thanks to [e-mail]"
    base = world.builder.base_time
    assert feature.date == datetime.fromtimestamp(base + 3 * 86_400, tz=UTC).isoformat()
    assert feature.date.endswith("+00:00")
    assert initial.subject == "Initial import"
    top = gitstore.log(repo, world.c["c7"], "", n=1)[0]
    assert top.author_name == "Zoë Ünicode"


def test_no_email_anywhere(world: World, repo: gitstore.GitRepo) -> None:
    head = world.c["c7"]
    text = repr(gitstore.log(repo, head, "", n=100)) + repr(gitstore.blame(repo, head, "blame.txt"))
    assert "@" not in text
    assert not re.search(r"example\.(org|com)", text)


def test_submodule_log_is_the_pin_moves(world: World, repo: gitstore.GitRepo) -> None:
    entries = gitstore.log(repo, world.c["c7"], "vendor/lib", n=10)
    assert [e.commit for e in entries] == [world.c["c5"], world.c["c4"]]
    assert gitstore.lookup(repo, world.c["c5"], "vendor/lib").sha == PIN_2
    assert gitstore.lookup(repo, world.c["c4"], "vendor/lib").sha == PIN_1


@pytest.mark.parametrize("n", [0, 101, -1, 1000])
def test_log_refuses_n_out_of_range(world: World, repo: gitstore.GitRepo, n: int) -> None:
    with pytest.raises(ValueError, match="n must be an integer from 1 to 100"):
        gitstore.log(repo, world.c["c7"], "", n=n)


def test_log_refuses_escapes(world: World, repo: gitstore.GitRepo) -> None:
    with pytest.raises(gitstore.OutOfRoot) as caught:
        gitstore.log(repo, world.c["c7"], "../x")
    assert caught.value.path == "../x"


def _porcelain(text: str) -> list[tuple[str, str]]:
    """(commit, line text) per final line from ``git blame --porcelain``."""
    out = []
    current = ""
    for line in text.split("\n"):
        head = re.match(r"^([0-9a-f]{40}) \d+ \d+", line)
        if head:
            current = head.group(1)
        elif line.startswith("\t"):
            out.append((current, line[1:]))
    return out


@needs_git
@pytest.mark.parametrize("start", ["HEAD", "v2", "feature", "v1", "release/1.0"])
@pytest.mark.parametrize("path", ["blame.txt", "README.md", "src/app.py", "deep/a/b/c/d/e/f.txt"])
def test_blame_matches_git_blame(
    world: World, repo: gitstore.GitRepo, start: str, path: str
) -> None:
    commit = gitstore.resolve(repo, start).commit
    oracle = _porcelain(world.git("blame", "--porcelain", commit, "--", path))
    mine = gitstore.blame(repo, commit, path)
    assert [(b.commit, b.text) for b in mine] == oracle
    assert [b.line_no for b in mine] == list(range(1, len(oracle) + 1))


def test_blame_attribution(world: World, repo: gitstore.GitRepo) -> None:
    c = world.c
    lines = {b.text: b.commit for b in gitstore.blame(repo, c["c7"], "blame.txt")}
    assert lines["line 01"] == c["c1"]
    assert lines["feature A1"] == c["f1"]  # through the merge's second parent
    assert lines["line 05 changed in c2"] == c["c2"]
    assert lines["line 18 changed in c3"] == c["c3"]
    assert lines["line 20 fixed in merge"] == c["m1"]  # made in the merge itself
    assert lines["line 21 added in c7"] == c["c7"]
    assert "line 12" not in lines


def test_blame_gathers_what_both_sides_of_a_merge_hand_to_their_base(tmp_path: Path) -> None:
    # Each side of the merge keeps lines of the base that the other changed or dropped, so both
    # hand suspects to the base: it must own all of them.
    b = Builder.init(str(tmp_path / "repo"))
    base = b.commit("base", {"f.txt": blame_lines("A", "B", "C", "D")}, when=0)
    left = b.commit("left", {"f.txt": blame_lines("A1", "C", "D")}, [base], when=DAY)
    right = b.commit("right", {"f.txt": blame_lines("A", "B", "C2", "D")}, [base], when=2 * DAY)
    merged = blame_lines("A1", "B", "C2", "D")
    merge = b.commit("merge", {"f.txt": merged}, [left, right], when=3 * DAY)
    b.repo.close()
    repo = gitstore.open_repo(tmp_path / "repo")
    lines = gitstore.blame(repo, merge.decode(), "f.txt")
    assert [(line.text, line.commit) for line in lines] == [
        ("A1", left.decode()),
        ("B", base.decode()),
        ("C2", right.decode()),
        ("D", base.decode()),
    ]


def test_blame_edge_cases(world: World, repo: gitstore.GitRepo) -> None:
    head = world.c["c7"]
    latin = gitstore.blame(repo, head, "latin1.txt")
    assert [(b.line_no, b.commit, b.text) for b in latin] == [
        (1, world.c["c1"], "caf\ufffd cr\ufffdme")
    ]
    link = gitstore.blame(repo, head, "link")
    assert [b.text for b in link] == ["docs/guide.md"]
    with pytest.raises(NotABlob) as caught:
        gitstore.blame(repo, head, "docs")
    assert (caught.value.path, caught.value.kind) == ("docs", "tree")
    with pytest.raises(NotABlob) as caught:
        gitstore.blame(repo, head, "vendor/lib")
    assert (caught.value.path, caught.value.kind) == ("vendor/lib", "submodule")
    with pytest.raises(PathNotFound) as nf:
        gitstore.blame(repo, head, "docs/guide.md")
    assert nf.value.deepest_existing == "docs"


def test_line_map() -> None:
    from tmsite.gitstore.blame import line_map
    from tmsite.gitstore.linediff import Text

    assert Text(b"").lines() == []
    assert Text(b"a\r\nb").lines() == [b"a\r", b"b"]
    assert Text(b"a\n\n").lines() == [b"a", b""]
    old = [b"a", b"b", b"c", b"d"]
    assert line_map(old, [b"a", b"x", b"c", b"d", b"e"]) == [0, -1, 2, 3, -1]
    assert line_map(old, []) == []
    assert line_map([], [b"a"]) == [-1]


def test_a_commit_graph_gives_the_same_answers(fresh_world: World) -> None:
    with gitstore.open_repo(fresh_world.path) as plain:
        gitstore.clear_caches()
        head = gitstore.resolve(plain, None).commit
        before = (
            gitstore.log(plain, head, "blame.txt", n=100),
            gitstore.log(plain, head, "src", n=100),
            gitstore.blame(plain, head, "blame.txt"),
            gitstore.resolve(plain, "2023-11-17T00:00:00Z"),
        )
    fresh_world.builder.repo.object_store.write_commit_graph()
    assert (fresh_world.path / ".git" / "objects" / "info" / "commit-graph").exists()
    gitstore.clear_caches()
    with gitstore.open_repo(fresh_world.path) as graphed:
        assert graphed.walk_info(head)[1] == graphed.commit(head).parents
        assert graphed._graph is not None
        after = (
            gitstore.log(graphed, head, "blame.txt", n=100),
            gitstore.log(graphed, head, "src", n=100),
            gitstore.blame(graphed, head, "blame.txt"),
            gitstore.resolve(graphed, "2023-11-17T00:00:00Z"),
        )
    assert after == before


@pytest.mark.parametrize(
    ("text", "scrubbed"),
    [
        ("thanks to ada@example.org", "thanks to [e-mail]"),
        ("Ada <ada@example.org>", "Ada [e-mail]"),
        ("root@localhost did it", "[e-mail] did it"),
        ("dev@buildbox fix", "[e-mail] fix"),
        ("first.last+tag@mail.example.co.jp", "[e-mail]"),
        ("HEAD@{1} and @mention and a@ b", "HEAD@{1} and @mention and a@ b"),
    ],
)
def test_anything_shaped_like_an_address_is_scrubbed(text: str, scrubbed: str) -> None:
    from tmsite.gitstore.history import scrub

    assert scrub(text) == scrubbed
