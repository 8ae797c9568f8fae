"""The trail world: two trail files in a checkout's ``notes/trails/``.

The collection is ``trail/`` (trails only: no collection below another); the leaf is a trail,
read as ``application/vnd.tm.trail+json``. The trail index lives in the database.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conformance.worlds import HOST, SECRET, World
from tmsite.core.types import vnd
from tmsite.mounts.fs.mount import FsMount
from tmsite.mounts.trail.mount import TrailMount


def world(tmp: Path) -> World:
    checkout = tmp / "checkout"
    trails = checkout / "notes" / "trails"
    trails.mkdir(parents=True)
    (checkout / "private").mkdir()
    (checkout / "private" / "key.json").write_text(SECRET)
    for name, title in (("first-steps", "First steps"), ("second", "Second")):
        (trails / f"{name}.json").write_text(
            json.dumps(
                {
                    "title": title,
                    "description": "A walk.",
                    "steps": [
                        {"uri": f"tm://{HOST}/", "note": "the root"},
                        {"uri": f"tm://{HOST}/trail/", "note": "the trails"},
                    ],
                }
            )
        )
    (trails / "escape.json").symlink_to(checkout / "private" / "key.json")
    base = f"tm://{HOST}/trail/"
    return World(
        mount=TrailMount(HOST, checkout),
        others=[FsMount(HOST, checkout, ["notes"])],  # alternate: the file a trail is read from
        collection=base,
        leaf=base + "first-steps",
        typo=base + "first-stepz",
        hostile={
            base + "..%2f..%2fprivate%2fkey": "not-found",
            base + "escape": "not-found",
            base + "first-steps%00": "not-found",
        },
        secret=SECRET,
        first_child=None,
        child_names=("first-steps", "second"),
        leaf_text=None,
        leaf_type=vnd("trail"),
        leaf_pointer=("/title", "First steps"),
        sub_collection=None,
        completion=("name", "se", ["second"]),
        indexed=True,
    )


world.needs_db = True  # type: ignore[attr-defined]
