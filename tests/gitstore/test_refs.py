"""Refs: refused by shape before any lookup, then resolved among the repository's own names."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from dulwich.objects import Commit

from tests.git_oracle import needs_git, run_git
from tests.gitstore.builder import Builder
from tests.gitstore.conftest import DAY, World
from tmsite import gitstore
from tmsite.gitstore import AmbiguousRef, BadRef, NoSuchRef

pytestmark = pytest.mark.spec("GIT")

HOSTILE = [
    ("-n", "a ref may not start with '-'"),
    ("--output=/tmp/x", "a ref may not start with '-'"),
    ("HEAD:x", "':' is path syntax"),
    (":x", "':' is path syntax"),
    ("HEAD@{1}", "'@{' is reflog syntax"),
    ("v1^{}", "'^' is ancestry syntax"),
    ("HEAD~3", "'~' is ancestry syntax"),
    ("a..b", "'..' is revision-range syntax"),
    ("../../x", "'..' is revision-range syntax"),
    ("refs/../../config", "'..' is revision-range syntax"),
    ("v1 main", "spaces are not allowed"),
    ("v1\tmain", "control characters are not allowed"),
    ("v1\x00", "control characters are not allowed"),
    ("a\\b", "backslashes are not allowed"),
    ("", "the ref is empty"),
    ("x" * 256, "the ref is longer than 255 characters"),
    ("refs/heads/.hidden", "empty segments and segments starting with '.' are not allowed"),
    ("a//b", "empty segments and segments starting with '.' are not allowed"),
    ("main.lock", "a ref may not end with '.lock' or '.'"),
    ("what?", "only letters, digits and . _ / + @ - are allowed"),
    ("*", "only letters, digits and . _ / + @ - are allowed"),
]


@pytest.mark.parametrize(("text", "why"), HOSTILE)
def test_hostile_refs_are_refused_by_shape(text: str, why: str) -> None:
    with pytest.raises(BadRef) as caught:
        gitstore.validate_ref(text)
    assert caught.value.text == text
    assert caught.value.why == why


@pytest.mark.parametrize(
    ("text", "why_start"),
    [
        ("2026-02-30", "not a real date or time"),
        ("2026-13-01", "not a real date or time"),
        ("2026-01-02T25:00:00Z", "not a real date or time"),
        ("2026-01-02T03:04:05+15:00", "the UTC offset is out of range"),
        ("2026-01-02T03:04:05+09:60", "the UTC offset is out of range"),
        ("0000-01-01", "not a real date or time"),
        ("2026-01-02Tnoon", "a date must be"),
        ("2026-01-02T03:04:05.1234567890Z", "a date must be"),
    ],
)
def test_bad_dates_are_refused(text: str, why_start: str) -> None:
    with pytest.raises(BadRef) as caught:
        gitstore.validate_ref(text)
    assert caught.value.text == text
    assert caught.value.why.startswith(why_start)


@pytest.mark.parametrize(
    ("text", "when"),
    [
        ("2026-01-02", datetime(2026, 1, 2, 23, 59, 59, tzinfo=UTC)),
        ("2026-01-02T03:04:05Z", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("2026-01-02T03:04:05+09:00", datetime(2026, 1, 1, 18, 4, 5, tzinfo=UTC)),
        ("2026-01-02T03:04-0130", datetime(2026, 1, 2, 4, 34, tzinfo=UTC)),
        ("2026-01-02T03:04:05", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
    ],
)
def test_dates_are_accepted(text: str, when: datetime) -> None:
    checked = gitstore.validate_ref(text)
    assert (checked.kind, checked.when) == ("date", when)


@pytest.mark.parametrize("text", ["main", "release/1.0", "v2-signed", "HEAD", "deadbeef", "a+b@c"])
def test_names_are_accepted(text: str) -> None:
    assert gitstore.validate_ref(text).kind == "name"


def test_list_refs(repo: gitstore.GitRepo) -> None:
    assert gitstore.list_refs(repo) == (
        ["feature", "hostile", "main", "release/1.0"],
        ["v1", "v2", "v2-signed"],
    )


def test_resolve_default_branch_tags_and_hex(world: World, repo: gitstore.GitRepo) -> None:
    c = world.c
    assert gitstore.resolve(repo, None) == gitstore.Resolved(c["c7"], "HEAD", True)
    assert gitstore.resolve(repo, "HEAD") == gitstore.Resolved(c["c7"], "HEAD", True)
    assert gitstore.resolve(repo, "feature") == gitstore.Resolved(c["f2"], "feature", False)
    assert gitstore.resolve(repo, "release/1.0").commit == c["c3"]
    assert gitstore.resolve(repo, "refs/heads/release/1.0").commit == c["c3"]
    assert gitstore.resolve(repo, "v1").commit == c["c2"]
    assert gitstore.resolve(repo, "v2").commit == c["m1"]  # annotated, peeled
    assert gitstore.resolve(repo, "v2-signed").commit == c["m1"]  # a tag of a tag
    assert gitstore.resolve(repo, c["c4"]).commit == c["c4"]
    assert gitstore.resolve(repo, c["c4"].upper()).commit == c["c4"]
    assert gitstore.resolve(repo, c["c4"][:7]) == gitstore.Resolved(c["c4"], c["c4"][:7], False)


def test_pinned_default(world: World, repo: gitstore.GitRepo) -> None:
    c = world.c
    assert gitstore.resolve(repo, None, default_ref="v1") == gitstore.Resolved(
        c["c2"], "HEAD", True
    )
    assert gitstore.resolve(repo, "HEAD", default_ref=c["c3"]).commit == c["c3"]
    # Dates walk the pinned default's history, not HEAD's.
    at = datetime.fromtimestamp(world.builder.base_time + 5 * DAY, tz=UTC).isoformat()
    assert gitstore.resolve(repo, at, default_ref="v1").commit == c["c2"]


def test_no_such_ref_names_the_nearest(repo: gitstore.GitRepo) -> None:
    with pytest.raises(NoSuchRef) as caught:
        gitstore.resolve(repo, "featur")
    assert caught.value.ref == "featur"
    # distances: feature 1, main 5, then HEAD, hostile, v1, v2 at 6 (alphabetical)
    assert caught.value.nearest == ["feature", "main", "HEAD", "hostile", "v1"]
    with pytest.raises(NoSuchRef) as caught:
        gitstore.resolve(repo, "v3")
    assert caught.value.nearest[:2] == ["v1", "v2"]
    assert len(caught.value.nearest) == 5


@pytest.mark.parametrize("text", ["99999999999999999999", "ffff" * 10, "0000", "x" * 255])
def test_unknown_names_and_huge_numbers(repo: gitstore.GitRepo, text: str) -> None:
    with pytest.raises(NoSuchRef) as caught:
        gitstore.resolve(repo, text)
    assert caught.value.ref == text.lower()
    assert "HEAD" in caught.value.nearest


def test_a_blob_id_is_not_a_commit(repo: gitstore.GitRepo) -> None:
    node = gitstore.lookup(repo, gitstore.resolve(repo, None).commit, "README.md")
    with pytest.raises(NoSuchRef) as caught:
        gitstore.resolve(repo, node.sha)
    assert caught.value.ref == node.sha


def test_option_shaped_ref_on_disk_is_refused(fresh_world: World) -> None:
    refs_dir = fresh_world.path / ".git" / "refs" / "heads"
    for name in ("-n", "--output=x"):
        (refs_dir / name).write_text(fresh_world.c["c1"] + "\n")
    with gitstore.open_repo(fresh_world.path) as repo:
        for name in ("-n", "--output=x"):
            with pytest.raises(BadRef) as caught:
                gitstore.resolve(repo, name)
            assert (caught.value.text, caught.value.why) == (
                name,
                "a ref may not start with '-'",
            )
        branches, _tags = gitstore.list_refs(repo)
        assert "-n" not in branches and "--output=x" not in branches
        with pytest.raises(NoSuchRef) as nsr:
            gitstore.resolve(repo, "n")
        assert "-n" not in nsr.value.nearest


def test_refs_outside_the_store_are_unreachable(fresh_world: World) -> None:
    # A file beside the ref store that a path-built lookup could reach.
    (fresh_world.path / ".git" / "x").write_text(fresh_world.c["c1"] + "\n")
    with gitstore.open_repo(fresh_world.path) as repo:
        for text in ("../../x", "refs/../../config", "refs/heads/../../x", "../x"):
            with pytest.raises(BadRef) as caught:
                gitstore.resolve(repo, text)
            assert caught.value.why == "'..' is revision-range syntax"
        with pytest.raises(NoSuchRef):
            gitstore.resolve(repo, "x")  # names are matched against refs/, never as paths
        with pytest.raises(NoSuchRef):
            gitstore.resolve(repo, "config")


def test_ambiguous_abbreviation(fresh_world: World) -> None:
    store = fresh_world.builder.repo.object_store
    tree = gitstore.open_repo(fresh_world.path).commit(fresh_world.c["c1"]).tree
    by_prefix: dict[bytes, bytes] = {}
    pair: tuple[Commit, Commit] | None = None
    existing = {sha[:4].encode() for sha in fresh_world.c.values()}
    for i in range(100_000):
        commit = Commit()
        commit.tree = tree.encode()
        commit.author = commit.committer = b"A <a@example.org>"
        commit.author_time = commit.commit_time = 1_700_000_000
        commit.author_timezone = commit.commit_timezone = 0
        commit.message = f"probe {i}\n".encode()
        prefix = commit.id[:4]
        if prefix in by_prefix and prefix not in existing:
            first = Commit()
            first.tree = tree.encode()
            first.author = first.committer = b"A <a@example.org>"
            first.author_time = first.commit_time = 1_700_000_000
            first.author_timezone = first.commit_timezone = 0
            first.message = by_prefix[prefix]
            pair = (first, commit)
            break
        by_prefix.setdefault(prefix, commit.message)
    assert pair is not None
    for commit in pair:
        store.add_object(commit)
    prefix = pair[0].id[:4].decode()
    with gitstore.open_repo(fresh_world.path) as repo:
        with pytest.raises(AmbiguousRef) as caught:
            gitstore.resolve(repo, prefix)
        assert caught.value.ref == prefix
        assert caught.value.candidates == sorted(c.id.decode() for c in pair)
        assert "HEAD" in caught.value.nearest
        assert gitstore.resolve(repo, pair[0].id.decode()[:12]).commit == pair[0].id.decode()


def _iso(world: World, seconds: int) -> str:
    return datetime.fromtimestamp(world.builder.base_time + seconds, tz=UTC).isoformat()


@needs_git
@pytest.mark.parametrize(
    "offset",
    [
        0,
        DAY - 1,
        DAY,
        2 * DAY + DAY // 2,
        3 * DAY,
        4 * DAY,
        5 * DAY + 10,
        6 * DAY,
        7 * DAY,
        8 * DAY,
        100 * DAY,
    ],
)
def test_dates_match_git_rev_list(world: World, repo: gitstore.GitRepo, offset: int) -> None:
    text = _iso(world, offset)
    when = world.builder.base_time + offset
    oracle = world.git("rev-list", "-1", f"--before={when} +0000", "HEAD").strip()
    assert gitstore.resolve(repo, text) == gitstore.Resolved(oracle, text, False)


def test_dates_follow_skew_like_git(world: World, repo: gitstore.GitRepo) -> None:
    # c6 was committed (day 3) before its parent c5 (day 6): at day 4 the tip-most commit
    # committed by then is c6, as git rev-list --before answers.
    assert gitstore.resolve(repo, _iso(world, 4 * DAY)).commit == world.c["c6"]
    # At day 2 the walk meets the feature branch's f1 (committed then) before main's c2 (day
    # 1): every parent is followed, not the first-parent chain alone.
    assert gitstore.resolve(repo, _iso(world, 2 * DAY)).commit == world.c["f1"]


def test_a_date_before_the_first_commit(world: World, repo: gitstore.GitRepo) -> None:
    with pytest.raises(NoSuchRef) as caught:
        gitstore.resolve(repo, "2001-01-01")
    assert caught.value.ref == "2001-01-01"
    assert "HEAD" in caught.value.nearest


def test_date_only_means_end_of_day(world: World, repo: gitstore.GitRepo) -> None:
    day = datetime.fromtimestamp(world.builder.base_time, tz=UTC).date().isoformat()
    assert gitstore.resolve(repo, day).commit == world.c["c1"]


def test_has_commit(world: World, repo: gitstore.GitRepo) -> None:
    assert gitstore.has_commit(repo, world.c["c5"])
    assert not gitstore.has_commit(repo, "1" * 40)
    assert not gitstore.has_commit(repo, world.c["c5"][:10])
    assert not gitstore.has_commit(repo, "../" + "a" * 37)
    blob = gitstore.lookup(repo, world.c["c5"], "README.md").sha
    assert not gitstore.has_commit(repo, blob)


def test_unreadable_repository(tmp_path: os.PathLike[str]) -> None:
    with pytest.raises(gitstore.GitError) as caught:
        gitstore.open_repo(tmp_path)
    assert caught.value.detail == "not a git repository"


@pytest.mark.spec("ANY2")
def test_refs_are_kept_until_the_store_changes(fresh_world: World) -> None:
    """One handle keeps the refs it read, and sees at once a ref moved, added or removed."""
    c = fresh_world.c
    refs = fresh_world.builder.repo.refs
    with gitstore.open_repo(fresh_world.path) as repo:
        assert gitstore.resolve(repo, "main").commit == c["c7"]
        assert repo.refs() is not repo.refs() and repo.refs() == repo.refs()
        for target in ("c5", "c6", "c3"):
            refs[b"refs/heads/main"] = c[target].encode()
            assert gitstore.resolve(repo, "main").commit == c[target]
        refs[b"refs/tags/fresh"] = c["c2"].encode()
        assert gitstore.resolve(repo, "fresh").commit == c["c2"]
        del refs[b"refs/tags/fresh"]
        with pytest.raises(NoSuchRef):
            gitstore.resolve(repo, "fresh")
        refs.pack_refs(all=True)
        assert gitstore.resolve(repo, "main").commit == c["c3"]
        assert gitstore.resolve(repo, "v1").commit == c["c2"]


@needs_git
@pytest.mark.parametrize("graph", [False, True])
def test_dates_at_an_edge_of_equal_dates_match_git(tmp_path: Path, graph: bool) -> None:
    # Past day 3 the walk back from the tip meets a, b (both committed at day 2, a merge's
    # parents in that order) and c (day 1, on a side line merged later): the newest by date
    # is a or b, and git takes the one it queued first.
    b = Builder.init(str(tmp_path / "repo"))
    root = b.commit("root", {"f": b"0\n"}, when=0)
    c = b.commit("c", {"c": b"c\n"}, [root], when=DAY)
    one = b.commit("a", {"a": b"a\n"}, [root], when=2 * DAY)
    two = b.commit("b", {"b": b"b\n"}, [root], when=2 * DAY)
    merge = b.commit("m", {}, [two, one], when=4 * DAY)
    side = b.commit("s", {}, [merge, c], when=5 * DAY)
    tip = b.commit("t", {"f": b"1\n"}, [side], when=6 * DAY)
    b.set_ref("refs/heads/main", tip)
    b.repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
    if graph:
        b.repo.object_store.write_commit_graph()
    gitstore.clear_caches()
    with gitstore.open_repo(tmp_path / "repo") as repo:
        assert (repo.graph() is not None) == graph
        for days in (0, 1, 2, 3, 4, 5, 6, 7):
            when = b.base_time + days * DAY
            oracle = run_git(tmp_path / "repo", "rev-list", "-1", f"--before={when} +0000", "HEAD")
            text = datetime.fromtimestamp(when, tz=UTC).isoformat()
            assert gitstore.resolve(repo, text).commit == oracle.strip(), days
        at_three = datetime.fromtimestamp(b.base_time + 3 * DAY, tz=UTC).isoformat()
        assert gitstore.resolve(repo, at_three).commit == two.decode()
