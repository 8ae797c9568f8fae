"""A real checkout on disk for the namespace tests, with secrets beside and inside its roots."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tmsite.core.types import Content

HOST = "testbox"
SECRET = "NS-SECRET-7f3a9c"
NOTES = "one\ntwo\nthree\n"
BLOB = bytes(range(256)) * 3


def build_checkout(root: Path) -> Path:
    """A small checkout: served roots with real files, and secrets beside and inside them."""
    checkout = root / "checkout"
    docs = checkout / "docs"
    (docs / "guide").mkdir(parents=True)
    (docs / "mcp.md").write_text("# Start here\n")
    (docs / "notes.md").write_text(NOTES)
    (docs / "record.json").write_text(json.dumps({"a": [1, {"b": 2}]}))
    (docs / "blob.bin").write_bytes(BLOB)
    (docs / "big.txt").write_bytes(b"x" * (300 * 1024))
    (docs / "guide" / "deep.md").write_text("# deep\n")
    (docs / ".env").write_text(SECRET)
    (docs / ".netrc").write_text(SECRET)
    (checkout / "data").mkdir()
    (checkout / "data" / "pieces.json").write_text("[]")
    (checkout / "notes").mkdir()
    (checkout / "private").mkdir()
    (checkout / "private" / "key.txt").write_text(SECRET)
    (docs / "escape.txt").symlink_to(checkout / "private" / "key.txt")
    return checkout


def body_of(content: Content) -> dict[str, Any]:
    """The JSON object a listing, stat or link page answers."""
    assert isinstance(content.body, dict), content.body
    return content.body
