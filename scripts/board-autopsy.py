#!/usr/bin/env python3
"""Write ``data/autopsy.json`` from the autopsy models (see ``scripts/autopsy-models.py``).

Each model names the routines its trace entered and the rule hits inside them. A routine is
listed when at least one rule named it; the rule's pattern and evidence go in its ``is[]``, and
a game's ``patterns`` counts the listed routines per pattern.

Usage::

    python scripts/board-autopsy.py MODEL_DIR [--out data/autopsy.json] [--on YYYY-MM-DD]
"""

from __future__ import annotations

import argparse
import datetime
import json
from collections import Counter
from pathlib import Path
from typing import Any

KINDS = ("call", "dispatch", "reset", "irq", "nmi")
PATTERN_FILE = Path(__file__).resolve().parent / "autopsy-patterns.json"


def board_game(model: dict[str, Any]) -> dict[str, Any]:
    """One ``games[]`` entry from one model."""
    hits: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for hit in model.get("rule_hits", []):
        evidence = {"by": hit["rule"], **hit.get("evidence", {})}
        hits.setdefault((hit["bank"], hit["addr"]), []).append(
            {"pattern": hit["pattern"], "evidence": evidence}
        )
    listed = []
    for routine in model["routines"]:
        found = hits.get((routine["bank"], routine["addr"]))
        if not found:
            continue
        listed.append(
            {
                "name": f"b{routine['bank']}_routine_{routine['addr']:04X}",
                "bank": f"prg{routine['bank']}",
                "addr": routine["addr"],
                "kind": routine["kind"],
                "entered": routine.get("entered", 0),
                "is": sorted(found, key=lambda f: f["pattern"]),
            }
        )
    patterns = Counter(f["pattern"] for r in listed for f in r["is"])
    kinds = Counter(r["kind"] for r in model["routines"])
    return {
        "key": model["key"],
        "name": model["name"],
        "sha256": model["sha256"],
        "mapper": model["mapper"],
        "prg": model["prg"],
        "chr": model["chr"],
        "frames": model["frames"],
        "instructions": model["instructions"],
        "banks": model.get("banks", []),
        "routines": {kind: kinds.get(kind, 0) for kind in KINDS},
        "patterns": dict(sorted(patterns.items())),
        "routine_list": listed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", type=Path)
    parser.add_argument("--out", type=Path, default=Path("data/autopsy.json"))
    parser.add_argument("--on", default=datetime.date.today().isoformat())
    args = parser.parse_args()
    models = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(args.models.glob("*.json"))]
    games = sorted((board_game(m) for m in models), key=lambda g: g["name"])
    record = {
        "note": "Written by scripts/board-autopsy.py from the autopsy models; do not edit by hand.",
        "boarded_on": args.on,
        "patterns": json.loads(PATTERN_FILE.read_text(encoding="utf-8")),
        "totals": {
            "games": len(games),
            "routines": sum(sum(g["routines"].values()) for g in games),
            "named_routines": sum(len(g["routine_list"]) for g in games),
            "instances": sum(len(r["is"]) for g in games for r in g["routine_list"]),
        },
        "games": games,
    }
    args.out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
