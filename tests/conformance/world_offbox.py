"""The offbox world: a lineage record with three nodes in a checkout.

The collection is ``offbox/`` (nodes only: the mount has no collection below another); the
leaf is a node, read as ``application/vnd.tm.offbox+json``.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conformance.worlds import HOST, World
from tests.gitstore.builder import Builder
from tmsite.core.types import vnd
from tmsite.mounts.git.mount import GitMount
from tmsite.mounts.offbox.mount import OffboxMount

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
    # the scripts the nodes link to, committed in the checkout's repository
    b = Builder.init(str(tmp / "tmsite"))
    scripts = {f"scripts/{name}": b"print()\n" for name in ("make-models.py", "board.py")}
    b.set_ref("refs/heads/main", b.commit("scripts", scripts, when=0))
    b.repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
    b.repo.close()
    base = f"tm://{HOST}/offbox/"
    return World(
        mount=OffboxMount(HOST, checkout, "tmsite"),
        others=[GitMount(HOST, {"tmsite": tmp / "tmsite"})],
        collection=base,
        leaf=base + "models",
        typo=base + "modals",
        hostile={
            base + "..%2fdata/lineage.json": "not-found",
            base + "%2e%2e/": "not-found",
            base + "models%00": "not-found",
        },
        first_child=None,
        child_names=("builds", "cartridges", "models"),
        leaf_text=None,
        leaf_type=vnd("offbox"),
        leaf_pointer=("/exposed", False),
        sub_collection=None,
        completion=("name", "ca", ["cartridges"]),
    )
