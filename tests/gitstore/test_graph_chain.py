"""A split commit-graph (a chain of layers, as ``git commit-graph write --split`` leaves it) is
read whole: every layer's commits, parents across layers, each layer's own Bloom filters.

The chain is written by the git CLI (the oracle) over the rename repository of ``test_follow``
with an octopus merge on top (an ``EDGE`` list in the top layer, naming lower layers' commits);
blame, log and ``?at=`` must give the answers they give with no graph, with one graph file, and
the answers git gives.

Spec: ANY2.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from tests.git_oracle import needs_git, run_git
from tests.gitstore.test_follow import CASES, _porcelain
from tests.gitstore.test_graph_write import DIRECTORIES, _Sink, built  # noqa: F401  (fixture)
from tmsite import gitstore
from tmsite.gitstore.repo import LazyCommitGraph, parse_commit

pytestmark = pytest.mark.spec("ANY2")

DATES = [f"2023-11-{day:02d}T12:00:00Z" for day in range(15, 27)]

#: The commits each layer is written for, base first (each layer adds what those below lack).
LAYERS = [("r3",), ("r7", "s2")]


def _answers(root: Path, c: dict[str, str]) -> tuple[Any, ...]:
    """Every log and blame of the cases, directory logs and dates, computed afresh."""
    gitstore.clear_caches()
    with gitstore.open_repo(root) as repo:
        return (
            [(gitstore.log(repo, c[s], p, n=100), gitstore.blame(repo, c[s], p)) for s, p in CASES],
            [gitstore.log(repo, c["octopus"], d, n=100) for d in DIRECTORIES],
            [gitstore.resolve(repo, date) for date in DATES],
        )


def _write_chain(root: Path, c: dict[str, str]) -> Path:
    """Three layers written by git: up to r3, up to r7 and s2, then every reachable commit."""
    for names in LAYERS:
        run_git(
            root,
            "commit-graph",
            "write",
            "--split=no-merge",
            "--changed-paths",
            "--stdin-commits",
            stdin="".join(c[n] + "\n" for n in names),
        )
    run_git(root, "commit-graph", "write", "--split=no-merge", "--changed-paths", "--reachable")
    folder = root / ".git" / "objects" / "info" / "commit-graphs"
    assert not (root / ".git" / "objects" / "info" / "commit-graph").exists()
    assert len((folder / "commit-graph-chain").read_text().split()) == 3
    return folder


@needs_git
def test_a_split_chain_answers_as_one_graph_and_as_git(
    built: tuple[Path, dict[str, str]],  # noqa: F811
    tmp_path: Path,
) -> None:
    root, c = built
    plain = _answers(root, c)
    single = tmp_path / "single"
    shutil.copytree(root, single)
    run_git(single, "commit-graph", "write", "--reachable", "--changed-paths")
    _write_chain(root, c)
    assert run_git(root, "commit-graph", "verify") == ""

    gitstore.clear_caches()
    with gitstore.open_repo(root) as repo:
        graph = repo.graph()
        assert isinstance(graph, LazyCommitGraph) and graph.layers == 3 and graph.has_filters
        # every commit is found in its layer, its parents across layers
        for sha in c.values():
            info = parse_commit(repo.raw(sha)[1])
            assert graph.walk_record(bytes.fromhex(sha)) == (
                info.tree,
                info.parents,
                info.commit_time,
            )
        lower = graph.position(c["r3"])
        assert lower is not None and graph.id_at(lower) == c["r3"]
        # each layer's own filters answer: r2 (the base layer) and r8 (the top) left src/ alone
        keys = repo.path_keys("src/util.py", prefixes=False)
        assert keys is not None
        assert not repo.maybe_changed(c["r2"], keys) and not repo.maybe_changed(c["r8"], keys)
        assert repo.maybe_changed(c["s1"], keys)

        # the walks consult the filters of commits in the lower layers
        consulted: list[tuple[int, bool]] = []
        changed_at = graph.changed_at

        def spy(position: int, keys: tuple[tuple[int, ...], ...]) -> bool:
            consulted.append((position, answer := changed_at(position, keys)))
            return answer

        graph.changed_at = spy  # type: ignore[method-assign]
        gitstore.blame(repo, c["r10"], "plain.txt")
        gitstore.log(repo, c["r10"], "src/util.py", n=100)
        base_end = graph.position(c["r7"])
        assert any(not maybe and at <= 2 for at, maybe in consulted), consulted
        assert base_end is not None and any(3 <= at < 9 and not m for at, m in consulted)

    chained = _answers(root, c)
    assert chained == plain
    assert _answers(single, c) == plain

    cases, folders, dates = chained
    for (start, path), (_log, blame) in zip(CASES, cases, strict=True):
        oracle = _porcelain(run_git(root, "blame", "--porcelain", c[start], "--", path))
        assert [(b.commit, b.path, b.text) for b in blame] == oracle
    for directory, log in zip(DIRECTORIES, folders, strict=True):
        oracle = run_git(root, "log", "--format=%H", "-n", "100", "main", "--", directory)
        assert [e.commit for e in log] == oracle.split()
    for date, found in zip(DATES, dates, strict=True):
        assert found.commit == run_git(root, "rev-list", "-1", f"--before={date}", "main").strip()


@needs_git
def test_a_broken_layer_cuts_the_chain_there(built: tuple[Path, dict[str, str]]) -> None:  # noqa: F811
    root, c = built
    plain = _answers(root, c)
    folder = _write_chain(root, c)
    names = (folder / "commit-graph-chain").read_text().split()
    # the middle layer's file is gone: the base alone is read
    (folder / f"graph-{names[1]}.graph").unlink()
    gitstore.clear_caches()
    with gitstore.open_repo(root) as repo:
        graph = repo.graph()
        assert graph is not None and graph.layers == 1
        assert graph.position(c["r3"]) is not None and graph.position(c["r10"]) is None
    assert _answers(root, c) == plain
    # a chain whose layers are listed out of order: a layer's BASE chunk disagrees
    (folder / f"graph-{names[1]}.graph").write_bytes(b"")
    (folder / "commit-graph-chain").chmod(0o644)
    (folder / "commit-graph-chain").write_text(f"{names[2]}\n{names[0]}\n")
    gitstore.clear_caches()
    with gitstore.open_repo(root) as repo:
        assert repo.graph() is None
    assert _answers(root, c) == plain


@needs_git
def test_maintain_supersedes_a_chain_as_git_does(
    settings: Any,
    built: tuple[Path, dict[str, str]],  # noqa: F811
    tmp_path: Path,
) -> None:
    root, c = built
    plain = _answers(root, c)
    folder = _write_chain(root, c)
    settings.TM_CHECKOUT = tmp_path / "not-a-repository"
    settings.TM_CHECKOUT_REPO = "tmsite"
    settings.TM_GIT_REPOS = {"renames": root}
    out = _Sink()
    call_command("tm_git", "maintain", stdout=out)  # the chain holds every commit: kept
    assert "renames: the commit-graph holds every commit already" in out.text
    assert len((folder / "commit-graph-chain").read_text().split()) == 3
    call_command("tm_git", "maintain", "--whole", stdout=_Sink())
    # one file, every commit, the chain it replaces removed, as git's own whole write does
    assert (root / ".git" / "objects" / "info" / "commit-graph").exists()
    assert list(folder.iterdir()) == []
    assert run_git(root, "commit-graph", "verify") == ""
    assert _answers(root, c) == plain
    # a commit later, git's next split write starts its chain from that file; it is read
    tree = run_git(root, "rev-parse", "main^{tree}").strip()
    who = ("-c", "user.name=Ada", "-c", "user.email=ada@example.org")
    later = run_git(root, *who, "commit-tree", tree, "-p", "main", "-m", "later").strip()
    run_git(root, "update-ref", "refs/heads/main", later)
    run_git(root, "commit-graph", "write", "--split=no-merge", "--changed-paths", "--reachable")
    assert len((folder / "commit-graph-chain").read_text().split()) == 2
    assert run_git(root, "commit-graph", "verify") == ""
    with gitstore.open_repo(root) as repo:
        graph = repo.graph()
        assert graph is not None and graph.layers == 2 and graph.position(later) is not None
    assert _answers(root, c) == plain


def _commit(root: Path, message: str, *parents: str) -> str:
    """A commit of main's tree with ``parents``, made the branch's tip (by the git CLI)."""
    tree = run_git(root, "rev-parse", "main^{tree}").strip()
    who = ("-c", "user.name=Ada", "-c", "user.email=ada@example.org")
    made = run_git(root, *who, "commit-tree", tree, *(f"-p{p}" for p in parents), "-m", message)
    run_git(root, "update-ref", "refs/heads/main", made.strip())
    return made.strip()


@needs_git
def test_maintain_adds_the_commits_a_graph_lacks_as_git_splits(
    settings: Any,
    built: tuple[Path, dict[str, str]],  # noqa: F811
    tmp_path: Path,
) -> None:
    root, c = built
    settings.TM_CHECKOUT = tmp_path / "not-a-repository"
    settings.TM_CHECKOUT_REPO = "tmsite"
    settings.TM_GIT_REPOS = {"renames": root}
    info = root / ".git" / "objects" / "info"
    call_command("tm_git", "maintain", stdout=_Sink())
    single = (info / "commit-graph").read_bytes()
    # two commits later: a merge of the tip with an older side branch, across the layers
    later = _commit(root, "later", "main")
    merged = _commit(root, "merge", later, c["s2"])
    oracle = tmp_path / "oracle"
    shutil.copytree(root, oracle)
    out = _Sink()
    call_command("tm_git", "maintain", stdout=out)
    assert "2 commits, 2 Bloom filters" in out.text, out.text
    # the one file became the chain's base under its checksum; the new layer is on top
    folder = info / "commit-graphs"
    names = (folder / "commit-graph-chain").read_text().split()
    assert names[0] == single[-20:].hex() and len(names) == 2
    assert not (info / "commit-graph").exists()
    assert (folder / f"graph-{names[0]}.graph").read_bytes() == single
    assert run_git(root, "commit-graph", "verify") == ""
    # git's own split write over the same file writes the same layer, byte for byte
    run_git(
        oracle,
        "-c",
        "commitGraph.generationVersion=1",
        "commit-graph",
        "write",
        "--split=no-merge",
        "--changed-paths",
        "--reachable",
    )
    theirs = oracle / ".git" / "objects" / "info" / "commit-graphs"
    assert (theirs / "commit-graph-chain").read_text().split() == names
    layer = (folder / f"graph-{names[1]}.graph").read_bytes()
    assert (theirs / f"graph-{names[1]}.graph").read_bytes() == layer
    gitstore.clear_caches()
    with gitstore.open_repo(root) as repo:
        graph = repo.graph()
        assert graph is not None and graph.layer_sizes == [15, 2]
        at = graph.position(merged)
        assert at is not None and graph.level_at(at) == 1 + graph.level_at(graph.position(later))
        assert graph.walk_record(bytes.fromhex(merged)) == (
            parse_commit(repo.raw(merged)[1]).tree,
            (later, c["s2"]),
            parse_commit(repo.raw(merged)[1]).commit_time,
        )
        logged = gitstore.log(repo, merged, "src/util.py", n=100)
    assert [e.commit for e in logged] == run_git(
        root, "log", "--follow", "--format=%H", "main", "--", "src/util.py"
    ).split()
    # nothing new: nothing written
    out = _Sink()
    call_command("tm_git", "maintain", stdout=out)
    assert "renames: the commit-graph holds every commit already" in out.text
    assert (folder / "commit-graph-chain").read_text().split() == names
    # more new commits than half the top layer's: the whole graph again, in one file
    tip = merged
    for n in range(2):
        tip = _commit(root, f"more {n}", tip)
    call_command("tm_git", "maintain", stdout=_Sink())
    assert (info / "commit-graph").exists() and list(folder.iterdir()) == []
    assert run_git(root, "commit-graph", "verify") == ""
    gitstore.clear_caches()
    with gitstore.open_repo(root) as repo:
        graph = repo.graph()
        assert graph is not None and graph.layer_sizes == [19]


@needs_git
def test_commits_a_layer_holds_no_filters_for_are_taken_as_changed(
    built: tuple[Path, dict[str, str]],  # noqa: F811
) -> None:
    """The base layer has no changed-path filters, the top layer has: blame and log walk down
    from ruled-out commits into the base layer's as ones that may have changed the file, and
    answer as with no graph."""
    root, c = built
    plain = _answers(root, c)
    run_git(
        root,
        "commit-graph",
        "write",
        "--split=no-merge",
        "--no-changed-paths",
        "--stdin-commits",
        stdin=c["r3"] + "\n",
    )
    run_git(root, "commit-graph", "write", "--split=no-merge", "--changed-paths", "--reachable")
    gitstore.clear_caches()
    with gitstore.open_repo(root) as repo:
        graph = repo.graph()
        assert isinstance(graph, LazyCommitGraph) and graph.layers == 2
        keys = repo.path_keys("src/util.py", prefixes=False)
        assert keys is not None
        assert repo.maybe_changed(c["r2"], keys)  # no filter: it may have
        assert not repo.maybe_changed(c["r8"], keys)  # the top layer's filter rules it out
    assert _answers(root, c) == plain
