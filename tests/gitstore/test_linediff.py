"""Edits that identical lines let be placed several ways are placed where git places them.

Spec: ANY2.
"""

from __future__ import annotations

import itertools
import random
import re
from pathlib import Path

import pytest
from rapidfuzz.distance import Indel

from tests.git_oracle import needs_git, run_git
from tests.gitstore.builder import Builder
from tmsite import gitstore
from tmsite.gitstore import linediff
from tmsite.gitstore.blame import line_map
from tmsite.gitstore.linediff import Text, edit_flags

pytestmark = pytest.mark.spec("ANY2")

FUNCTION = ["int f{n}(void)", "{", "\treturn {n};", "}", ""]


def _functions(*numbers: int) -> list[str]:
    return [line.replace("{n}", str(n)) for n in numbers for line in FUNCTION]


VERSIONS = [
    _functions(1, 2, 3),
    _functions(1, 4, 2, 3),  # a function inserted: its braces and blank line repeat
    _functions(1, 4, 3),  # one removed
    [*_functions(1, 4, 3)[:7], "\treturn 44;", *_functions(1, 4, 3)[8:]],
    _functions(5, 1, 4, 3, 6),
]


def _text(lines: list[str]) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


def _porcelain(text: str) -> list[str]:
    out, current = [], ""
    for line in text.split("\n"):
        head = re.match(r"^([0-9a-f]{40}) \d+ \d+", line)
        if head:
            current = head.group(1)
        elif line.startswith("\t"):
            out.append(current)
    return out


@needs_git
def test_blame_of_repeated_lines_matches_git(tmp_path: Path) -> None:
    b = Builder.init(str(tmp_path / "repo"))
    commits: list[bytes] = []
    for i, lines in enumerate(VERSIONS):
        commits.append(
            b.commit(f"v{i}", {"f.c": _text(lines)}, commits[-1:] or None, when=i * 3600)
        )
    rng = random.Random(7)
    lines = list(VERSIONS[-1])
    for i in range(len(VERSIONS), len(VERSIONS) + 12):
        at = rng.randrange(len(lines) + 1)
        if rng.random() < 0.5 and lines:
            del lines[at : at + rng.randrange(1, 4)]
        else:
            lines[at:at] = rng.choice([["}", ""], ["", "{"], [f"\treturn {i};", "}"], [""]])
        commits.append(b.commit(f"v{i}", {"f.c": _text(lines)}, [commits[-1]], when=i * 3600))
    root = tmp_path / "repo"
    with gitstore.open_repo(root) as repo:
        for commit in commits[1:]:
            sha = commit.decode()
            oracle = _porcelain(run_git(root, "blame", "--porcelain", sha, "--", "f.c"))
            assert [line.commit for line in gitstore.blame(repo, sha, "f.c")] == oracle


#: Edits whose placement the longest-match matcher chose differently from git.
AMBIGUOUS = [
    (["b", "", "b", "", "}", "b", "a"], ["}", "b", "", "", "b", "", "}", "b", "a"]),
    (["b", "", "}", "a", "", "b"], ["b", "", "a", "", "", "b"]),
    (["a", "a", "", "b", "b", "", "b"], ["a", "a", "", "}", "b", "b", "", "", "b"]),
    (["a", "}", "a", "}", "", "}"], ["a", "}", "a", "", "}", ""]),
]


@needs_git
@pytest.mark.parametrize(("old", "new"), AMBIGUOUS)
def test_an_ambiguous_edit_is_blamed_as_git_blames_it(
    tmp_path: Path, old: list[str], new: list[str]
) -> None:
    b = Builder.init(str(tmp_path / "repo"))
    first = b.commit("old", {"f.c": _text(old)}, when=0)
    second = b.commit("new", {"f.c": _text(new)}, [first], when=3600).decode()
    oracle = _porcelain(run_git(tmp_path / "repo", "blame", "--porcelain", second, "--", "f.c"))
    with gitstore.open_repo(tmp_path / "repo") as repo:
        assert [line.commit for line in gitstore.blame(repo, second, "f.c")] == oracle


def test_line_map_reads_the_compacted_script() -> None:
    old = [b"a", b"}", b"", b"b", b"}", b""]
    new = [b"a", b"}", b"", b"x", b"}", b"", b"b", b"}", b""]
    gone, added = edit_flags(old, new) or ([], [])
    assert gone == [False] * 6
    # The inserted block could sit at lines 1-3, 2-4 or 3-5 of the new version; xdiff leaves it
    # at its lowest place, so "b" keeps its "}" and blank line.
    assert added == [False, False, False, True, True, True, False, False, False]
    assert line_map(old, new) == [0, 1, 2, -1, -1, -1, 3, 4, 5]


def _script_size(flags: tuple[list[bool], list[bool]] | None) -> int:
    assert flags is not None
    return sum(flags[0]) + sum(flags[1])


def _unchanged_pairs_equal(old: list[bytes], new: list[bytes]) -> bool:
    mapping = line_map(old, new)
    kept = [i for i in mapping if i >= 0]
    return kept == sorted(kept) and all(old[i] == new[j] for j, i in enumerate(mapping) if i >= 0)


def test_past_the_edit_bound_the_script_stays_shortest(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(11)
    words = [b"", b"}", b"{", *(f"line {n}".encode() for n in range(40))]
    for _ in range(40):
        old = [rng.choice(words) for _ in range(rng.randint(50, 200))]
        new = list(old)
        for _ in range(rng.randint(10, 60)):
            at = rng.randrange(len(new) + 1)
            if rng.random() < 0.5 and new:
                del new[at : at + rng.randint(1, 3)]
            else:
                new[at:at] = [rng.choice(words)]
        searched = _script_size(edit_flags(old, new))
        monkeypatch.setattr(linediff, "MAX_EDITS", 4)
        assert _script_size(edit_flags(old, new)) == searched
        assert _unchanged_pairs_equal(old, new)
        monkeypatch.undo()


def test_past_the_cell_bound_no_script_is_sought(monkeypatch: pytest.MonkeyPatch) -> None:
    old = [f"{n}".encode() for n in range(300)]
    new = old[::-1]
    monkeypatch.setattr(linediff, "MAX_EDITS", 4)
    monkeypatch.setattr(linediff, "MAX_CELLS", 100)
    assert edit_flags(old, new) is None
    assert _unchanged_pairs_equal(old, new)  # the longest-match matcher answers instead


#: Lines a long file repeats: a blank line, braces, a statement.
REPEATED = [b"", b"}", b"{", b"\treturn 0;"]


def _long_edit(rng: random.Random, lines: list[bytes], fresh: int) -> list[bytes]:
    """``lines`` edited as a long file is: near its top and bottom, sometimes in the middle."""
    new = list(lines)
    for low, high in ((0, 40), (len(new) // 2 - 30, len(new) // 2 + 30), (len(new) - 40, len(new))):
        if rng.random() < 0.3:
            continue
        at = rng.randrange(max(0, low), max(low + 1, min(high, len(new))))
        if rng.random() < 0.4 and new:
            del new[at : at + rng.randint(1, 5)]
        else:
            new[at:at] = [
                rng.choice(REPEATED) if rng.random() < 0.3 else f"new {fresh} {k}".encode()
                for k in range(rng.randint(1, 5))
            ]
    if rng.random() < 0.15:  # a block of new lines, past the few found one by one
        at = rng.randrange(len(new))
        new[at:at] = [f"block {fresh} {k}".encode() for k in range(90)]
    return new


def _long_history() -> list[list[bytes]]:
    """60 versions of a 700-line file with blank lines and braces among its lines."""
    rng = random.Random(28)
    lines = [
        rng.choice(REPEATED) if rng.random() < 0.2 else f"line {n}".encode() for n in range(700)
    ]
    versions = [lines]
    for fresh in range(60):
        versions.append(_long_edit(rng, versions[-1], fresh))
    return versions


def test_lacked_lines_found_one_by_one_give_the_plain_script(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Lacked lines found one by one and stepped over by slicing give the flags of finding
    them all at once; the script is as short as can be and pairs equal lines."""
    versions = _long_history()
    pairs = list(itertools.pairwise(versions))
    fast = [edit_flags(old, new) for old, new in pairs]
    monkeypatch.setattr(linediff, "FEW_LACKED", -1)
    assert [edit_flags(old, new) for old, new in pairs] == fast
    for (old, new), flags in zip(pairs, fast, strict=True):
        assert _script_size(flags) == Indel.distance(old, new)
        assert _unchanged_pairs_equal(old, new)


@needs_git
def test_blame_of_a_long_file_edited_at_both_ends_matches_git(tmp_path: Path) -> None:
    b = Builder.init(str(tmp_path / "repo"))
    commits: list[bytes] = []
    for i, lines in enumerate(_long_history()[:25]):
        text = b"".join(line + b"\n" for line in lines)
        commits.append(b.commit(f"v{i}", {"f.c": text}, commits[-1:] or None, when=i * 3600))
    head = commits[-1].decode()
    oracle = _porcelain(run_git(tmp_path / "repo", "blame", "--porcelain", head, "--", "f.c"))
    with gitstore.open_repo(tmp_path / "repo") as repo:
        assert [line.commit for line in gitstore.blame(repo, head, "f.c")] == oracle


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (b"", b"a\n"),
        (b"a\nb", b"a\nb\n"),  # the same lines, one without its last newline
        (b"a\nb\n", b"a\nb\nc"),
        (b"x\ny\n", b"x\ny\nx\ny\n"),  # one a prefix and a suffix of the other
        (b"a\n\n\nb\n", b"a\n\n\n\nb\n"),  # a blank line that could go in four places
        (b"same\n", b"same\n"),
    ],
)
def test_texts_measured_as_bytes_diff_as_their_lines(old: bytes, new: bytes) -> None:
    old_lines, new_lines = Text(old).lines(), Text(new).lines()
    found = linediff.edit_spans(linediff.Text(old), linediff.Text(new))
    assert found is not None
    gone, added, _span_a, _span_b = found
    assert (list(map(bool, gone)), list(map(bool, added))) == edit_flags(old_lines, new_lines)
    assert sum(gone) + sum(added) == Indel.distance(old_lines, new_lines)
