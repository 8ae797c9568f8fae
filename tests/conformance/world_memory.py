"""The memory world: the canonical scenario as a dict."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conformance.worlds import HOST, NOTES, RECORD, World
from tmsite.mounts.memory.mount import MemoryMount


def world(tmp: Path) -> World:
    tree = {
        "alpha": {
            "beta": {"deep.md": "# deep\n"},
            "notes.md": NOTES,
            "record.json": json.dumps(RECORD),
        }
    }
    base = f"tm://{HOST}/memory/alpha/"
    return World(
        mount=MemoryMount(HOST, tree),
        collection=base,
        leaf=base + "notes.md",
        typo=base + "notez.md",
        json_leaf=base + "record.json",
        hostile={
            base + "../alpha/notes.md": "out-of-root",
            base + "%2e%2e/alpha/notes.md": "out-of-root",
        },
    )
