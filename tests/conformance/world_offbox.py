"""The offbox world: a lineage record with three nodes in a checkout.

The collection is ``offbox/`` (nodes only: the mount has no collection below another); the
leaf is a node, read as ``application/vnd.tm.offbox+json``.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conformance.worlds import HOST, World
from tmsite.mounts.offbox import OffboxMount
from tmsite.mounts.types import vnd

LINEAGE = {
    "note": "Where a build chain leaves the box.",
    "offbox": {
        "models": {
            "what": "Models made beside the cartridges.",
            "why": "Made off the box.",
            "generated_by": ["scripts/make-models.py"],
            "input_of": ["scripts/board.py"],
        },
        "cartridges": {
            "what": "Cartridge images.",
            "why": "Never kept in any repository.",
            "input_of": ["scripts/make-models.py"],
        },
        "builds": {"what": "Built images.", "why": "They are cartridge bytes."},
    },
}


def world(tmp: Path) -> World:
    checkout = tmp / "checkout"
    (checkout / "data").mkdir(parents=True)
    (checkout / "data" / "lineage.json").write_text(json.dumps(LINEAGE))
    base = f"tm://{HOST}/offbox/"
    return World(
        mount=OffboxMount(HOST, checkout, "tmsite"),
        collection=base,
        leaf=base + "models",
        typo=base + "modals",
        hostile=[base + "..%2fdata/lineage.json", base + "%2e%2e/", base + "models%00"],
        first_child=None,
        child_names=("builds", "cartridges", "models"),
        leaf_text=None,
        leaf_type=vnd("offbox"),
        leaf_pointer=("/exposed", False),
        sub_collection=None,
        completion=("name", "ca", ["cartridges"]),
    )
