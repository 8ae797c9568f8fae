#!/usr/bin/env python3
"""Write one autopsy model per cartridge: the off-box step before ``board-autopsy.py``.

Runs next to the cartridges (which never enter a repository). For each ``<name>.nes`` it reads
the iNES header for the mapper and bank counts, takes the cartridge's sha256, and joins the
trace summary the emulator left beside it (``<name>.trace.json``: frames, instructions, the
routines it entered and the rule hits). The model it writes holds counts, addresses and rule
evidence only — never cartridge bytes.

Usage::

    python scripts/autopsy-models.py CARTRIDGE_DIR MODEL_DIR
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path
from typing import Any

INES_MAGIC = b"NES\x1a"


def header(data: bytes) -> dict[str, int]:
    """Mapper number and PRG/CHR bank counts from an iNES header."""
    if data[:4] != INES_MAGIC or len(data) < 16:
        raise ValueError("not an iNES image")
    return {"prg": data[4], "chr": data[5], "mapper": (data[6] >> 4) | (data[7] & 0xF0)}


def model(cartridge: Path) -> dict[str, Any]:
    """The model of one cartridge: header fields, digest and the trace summary."""
    data = cartridge.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    trace = json.loads(cartridge.with_suffix(".trace.json").read_text(encoding="utf-8"))
    routines = sorted(trace.get("routines", []), key=lambda r: (r["bank"], r["addr"]))
    return {
        "key": sha[:12],
        "name": trace.get("name", cartridge.stem),
        "sha256": sha,
        **header(data),
        "frames": trace["frames"],
        "instructions": trace["instructions"],
        "banks": trace.get("banks", []),
        "routines": routines,
        "rule_hits": trace.get("rule_hits", []),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cartridges", type=Path)
    parser.add_argument("models", type=Path)
    args = parser.parse_args()
    args.models.mkdir(parents=True, exist_ok=True)
    for cartridge in sorted(args.cartridges.glob("*.nes")):
        result = model(cartridge)
        out = args.models / f"{result['key']}.json"
        out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
