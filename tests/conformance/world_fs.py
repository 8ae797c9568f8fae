"""The fs world: the canonical scenario as files of a checkout, and secrets beside it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conformance.worlds import HOST, NOTES, RECORD, SECRET, World
from tmsite.mounts.fs.mount import FsMount


def world(tmp: Path) -> World:
    checkout = tmp / "checkout"
    alpha = checkout / "docs" / "alpha"
    (alpha / "beta").mkdir(parents=True)
    (alpha / "beta" / "deep.md").write_text("# deep\n")
    (alpha / "notes.md").write_text(NOTES)
    (alpha / "record.json").write_text(json.dumps(RECORD))
    (checkout / "data").mkdir()
    (checkout / "private").mkdir()
    (checkout / "private" / "key.txt").write_text(SECRET)
    (checkout / ".env").write_text(SECRET)
    (checkout / "docs" / ".env").write_text(SECRET)
    (checkout / "docs" / "alpha" / "escape.md").symlink_to(checkout / "private" / "key.txt")
    base = f"tm://{HOST}/fs/docs/alpha/"
    return World(
        mount=FsMount(HOST, checkout, ["docs", "data"]),
        collection=base,
        leaf=base + "notes.md",
        typo=base + "notez.md",
        json_leaf=base + "record.json",
        hostile={
            base + "../../private/key.txt": "out-of-root",
            base + "%2e%2e/%2e%2e/private/key.txt": "out-of-root",
            base + "..%2f..%2fprivate/key.txt": "out-of-root",
            base + "..%5c..%5cprivate%5ckey.txt": "out-of-root",
            base + "escape.md": "out-of-root",
            f"tm://{HOST}/fs/private/key.txt": "out-of-root",
            f"tm://{HOST}/fs/docs/.env": "denied",
            f"tm://{HOST}/fs/.env": "out-of-root",
            base + "notes.md%00.txt": "out-of-root",
        },
        secret=SECRET,
        indexed=True,
    )
