"""``nearest``: the ranking against a plain reference, its ceilings, and a crowded directory."""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import overload

import pytest

from tests.namespace.world import HOST
from tmsite.core import nearest
from tmsite.core.errors import NotFound
from tmsite.mounts.fs.mount import FsMount
from tmsite.mounts.namespace import Namespace

pytestmark = pytest.mark.spec("NS8", "RJ1")


def levenshtein(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def reference(wanted: str, names: Sequence[str], limit: int) -> list[int]:
    """The ranking as specified, the slow way: every name, capped distance, then the tie-break."""
    key = wanted.lower().rstrip("/")
    scored = []
    for index, name in enumerate(names):
        folded = name.lower().rstrip("/")
        d = min(levenshtein(key, folded), nearest.CUTOFF + 1)
        scored.append((d, 0 if folded.startswith(key[:3]) else 1, name, index))
    return [index for *_, index in sorted(scored)[:limit]]


def test_the_ranking_matches_the_plain_reference() -> None:
    rng = random.Random(8)
    alphabet = "abcAB-._/0"
    for _ in range(300):
        names = [
            "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 9)))
            for _ in range(rng.randint(1, 60))
        ]
        wanted = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 9)))
        limit = rng.randint(1, 20)
        assert nearest.rank_names(wanted, names, limit) == reference(wanted, names, limit), (
            wanted,
            names,
        )


def test_names_past_the_cutoff_are_still_offered_by_the_tie_break() -> None:
    # Only the last is within 64 edits; the others count 65 and go by prefix, then by name.
    names = ["z" * 80, "q" * 90, "abc" + "y" * 70, "m", "abc" + "x" * 60]
    wanted = "abc" + "x" * 120
    assert reference(wanted, names, 5) == [4, 2, 3, 1, 0]
    assert nearest.rank_names(wanted, names, 5) == [4, 2, 3, 1, 0]


def test_folding_lowercases_strips_slashes_and_survives_nul() -> None:
    assert nearest.fold(["Docs//", "a/b/", "X"]) == ["docs", "a/b", "x"]
    assert nearest.fold(["a\0b/", "C/"]) == ["a\0b", "c"]
    assert nearest.fold([]) == []


def test_rank_never_offers_the_excluded_uri() -> None:
    candidates = [("guide", "tm://h/a/guide"), ("guides", "tm://h/a/guides"), ("x", "tm://h/a/x")]
    assert nearest.rank("guide", candidates, exclude="tm://h/a/guide") == [
        "tm://h/a/guides",
        "tm://h/a/x",
    ]


class Endless(Sequence[str]):
    """A listing that claims a billion names and records which it was asked for."""

    def __init__(self) -> None:
        self.asked: list[int | slice] = []

    def __len__(self) -> int:
        return 10**9

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        self.asked.append(index)
        if isinstance(index, slice):
            return [f"n{i:09d}" for i in range(*index.indices(len(self)))]
        assert index < nearest.MAX_RANKED, "a name past the ceiling was looked at"
        return f"n{index:09d}"


def test_one_ranking_looks_at_most_at_max_ranked_names() -> None:
    endless = Endless()
    # The exact name sits past the ceiling: it is never looked at.
    order = nearest.rank_names(f"n{nearest.MAX_RANKED + 5:09d}", endless, 5)
    assert endless.asked == [slice(None, nearest.MAX_RANKED, None)]
    assert len(order) == 5 and max(order) < nearest.MAX_RANKED
    names = [f"n{i:09d}" for i in range(nearest.MAX_RANKED + 10)]
    assert nearest.rank_names(names[-1], names, 1) != [len(names) - 1]
    assert nearest.rank_names(names[nearest.MAX_RANKED - 1], names, 1) == [nearest.MAX_RANKED - 1]


def test_ties_past_max_ties_are_ordered_among_the_first_in_listing_order() -> None:
    count = nearest.MAX_TIES + 500
    # Every name is four edits from the wanted one; listed in descending order.
    names = [f"k{i:04d}" for i in reversed(range(count))]
    order = nearest.rank_names("kzzzz", names, 5)
    # The tie-break (by name) orders the first MAX_TIES listed: k1499 … k0500.
    assert [names[i] for i in order] == [f"k{i:04d}" for i in range(500, 505)]
    few = names[-nearest.MAX_TIES :]
    assert [few[i] for i in nearest.rank_names("kzzzz", few, 5)] == [f"k{i:04d}" for i in range(5)]


@pytest.fixture
def fast_tmp(tmp_path: Path) -> Iterator[Path]:
    """A directory on tmpfs when the machine has one (creating many files there is quick)."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    made = Path(tempfile.mkdtemp(dir=shm, prefix="tmsite-nearest-"))
    try:
        yield made
    finally:
        shutil.rmtree(made, ignore_errors=True)


def test_a_miss_in_a_crowded_directory_ranks_all_of_it_and_sees_a_new_name(
    fast_tmp: Path,
) -> None:
    crowd = fast_tmp / "checkout" / "docs" / "crowd"
    crowd.mkdir(parents=True)
    flags = os.O_CREAT | os.O_WRONLY | os.O_EXCL
    for i in range(20_000):
        os.close(os.open(crowd / f"page-{i:05d}.md", flags, 0o644))
    ns = Namespace(HOST, {"fs": FsMount(HOST, fast_tmp / "checkout", ["docs"])})
    base = f"tm://{HOST}/fs/docs/crowd/"

    def offered(name: str) -> list[str]:
        with pytest.raises(NotFound) as refused:
            ns.read(base + name)
        assert refused.value.data["reason"] == "not-found"
        return list(refused.value.data["nearest"])

    # Far past the first 5,000 names: one edit away, then the first by name of those two away.
    assert offered("page-17321.mdx") == [
        base + f"page-{n}.md" for n in ("17321", "07321", "10321", "11321", "12321")
    ]
    assert offered("page-17321.mdx") == offered("page-17321.mdx")  # the cached scan answers
    # A new name is seen on the next miss (the scan and its folded names are kept per mtime).
    (crowd / "Page-17321.MDX").write_text("new\n")
    assert offered("page-17321.mdx")[:2] == [base + "Page-17321.MDX", base + "page-17321.md"]
