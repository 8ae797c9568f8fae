"""A history walk stopped past its allowance says how many entries it had found and how many
commits it had walked; the log of that many entries reads within the same allowance.

``docs/sparse.md`` is added by the root commit and changed again only by ``c59``, ``c50``,
``c45`` and ``c30`` of 60 commits; every commit changes ``n.txt``. With and without a
commit-graph (its Bloom filters let the walk pass commits over without reading a tree).

Spec: ANY2.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gitstore.builder import Builder
from tmsite import gitstore
from tmsite.core import work
from tmsite.gitstore.graphwrite import write_commit_graph

pytestmark = pytest.mark.spec("ANY2")

COMMITS = 60
CHANGED = (59, 50, 45, 30)
#: Tokens a walk may spend: one commit a token, so 20 commits (c59 down to c40).
ALLOWANCE = 20
PRICES: dict[work.Unit, float] = {"commits": 1.0}


@pytest.fixture(params=["plain", "commit-graph"])
def sparse(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, list[str]]:
    root = tmp_path / "repo"
    b = Builder.init(str(root))
    commits = [b.commit("c0", {"docs/sparse.md": b"0\n", "n.txt": b"0\n"}, when=0)]
    for i in range(1, COMMITS):
        changes = {"n.txt": f"{i}\n".encode()}
        if i in CHANGED:
            changes["docs/sparse.md"] = f"{i}\n".encode()
        commits.append(b.commit(f"c{i}", changes, [commits[-1]], when=60 * i))
    b.set_ref("refs/heads/main", commits[-1])
    if request.param == "commit-graph":
        with gitstore.open_repo(root) as repo:
            write_commit_graph(repo)
    return root, [sha.decode() for sha in commits]


@pytest.mark.parametrize("path", ["docs/sparse.md", "docs"])
def test_a_stopped_log_says_what_it_found_and_that_many_read(
    sparse: tuple[Path, list[str]], path: str
) -> None:
    root, commits = sparse
    gitstore.clear_caches()
    with gitstore.open_repo(root) as repo:
        head = commits[-1]
        whole = gitstore.log(repo, head, path, n=8)
        assert [entry.commit for entry in whole] == [commits[i] for i in (*CHANGED, 0)]
        gitstore.clear_caches()
        with work.allowing(ALLOWANCE, PRICES), work.heavy(), pytest.raises(work.OverBudget) as over:
            gitstore.log(repo, head, path, n=8)
        # stopped at c39, the 21st commit: c59, c50 and c45 found among the 20 walked
        assert over.value.progress == gitstore.Walked(found=3, commits=ALLOWANCE)
        gitstore.clear_caches()
        with work.allowing(ALLOWANCE, PRICES), work.heavy():
            assert gitstore.log(repo, head, path, n=3) == whole[:3]
        # one more entry is past what it had walked: no cheaper than the whole
        with work.allowing(ALLOWANCE, PRICES), work.heavy(), pytest.raises(work.OverBudget):
            gitstore.log(repo, head, path, n=4)


def test_a_stopped_log_that_found_one_or_none_says_so(sparse: tuple[Path, list[str]]) -> None:
    root, commits = sparse
    gitstore.clear_caches()
    with (
        gitstore.open_repo(root) as repo,
        work.allowing(5, PRICES),
        work.heavy(),
        pytest.raises(work.OverBudget) as over,
    ):
        gitstore.log(repo, commits[50], "docs/sparse.md", n=2)
    # c50 found, then c49 down to c46 walked: the sixth commit (c45) is past the allowance
    assert over.value.progress == gitstore.Walked(found=1, commits=5)
    gitstore.clear_caches()
    with (
        gitstore.open_repo(root) as repo,
        work.allowing(5, PRICES),
        work.heavy(),
        pytest.raises(work.OverBudget) as over,
    ):
        gitstore.log(repo, commits[44], "docs/sparse.md", n=2)
    assert over.value.progress == gitstore.Walked(found=0, commits=5)
