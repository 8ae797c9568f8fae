"""Edits that identical lines let be placed several ways are placed where git places them.

Spec: ANY2.
"""

from __future__ import annotations

import itertools
import random
import re
from collections import Counter
from pathlib import Path

import pytest
from rapidfuzz.distance import Indel

from tests.git_oracle import diff_flags, needs_git, run_git
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
    gone, added = edit_flags(old, new)
    assert gone == [False] * 6
    # The inserted block could sit at lines 1-3, 2-4 or 3-5 of the new version; xdiff leaves it
    # at its lowest place, so "b" keeps its "}" and blank line.
    assert added == [False, False, False, True, True, True, False, False, False]
    assert line_map(old, new) == [0, 1, 2, -1, -1, -1, 3, 4, 5]


def _script_size(flags: tuple[list[bool], list[bool]] | None) -> int:
    assert flags is not None
    return sum(flags[0]) + sum(flags[1])


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


def _joined(lines: list[bytes]) -> bytes:
    return b"".join(line + b"\n" for line in lines)


def _long_file(rng: random.Random, size: int) -> list[bytes]:
    """A long file: numbered lines, a fifth of them blank lines and braces."""
    return [
        rng.choice(REPEATED) if rng.random() < 0.2 else f"line {n}".encode() for n in range(size)
    ]


def _versions() -> list[list[bytes]]:
    """Pairs' worth of versions that reach each step of xdiff: a short file's edits, a long
    one's edits at both ends (a middle cut into boxes, a cut tail, lines held often), and a
    reshuffle whose cost passes the heuristics' bound."""
    rng = random.Random(29)
    out = _long_history()[:12]
    long = _long_file(rng, 3000)
    out.append(long)
    for fresh in range(12):
        out.append(_long_edit(rng, out[-1], 100 + fresh))
    shuffled = list(long)
    for _ in range(900):
        i, j = rng.randrange(len(shuffled)), rng.randrange(len(shuffled))
        shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
    out += [shuffled, long]
    return out


@needs_git
def test_every_step_gives_gits_own_diff(tmp_path: Path) -> None:
    versions = _versions()
    for old, new in itertools.pairwise(versions):
        assert edit_flags(old, new) == diff_flags(tmp_path, _joined(old), _joined(new))


def test_counts_carried_down_a_history_are_each_versions_own() -> None:
    versions = _versions()
    carried = linediff.line_counts(Text(_joined(versions[-1])))
    for new, old in itertools.pairwise(reversed(versions)):  # newest first, as blame walks
        counts = linediff.Counts(carried)
        found = linediff.edit_spans(Text(_joined(old)), Text(_joined(new)), counts)
        assert found == linediff.edit_spans(Text(_joined(old)), Text(_joined(new)))
        assert counts.of_old == Counter(old)
        carried = counts.of_old


def test_a_long_middle_is_cut_through_its_shared_runs() -> None:
    rng = random.Random(3)
    old = _long_file(rng, 4000)
    edited = (0, 700, 2000, len(old) - 1)  # shared runs of hundreds of lines between edits
    new = [b"changed %d" % i if i in edited else line for i, line in enumerate(old)]
    a, b = Text(_joined(old)), Text(_joined(new))
    start, end_a, end_b = linediff.common_ends(a, b)
    unique = linediff._Unique(a.data, linediff.line_counts(b))
    boxes = linediff._boxes(a.data, b.data, (start, end_a, start, end_b), unique)
    assert len(boxes) == 4  # a box an edit: the runs between them are shared
    gone, added = edit_flags(old, new)
    assert [i for i, x in enumerate(gone) if x] == list(edited)
    assert [i for i, x in enumerate(added) if x] == list(edited)


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


#: Versions whose last line has no newline, on one side or both.
OPEN_ENDS = [
    (b"a\nb", b"a\nb\n"),
    (b"a\nb\n", b"a\nb"),
    (b"a\nb", b"a\nb"),
    (b"x\ny", b"x\nz\ny\n"),
    (b"}\n\n}", b"}\n\n}\n\n}\n"),
    (b"  ", b"  \n  \n"),
]


@needs_git
@pytest.mark.parametrize(("old", "new"), OPEN_ENDS)
def test_a_last_line_without_its_newline_is_another_line(
    tmp_path: Path, old: bytes, new: bytes
) -> None:
    counts = linediff.Counts(linediff.line_counts(Text(new)))
    gone, added, _span_a, _span_b = linediff.edit_spans(Text(old), Text(new), counts)
    assert (list(map(bool, gone)), list(map(bool, added))) == diff_flags(tmp_path, old, new)
    assert counts.of_old == Counter(Text(old).lines())


@needs_git
def test_blame_of_a_newline_added_at_the_end_matches_git(tmp_path: Path) -> None:
    b = Builder.init(str(tmp_path / "repo"))
    first = b.commit("open", {"f.c": b"int a;\nint b;"}, when=0)
    second = b.commit("closed", {"f.c": b"int a;\nint b;\n"}, [first], when=3600).decode()
    oracle = _porcelain(run_git(tmp_path / "repo", "blame", "--porcelain", second, "--", "f.c"))
    with gitstore.open_repo(tmp_path / "repo") as repo:
        assert [line.commit for line in gitstore.blame(repo, second, "f.c")] == oracle
    assert oracle[1] == second  # git blames the line whose newline the commit added
