#!/usr/bin/env python3
"""Write ``data/lessons.json`` from the lesson trees and their measurement logs.

A lesson is a cartridge source tree under ``lessons/<key>/`` with a ``lesson.json`` (title,
kind, description, the game it measures). Its build runs off the box; the build leaves a
``<key>.measure.json`` (pattern counts, instruction count) that this script joins in. Only the
measurements come back — never the built cartridge.

Usage::

    python scripts/board-lessons.py LESSONS_DIR MEASURE_DIR [--out data/lessons.json]
"""

from __future__ import annotations

import argparse
import datetime
import json
from pathlib import Path
from typing import Any


def board_lesson(tree: Path, measures: Path, root: Path) -> dict[str, Any]:
    """One ``lessons[]`` entry from one lesson tree and its measurement."""
    meta = json.loads((tree / "lesson.json").read_text(encoding="utf-8"))
    measured = json.loads((measures / f"{tree.name}.measure.json").read_text(encoding="utf-8"))
    return {
        "key": tree.name,
        "title": meta["title"],
        "kind": meta.get("kind", "cartridge"),
        "description": meta["description"],
        "game": meta["game"],
        "patterns": dict(sorted(measured["patterns"].items())),
        "tree": f"{tree.relative_to(root).as_posix()}/",
        "instructions": measured.get("instructions", 0),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lessons", type=Path)
    parser.add_argument("measures", type=Path)
    parser.add_argument("--out", type=Path, default=Path("data/lessons.json"))
    args = parser.parse_args()
    root = args.lessons.resolve().parent
    trees = sorted(p.parent.resolve() for p in args.lessons.glob("*/lesson.json"))
    record = {
        "note": "Written by scripts/board-lessons.py from the lesson builds; do not edit by hand.",
        "boarded_on": datetime.date.today().isoformat(),
        "lessons": [board_lesson(tree, args.measures, root) for tree in trees],
    }
    args.out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
