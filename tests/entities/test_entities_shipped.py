"""The records the site publishes: valid, consistent, free of cartridge bytes, reproducible."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tmsite.entities.loaders import BYTE_FIELDS, Records, parse_lineage

pytestmark = pytest.mark.spec("ENT", "OFFBOX")

ROOT = Path(__file__).resolve().parents[2]

FIFTEEN = {
    "bank-switch", "counting-spin", "frame-wait", "game-loop-in-nmi", "idle-spin",
    "jump-engine", "pad-poll", "palette-writer", "position-compare", "random-byte",
    "scroll-writer", "sound-driver", "sprite-0-split", "sprite-writer", "vram-drain",
}  # fmt: skip


def test_shipped_records_parse_with_their_writers(shipped: Records) -> None:
    assert shipped.autopsy_writer == "scripts/board-autopsy.py"
    assert shipped.lessons_writer == "scripts/board-lessons.py"
    assert (ROOT / shipped.autopsy_writer).is_file()
    assert (ROOT / shipped.lessons_writer).is_file()
    assert {p.key for p in shipped.patterns} == FIFTEEN
    assert 6 <= len(shipped.games) <= 8
    named = sum(len(g.routines) for g in shipped.games)
    assert 200 <= named <= 600
    assert shipped.totals["named_routines"] == named


def test_game_pattern_counts_are_the_routines_that_show_them(shipped: Records) -> None:
    for game in shipped.games:
        counted = Counter(i.pattern for r in game.routines for i in r.instances)
        assert game.patterns == dict(counted), game.key
        assert game.routines, game.key
        kinds = {r.kind for r in game.routines}
        assert {"reset", "nmi"} <= kinds


def test_lessons_measure_games_of_the_record(shipped: Records) -> None:
    games = {g.key for g in shipped.games}
    for lesson in shipped.lessons:
        assert lesson.game in games
        assert lesson.tree == f"lessons/{lesson.key}/"
        assert lesson.patterns


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _keys(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [k for key, v in value.items() for k in (key, *_keys(v))]
    if isinstance(value, list):
        return [k for v in value for k in _keys(v)]
    return []


@pytest.mark.parametrize("name", ["autopsy.json", "lessons.json", "lineage.json"])
def test_no_cartridge_bytes_anywhere(name: str) -> None:
    """No field that would hold an image, and no string long enough to be one."""
    value = json.loads((ROOT / "data" / name).read_text(encoding="utf-8"))
    assert not BYTE_FIELDS & set(_keys(value))
    assert max(len(s) for s in _strings(value)) <= 300


def test_lineage_nodes_name_scripts_of_the_checkout() -> None:
    nodes = parse_lineage((ROOT / "data/lineage.json").read_bytes())
    names = {n.name for n in nodes}
    assert {"autopsy-models", "cartridges"} <= names
    paths = [p for n in nodes for p in (*n.generated_by, *n.input_of)]
    assert "scripts/board-autopsy.py" in paths
    for path in paths:
        assert (ROOT / path).is_file(), path


def test_the_generator_writes_exactly_the_committed_records(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location(
        "make_demo", ROOT / "scripts/make-demo-records.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, record in module.build(1984).items():
        written = json.dumps(record, indent=1, ensure_ascii=False) + "\n"
        assert written == (ROOT / "data" / name).read_text(encoding="utf-8"), name
