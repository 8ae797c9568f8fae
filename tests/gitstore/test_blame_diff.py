"""The blame diff's shortcut for files without repeated lines gives SequenceMatcher's pairs."""

from __future__ import annotations

import random
from difflib import SequenceMatcher

import pytest

from tmsite.gitstore.blame import MAX_RUNS, line_map, unique_blocks

pytestmark = pytest.mark.spec("GIT")


def _pairs(blocks: list[tuple[int, int, int]]) -> list[tuple[int, int]]:
    return sorted((i + t, j + t) for i, j, size in blocks for t in range(size))


def _edited(rng: random.Random, lines: list[int]) -> list[int]:
    out = list(lines)
    for _ in range(rng.randint(0, 5)):
        at = rng.randrange(len(out) + 1)
        roll = rng.random()
        if roll < 0.3:
            out.insert(at, rng.randrange(80))
        elif out and roll < 0.6:
            out.pop(min(at, len(out) - 1))
        elif out:
            out[min(at, len(out) - 1)] = rng.randrange(80)
    return out


def test_unique_blocks_match_sequence_matcher() -> None:
    rng = random.Random(2024)
    checked = 0
    for _ in range(4000):
        size = rng.randint(0, 40)
        b = rng.sample(range(80), min(size, 80))
        a = _edited(rng, b) if rng.random() < 0.6 else [rng.randrange(80) for _ in range(size)]
        old = [str(x).encode() for x in a]
        new = [str(x).encode() for x in b]
        found = unique_blocks(old, new)
        if found is None:
            continue
        checked += 1
        expected = SequenceMatcher(None, old, new, autojunk=False).get_matching_blocks()
        assert _pairs(found) == _pairs([tuple(block) for block in expected])
    assert checked > 3000


def test_unique_blocks_leave_repeats_and_scatter_to_the_matcher() -> None:
    assert unique_blocks([b"a"], [b"a", b"a"]) is None
    many = [str(i).encode() for i in range(4 * MAX_RUNS)]
    assert unique_blocks(many[::2], many[::-1]) is None


def test_line_map_with_and_without_the_shortcut() -> None:
    old = [f"line {i}".encode() for i in range(1000)]
    new = list(old)
    new[100] = b"changed"
    new[500:502] = [b"x", b"y", b"z"]
    del new[900]
    mapping = line_map(old, new)
    assert mapping[:100] == list(range(100)) and mapping[100] == -1
    assert mapping[500:503] == [-1, -1, -1]
    assert mapping[-1] == 999
    blank = [b"", *old, b""]  # a repeated line: the matcher itself answers
    expected = SequenceMatcher(None, blank, [b"", *new, b""], autojunk=False)
    matched = sum(size for _a, _b, size in expected.get_matching_blocks())
    assert len([m for m in line_map(blank, [b"", *new, b""]) if m >= 0]) == matched
