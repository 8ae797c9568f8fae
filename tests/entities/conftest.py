"""Fixtures for the entity tests: the shipped records, and a generated large record set."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tmsite.entities.loaders import Records, fill, parse_records

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def shipped_bytes() -> tuple[bytes, bytes]:
    """The contents of ``data/autopsy.json`` and ``data/lessons.json`` as committed."""
    return (ROOT / "data/autopsy.json").read_bytes(), (ROOT / "data/lessons.json").read_bytes()


@pytest.fixture
def shipped_json(shipped_bytes: tuple[bytes, bytes]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A fresh, mutable copy of the two shipped records as JSON values."""
    autopsy, lessons = shipped_bytes
    return json.loads(autopsy), json.loads(lessons)


@pytest.fixture
def shipped(shipped_bytes: tuple[bytes, bytes]) -> Records:
    return parse_records(*shipped_bytes)


@pytest.fixture
def loaded(db: None, shipped: Records) -> Records:
    """The shipped records, loaded into the tables."""
    fill(shipped)
    return shipped


def dump(value: Any) -> bytes:
    return json.dumps(value).encode()


def make_large(
    games: int = 10, per_game: int = 500, hot: str = "pad-poll", hot_count: int = 2000
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A valid record set of ``games * per_game`` routines; ``hot`` is in ``hot_count`` of them.

    Every routine also shows one other pattern, chosen by its index, so the other patterns'
    relations are filled too.
    """
    root = json.loads((ROOT / "data/autopsy.json").read_text(encoding="utf-8"))
    names = list(root["patterns"])
    others = [n for n in names if n != hot]
    game_list = []
    placed = 0
    for g in range(games):
        sha = hashlib.sha256(f"large record set game {g}".encode()).hexdigest()
        routines = []
        counts: dict[str, int] = {}
        for i in range(per_game):
            found = [{"pattern": others[(g + i) % len(others)], "evidence": {"by": "rule:test"}}]
            if placed < hot_count and i < -(-hot_count // games):
                found.append({"pattern": hot, "evidence": {"by": "rule:strobe-4016", "n": placed}})
                placed += 1
            for f in found:
                counts[f["pattern"]] = counts.get(f["pattern"], 0) + 1
            routines.append(
                {
                    "name": f"b{i % 4}_routine_{0x8000 + i:04X}",
                    "bank": f"prg{i % 4}",
                    "addr": 0x8000 + i,
                    "kind": "call",
                    "is": found,
                }
            )
        game_list.append(
            {
                "key": sha[:12],
                "name": f"Large Game {g}",
                "sha256": sha,
                "mapper": 1,
                "prg": 4,
                "chr": 0,
                "patterns": counts,
                "routine_list": routines,
            }
        )
    autopsy = {
        "note": "Written by scripts/board-autopsy.py (a generated large set).",
        "boarded_on": "2026-01-02",
        "patterns": copy.deepcopy(root["patterns"]),
        "totals": {"games": games, "named_routines": games * per_game},
        "games": game_list,
    }
    lessons = {
        "note": "Written by scripts/board-lessons.py (a generated large set).",
        "lessons": [
            {
                "key": f"lesson-{n}",
                "title": f"Lesson {n}",
                "kind": "cartridge",
                "description": "A generated lesson.",
                "game": game_list[n % games]["key"],
                "tree": f"lessons/lesson-{n}/",
                "patterns": {hot: n + 1, others[n]: 1},
            }
            for n in range(12)
        ],
    }
    return autopsy, lessons


@pytest.fixture
def large() -> Callable[..., Records]:
    """Build and parse a generated large record set."""

    def build(**kwargs: Any) -> Records:
        autopsy, lessons = make_large(**kwargs)
        return parse_records(dump(autopsy), dump(lessons))

    return build
