"""One world per mount kind: the canonical scenario, built for real in that mount.

The canonical scenario every world lays out (names may differ where a mount has its own):

    <collection>/            a collection with both kinds of child
    ├── beta/                a sub-collection
    │   └── deep.md
    ├── notes.md             a text leaf: "one\\ntwo\\nthree\\n"
    └── record.json          {"a": [1, {"b": 2}]}

plus, where the mount can hold it, a secret outside the served roots that no answer may show.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tmsite.mounts.base import Mount
from tmsite.mounts.fs import FsMount
from tmsite.mounts.memory import MemoryMount

HOST = "test"
NOTES = "one\ntwo\nthree\n"
RECORD = {"a": [1, {"b": 2}]}
SECRET = "TOP-SECRET-0xC0FFEE"


@dataclass
class World:
    mount: Mount
    collection: str
    leaf: str
    typo: str
    json_leaf: str | None = None
    hostile: list[str] = field(default_factory=list)
    secret: str | None = None


def fs_world(tmp: Path) -> World:
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
        hostile=[
            base + "../../private/key.txt",
            base + "%2e%2e/%2e%2e/private/key.txt",
            base + "..%2f..%2fprivate/key.txt",
            base + "..%5c..%5cprivate%5ckey.txt",
            base + "escape.md",
            f"tm://{HOST}/fs/private/key.txt",
            f"tm://{HOST}/fs/docs/.env",
            f"tm://{HOST}/fs/.env",
            base + "notes.md%00.txt",
        ],
        secret=SECRET,
    )


def memory_world(tmp: Path) -> World:
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
        hostile=[base + "../alpha/notes.md", base + "%2e%2e/alpha/notes.md"],
    )


WORLDS: dict[str, Callable[[Path], World]] = {
    "fs": fs_world,
    "memory": memory_world,
}
