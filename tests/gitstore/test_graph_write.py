"""The commit-graph writer: the very bytes git writes, read back by git and by the history.

Spec: ANY2.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from tests.git_oracle import needs_git, run_git
from tests.gitstore.test_follow import CASES, _build
from tmsite import gitstore
from tmsite.gitstore.graphwrite import commit_graph_bytes, write_commit_graph

pytestmark = pytest.mark.spec("ANY2")

#: Directories whose log (history simplification, no --follow) the filters also speed up.
DIRECTORIES = ["doc", "src", "manual", "twin", "lib"]


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The rename repository of ``test_follow``, with an octopus merge on top (an EDGE chunk)."""
    root = tmp_path / "repo"
    c = _build(root)
    with gitstore.open_repo(root) as repo:
        tip = repo.commit(c["r10"])
    from dulwich.objects import Commit
    from dulwich.repo import Repo

    with Repo(str(root)) as raw:
        octopus = Commit()
        octopus.tree = tip.tree.encode()
        octopus.parents = [c[n].encode() for n in ("r10", "s2", "t2", "r3")]
        octopus.author = octopus.committer = b"Ada <ada@example.org>"
        octopus.author_time = octopus.commit_time = 1_700_000_000 + 12 * 86_400
        octopus.author_timezone = octopus.commit_timezone = 0
        octopus.message = b"octopus\n"
        raw.object_store.add_object(octopus)
        raw.refs[b"refs/heads/main"] = octopus.id
    c["octopus"] = octopus.id.decode()
    return root, c


@needs_git
def test_the_file_is_the_one_git_writes(built: tuple[Path, dict[str, str]]) -> None:
    root, _c = built
    with gitstore.open_repo(root) as repo:
        done = write_commit_graph(repo)
    assert done.commits == 15 and done.filters == 15 and done.too_many == 0
    mine = done.path.read_bytes()
    assert run_git(root, "commit-graph", "verify") == ""
    done.path.chmod(0o644)
    run_git(
        root,
        "-c",
        "commitGraph.generationVersion=1",
        "commit-graph",
        "write",
        "--reachable",
        "--changed-paths",
    )
    assert done.path.read_bytes() == mine


@needs_git
def test_history_reads_the_same_with_the_filters(built: tuple[Path, dict[str, str]]) -> None:
    root, c = built
    gitstore.clear_caches()
    with gitstore.open_repo(root) as plain:
        before = [
            (gitstore.log(plain, c[s], p, n=100), gitstore.blame(plain, c[s], p)) for s, p in CASES
        ]
        dates = [gitstore.resolve(plain, f"2023-11-{d:02d}T12:00:00Z") for d in range(15, 27)]
        folders = [gitstore.log(plain, c["octopus"], d, n=100) for d in DIRECTORIES]
    with gitstore.open_repo(root) as repo:
        write_commit_graph(repo)
    gitstore.clear_caches()
    with gitstore.open_repo(root) as graphed:
        keys = graphed.path_keys("plain.txt")
        assert keys is not None
        assert not graphed.maybe_changed(c["r7"], keys)  # r7 moved the notes, not plain.txt
        after = [
            (gitstore.log(graphed, c[s], p, n=100), gitstore.blame(graphed, c[s], p))
            for s, p in CASES
        ]
        assert after == before
        assert [gitstore.log(graphed, c["octopus"], d, n=100) for d in DIRECTORIES] == folders
        assert [
            gitstore.resolve(graphed, f"2023-11-{d:02d}T12:00:00Z") for d in range(15, 27)
        ] == dates
    for directory, log in zip(DIRECTORIES, folders, strict=True):
        oracle = run_git(root, "log", "--format=%H", "-n", "100", "main", "--", directory or ".")
        assert [e.commit for e in log] == oracle.split()
    for day in range(15, 27):
        oracle = run_git(root, "rev-list", "-1", f"--before=2023-11-{day:02d}T12:00:00Z", "main")
        assert dates[day - 15].commit == oracle.strip()


def test_without_filters_and_a_too_busy_commit(tmp_path: Path) -> None:
    from tests.gitstore.builder import Builder

    b = Builder.init(str(tmp_path / "busy"))
    first = b.commit("wide", {f"d{i % 7}/f{i}.txt": b"x%d\n" % i for i in range(600)}, when=0)
    b.set_ref("refs/heads/main", first)
    with gitstore.open_repo(tmp_path / "busy") as repo:
        plain, commits, made, too_many = commit_graph_bytes(repo, filters=False)
        assert (commits, made, too_many) == (1, 0, 0) and b"BDAT" not in plain[:64]
        _content, commits, made, too_many = commit_graph_bytes(repo)
        assert (commits, made, too_many) == (1, 1, 1)


class _Sink:
    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> None:
        self.text += text

    def flush(self) -> None:
        pass


def test_maintain_writes_each_served_repository(
    settings: Any, built: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    root, _c = built
    other = tmp_path / "other"
    shutil.copytree(root, other)
    settings.TM_CHECKOUT = tmp_path / "not-a-repository"
    settings.TM_CHECKOUT_REPO = "tmsite"
    settings.TM_GIT_REPOS = {"renames": root, "other": other}
    out = _Sink()
    call_command("tm_git", "maintain", "--repo", "renames", stdout=out)
    assert "renames: wrote" in out.text and "15 commits, 15 Bloom filters" in out.text
    assert (root / ".git" / "objects" / "info" / "commit-graph").exists()
    assert not (other / ".git" / "objects" / "info" / "commit-graph").exists()
    call_command("tm_git", "maintain", "--no-filters", stdout=out)
    assert "other: wrote" in out.text and "0 Bloom filters" in out.text
    with pytest.raises(CommandError, match="no served repository is called 'nope'"):
        call_command("tm_git", "maintain", "--repo", "nope", stdout=out)
