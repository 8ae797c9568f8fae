#!/usr/bin/env python3
"""Write the demo autopsy, lessons and lineage records in ``data/``.

The demo stands in for a real boarding run: a handful of made-up homebrew cartridges, the
routines the pattern rules named in them, and the lessons that measure them. It is seeded, so
running it twice writes the same bytes. It writes records only — no cartridge bytes: a game's
``sha256`` is the digest of a label, standing where the digest of a cartridge would.

Usage::

    python scripts/make-demo-records.py [--out DIR] [--seed N]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
from pathlib import Path
from typing import Any

# The pattern names and their one-line descriptions, shared with ``board-autopsy.py``.
PATTERNS: dict[str, str] = json.loads(
    (Path(__file__).resolve().parent / "autopsy-patterns.json").read_text(encoding="utf-8")
)

# Each rule names a pattern; ``reads``/``writes`` are the hardware addresses it looks for.
RULES: dict[str, dict[str, Any]] = {
    "bank-switch": {"by": "rule:mapper-write", "writes": ["$8000", "$C000", "$E000"]},
    "counting-spin": {"by": "rule:dex-bne-loop"},
    "frame-wait": {"by": "rule:nmi-counter-wait", "reads": ["frame_counter"]},
    "game-loop-in-nmi": {"by": "rule:nmi-calls-step"},
    "idle-spin": {"by": "rule:jmp-self"},
    "jump-engine": {"by": "rule:indexed-jump-table", "table_words": [8, 12, 16, 24]},
    "pad-poll": {"by": "rule:strobe-4016", "reads": ["$4016", "$4017"]},
    "palette-writer": {"by": "rule:ppuaddr-3f00", "writes": ["$2006", "$2007"]},
    "position-compare": {"by": "rule:coordinate-cmp"},
    "random-byte": {"by": "rule:lfsr-step"},
    "scroll-writer": {"by": "rule:ppuscroll-pair", "writes": ["$2005"]},
    "sound-driver": {"by": "rule:apu-stream", "writes": ["$4000", "$4004", "$4008", "$400C"]},
    "sprite-0-split": {"by": "rule:bit-2002-loop", "reads": ["$2002"]},
    "sprite-writer": {"by": "rule:oam-dma", "writes": ["$4014"]},
    "vram-drain": {"by": "rule:vram-queue-copy", "writes": ["$2006", "$2007"]},
}

GAMES: list[tuple[str, int, int, int]] = [
    # name, mapper, prg banks (16 KiB), chr banks (8 KiB)
    ("Lantern Drift", 0, 2, 1),
    ("Mole Courier", 1, 8, 4),
    ("Orbit Pickle", 2, 8, 0),
    ("Tidepool Tennis", 0, 1, 1),
    ("Cinder Vault", 4, 16, 16),
    ("Quill & Kettle", 66, 4, 4),
    ("Bramble Rally", 1, 4, 2),
]

LESSONS: list[tuple[str, str, str, str, list[str]]] = [
    # key, title, kind, game name, patterns it teaches
    (
        "jump",
        "A jump engine in twenty lines",
        "cartridge",
        "Cinder Vault",
        ["jump-engine", "game-loop-in-nmi"],
    ),
    (
        "pad",
        "Reading the pad, one bit at a time",
        "cartridge",
        "Tidepool Tennis",
        ["pad-poll", "frame-wait"],
    ),
    (
        "scroll",
        "Scrolling without tearing",
        "cartridge",
        "Orbit Pickle",
        ["scroll-writer", "vram-drain", "frame-wait"],
    ),
    (
        "split",
        "Two scrolls on one screen",
        "cartridge",
        "Bramble Rally",
        ["sprite-0-split", "scroll-writer"],
    ),
    (
        "chirp",
        "A sound driver you can read",
        "cartridge",
        "Mole Courier",
        ["sound-driver", "bank-switch"],
    ),
    (
        "dice",
        "Random bytes from a shift register",
        "cartridge",
        "Quill & Kettle",
        ["random-byte", "counting-spin"],
    ),
    (
        "oam",
        "Sprites through the DMA page",
        "exercise",
        "Lantern Drift",
        ["sprite-writer", "position-compare", "palette-writer"],
    ),
]

KINDS = ["call", "dispatch", "reset", "irq", "nmi"]


def digest(label: str) -> str:
    """The stand-in digest of a game: sha256 of its label (no cartridge bytes exist here)."""
    return hashlib.sha256(f"tmsite demo cartridge: {label}".encode()).hexdigest()


def make_routine(rng: random.Random, bank: int, addr: int, kind: str) -> dict[str, Any]:
    """One rule-named routine with one to three patterns and their evidence."""
    count = rng.choices([1, 2, 3], weights=[70, 25, 5])[0]
    names = rng.sample(sorted(PATTERNS), count)
    found = []
    for name in sorted(names):
        evidence: dict[str, Any] = {"by": RULES[name]["by"]}
        for field in ("reads", "writes"):
            if field in RULES[name]:
                evidence[field] = RULES[name][field][: rng.randint(1, len(RULES[name][field]))]
        if "table_words" in RULES[name]:
            evidence["table_words"] = rng.choice(RULES[name]["table_words"])
        evidence["site"] = addr + rng.randrange(2, 48)
        found.append({"pattern": name, "evidence": evidence})
    return {
        "name": f"b{bank}_routine_{addr:04X}",
        "bank": f"prg{bank}",
        "addr": addr,
        "kind": kind,
        "entered": rng.randint(1, 90_000),
        "is": found,
    }


def make_game(rng: random.Random, name: str, mapper: int, prg: int, chr_: int) -> dict[str, Any]:
    """A game with its counts, banks and the routines the rules named."""
    sha = digest(name)
    named = rng.randint(36, 64)
    fixed = prg - 1  # the bank mapped at $C000 when the mapper fixes the last one
    routines: list[dict[str, Any]] = []
    seen: set[tuple[int, int]] = set()
    specials = [
        ("reset", fixed, 0xC000 + rng.randrange(0, 0x100)),
        ("nmi", fixed, 0xC100 + rng.randrange(0, 0x400)),
    ]
    if rng.random() < 0.5:
        specials.append(("irq", fixed, 0xC600 + rng.randrange(0, 0x200)))
    for kind, bank, addr in specials:
        seen.add((bank, addr))
        routines.append(make_routine(rng, bank, addr, kind))
    while len(routines) < named:
        bank = rng.randrange(prg)
        base = 0xC000 if bank == fixed else 0x8000
        addr = base + rng.randrange(0, 0x3FF0)
        if (bank, addr) in seen:
            continue
        seen.add((bank, addr))
        kind = rng.choices(["call", "dispatch"], weights=[85, 15])[0]
        routines.append(make_routine(rng, bank, addr, kind))
    routines.sort(key=lambda r: (int(r["bank"][3:]), r["addr"]))
    patterns: dict[str, int] = {}
    for routine in routines:
        for found in routine["is"]:
            patterns[found["pattern"]] = patterns.get(found["pattern"], 0) + 1
    by_kind = {kind: sum(1 for r in routines if r["kind"] == kind) for kind in KINDS}
    by_kind["call"] += rng.randint(40, 260)  # routines no rule named are counted, not listed
    banks = []
    for bank in range(prg):
        of = 16384
        executed = rng.randint(of // 10, of * 7 // 10)
        sites = sum(1 for r in routines if r["bank"] == f"prg{bank}")
        banks.append({"bank": f"prg{bank}", "executed": executed, "of": of, "sites": sites})
    frames = rng.randint(3_000, 36_000)
    return {
        "key": sha[:12],
        "name": name,
        "sha256": sha,
        "mapper": mapper,
        "prg": prg,
        "chr": chr_,
        "executed": sum(b["executed"] for b in banks),
        "frames": frames,
        "instructions": frames * rng.randint(2_500, 9_000),
        "steps": rng.randint(4, 12),
        "paths": rng.randint(20, 400),
        "banks": banks,
        "routines": by_kind,
        "patterns": dict(sorted(patterns.items())),
        "tables": rng.randint(4, 40),
        "table_words": rng.randint(40, 900),
        "arrays": rng.randint(6, 60),
        "variables": rng.randint(40, 400),
        "routine_list": routines,
    }


def make_lesson(
    rng: random.Random, spec: tuple[str, str, str, str, list[str]], games: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """A lesson: a small cartridge source tree that measures one game."""
    key, title, kind, game_name, taught = spec
    game = games[game_name]
    patterns = {name: rng.randint(1, 4) for name in sorted(taught)}
    return {
        "key": key,
        "title": title,
        "kind": kind,
        "description": (
            f"Builds a small cartridge that shows {', '.join(sorted(taught))} the way "
            f"{game_name} does it, and measures itself against that game."
        ),
        "game": game["key"],
        "patterns": patterns,
        "tree": f"lessons/{key}/",
        "instructions": rng.randint(80, 900),
    }


def build(seed: int) -> dict[str, dict[str, Any]]:
    """The three records, from the seed alone."""
    rng = random.Random(seed)
    games = [make_game(rng, *spec) for spec in GAMES]
    by_name = {g["name"]: g for g in games}
    lessons = [make_lesson(rng, spec, by_name) for spec in LESSONS]
    named = sum(len(g["routine_list"]) for g in games)
    autopsy = {
        "note": "Written by scripts/board-autopsy.py from the autopsy models; do not edit by hand.",
        "boarded_on": "2026-11-12",
        "steps": ["trace", "listing", "flow", "rules"],
        "patterns": PATTERNS,
        "totals": {
            "games": len(games),
            "routines": sum(sum(g["routines"].values()) for g in games),
            "named_routines": named,
            "instances": sum(len(r["is"]) for g in games for r in g["routine_list"]),
        },
        "games": games,
    }
    lesson_record = {
        "note": "Written by scripts/board-lessons.py from the lesson builds; do not edit by hand.",
        "boarded_on": "2026-11-12",
        "lessons": lessons,
    }
    lineage = {
        "note": "Where a build chain leaves the box. Every path named here is a tracked script.",
        "offbox": {
            "autopsy-models": {
                "what": "One model per game: the routines, tables and rule hits of a traced run.",
                "why": "They are made next to the cartridges they describe, off the box.",
                "generated_by": ["scripts/autopsy-models.py"],
                "input_of": ["scripts/board-autopsy.py"],
            },
            "cartridges": {
                "what": "The cartridge images the autopsy traces.",
                "why": "Cartridge bytes are never kept in any repository or served.",
                "generated_by": [],
                "input_of": ["scripts/autopsy-models.py"],
            },
            "lesson-builds": {
                "what": "The assembled lesson cartridges and their measurement logs.",
                "why": "Built images are cartridge bytes; only their measurements come back.",
                "generated_by": [],
                "input_of": ["scripts/board-lessons.py"],
            },
        },
    }
    return {"autopsy.json": autopsy, "lessons.json": lesson_record, "lineage.json": lineage}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "data")
    parser.add_argument("--seed", type=int, default=1984)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, record in build(args.seed).items():
        text = json.dumps(record, indent=1, ensure_ascii=False) + "\n"
        (args.out / name).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
