"""The entity world: the shipped autopsy records in the tables.

The scenario as entities: ``entity/game/<key>/`` holds the sub-collection ``routine/``; the
collection is a game's ``routine/`` (leaves only, in record order); the leaf is a routine,
read as ``application/vnd.tm.routine+json``. Hostile keys are refused ``not-found`` before any
query.
"""

from __future__ import annotations

from pathlib import Path

from tests.conformance.worlds import HOST, World
from tmsite.core.types import vnd
from tmsite.entities.loaders import fill, read_checkout
from tmsite.mounts.entity.mount import EntityMount
from tmsite.mounts.fs.mount import FsMount

ROOT = Path(__file__).resolve().parents[2]


def world(tmp: Path) -> World:
    records = read_checkout(ROOT)
    fill(records)
    game = records.games[0]
    routines = [r.key for r in game.routines]
    leaf_key = routines[0]
    base = f"tm://{HOST}/entity/game/{game.key}/"
    collection = base + "routine/"
    return World(
        mount=EntityMount(HOST, None),
        others=[FsMount(HOST, ROOT, ["data"])],  # tm:data points into the records read
        collection=collection,
        leaf=collection + leaf_key,
        typo=collection + leaf_key + "0",
        # keys are refused by their shape, not-found with the shape and the nearest keys
        hostile={
            f"tm://{HOST}/entity/pattern/pad-poll'%20OR%201=1--": "not-found",
            f"tm://{HOST}/entity/pattern/%2e%2e": "not-found",
            f"tm://{HOST}/entity/pattern/pad-poll%00": "not-found",
            f"tm://{HOST}/entity/game/{game.key[:-1]}%D9%A1": "not-found",
            f"tm://{HOST}/entity/game/{game.key}/routine/b1_000-8000": "not-found",
            f"tm://{HOST}/entity/game/{game.key}/routine/b99999999999999999999-8000": "not-found",
            f"tm://{HOST}/entity/lesson/" + "a" * 300: "not-found",
            base + "routine/../../../": "not-found",
        },
        first_child=None,
        child_names=tuple(routines[:3]),
        leaf_text=None,
        leaf_type=vnd("routine"),
        leaf_pointer=("/fields/name", game.routines[0].name),
        sub_parent=base,
        sub_collection="routine/",
        completion=("key", "pad-", ["pad-poll"]),
        indexed=True,
    )


world.needs_db = True  # type: ignore[attr-defined]
