"""A blame stopped past its allowance says which lines it had blamed, and each of those runs,
blamed alone, reads within the same allowance; lines it had not reached do not.

``ladder.txt`` has 60 lines, all from the root commit; commit ``i`` (1–59) rewrites line
``7i mod 60`` (a different line each time), so the newest commits blame lines scattered over
the file.

Spec: ANY2.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gitstore.builder import Builder
from tests.gitstore.conftest import blame_lines
from tmsite import gitstore
from tmsite.core import work

pytestmark = pytest.mark.spec("ANY2")

LINES = 60
#: Tokens a walk may spend: one commit a token, so 20 commits.
ALLOWANCE = 20
PRICES: dict[work.Unit, float] = {"commits": 1.0}


@pytest.fixture(scope="module")
def ladder(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    root = tmp_path_factory.mktemp("ladder") / "repo"
    b = Builder.init(str(root))
    text = [f"line {i} from the start" for i in range(LINES)]
    commits = [b.commit("c0", {"ladder.txt": blame_lines(*text)}, when=0)]
    for i in range(1, LINES):
        text[7 * i % LINES] = f"line {7 * i % LINES} rewritten by c{i}"
        commits.append(
            b.commit(f"c{i}", {"ladder.txt": blame_lines(*text)}, [commits[-1]], when=60 * i)
        )
    b.set_ref("refs/heads/main", commits[-1])
    return root, [sha.decode() for sha in commits]


def test_a_stopped_blame_offers_the_runs_it_blamed(ladder: tuple[Path, list[str]]) -> None:
    root, commits = ladder
    gitstore.clear_caches()
    with gitstore.open_repo(root) as repo:
        head = commits[-1]
        whole = gitstore.blame(repo, head, "ladder.txt")
        gitstore.clear_caches()  # each walk below is walked, not read from the cache
        with work.allowing(ALLOWANCE, PRICES), work.heavy(), pytest.raises(work.OverBudget) as over:
            gitstore.blame(repo, head, "ladder.txt")
        runs = over.value.progress
        assert isinstance(runs, tuple) and runs
        blamed = {line for first, last in runs for line in range(first, last + 1)}
        # the 20 commits walked (c59 down to c40) each blamed the line it rewrote
        assert blamed == {7 * i % LINES + 1 for i in range(40, LINES)}
        for first, last in runs:
            with work.allowing(ALLOWANCE, PRICES), work.heavy():
                alone = gitstore.blame(repo, head, "ladder.txt", (first, last))
            assert alone == whole[first - 1 : last]
        # a line it had not reached (from the root commit) is no cheaper alone
        untouched = next(n for n in range(1, LINES + 1) if n not in blamed)
        with work.allowing(ALLOWANCE, PRICES), work.heavy(), pytest.raises(work.OverBudget):
            gitstore.blame(repo, head, "ladder.txt", (untouched, untouched))


def test_a_range_is_refused_when_it_starts_past_its_end(ladder: tuple[Path, list[str]]) -> None:
    root, commits = ladder
    with gitstore.open_repo(root) as repo:
        assert gitstore.blame(repo, commits[-1], "ladder.txt", (LINES + 1, LINES + 5)) == []
        with pytest.raises(ValueError, match="FIRST-LAST"):
            gitstore.blame(repo, commits[-1], "ladder.txt", (5, 4))
