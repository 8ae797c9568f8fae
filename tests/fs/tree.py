"""A hostile checkout on a real filesystem: secrets outside the roots and every way toward them."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from tmsite.core.types import Content
from tmsite.mounts.fs.mount import FsMount
from tmsite.mounts.namespace import Namespace

HOST = "testbox"
SECRET = "FS-SECRET-d41d8cd9"
NOTES = "one\ntwo\nthree\nfour\n"
RECORD = {"a": [1, {"b": "two"}], "c~d": {"e/f": 3}}
DENIED_FILES = ("id_rsa", "x.pem", ".git-credentials", "a.local.md", "db.sqlite3", ".env")
#: File names that are hard to put in a URI, with the bytes each holds.
AWKWARD = {
    "100% #1 ?.md": b"percent hash question\n",
    "with space.txt": b"spaces\n",
    "[x].md": b"brackets\n",
    os.fsdecode(b"caf\xe9-latin1.txt"): b"not utf-8 name\n",
    "日本語.md": "日本語\n".encode(),
}


@dataclass
class Box:
    checkout: Path
    outside: Path
    ns: Namespace
    mount: FsMount

    def uri(self, tail: str) -> str:
        return f"tm://{HOST}/fs/{tail}"

    def read(self, uri: str) -> Content:
        return self.ns.read(uri)

    def body(self, uri: str) -> dict[str, Any]:
        body = self.ns.read(uri).body
        assert isinstance(body, dict)
        return body


def build(tmp: Path) -> Box:
    outside = tmp / "outside"
    outside.mkdir()
    (outside / "payload.txt").write_text(SECRET)
    (outside / "README").write_text(SECRET)
    checkout = tmp / "checkout"
    docs = checkout / "docs"
    deep = docs / "sub" / "deeper" / "deepest"
    deep.mkdir(parents=True)
    (checkout / "data").mkdir()
    (checkout / "private").mkdir()
    (checkout / "private" / "key.txt").write_text(SECRET)
    (checkout / "docs-private").mkdir()
    (checkout / "docs-private" / "secret.md").write_text(SECRET)
    (checkout / "docs-private" / "plain.md").write_text(SECRET)
    (checkout / ".env").write_text(SECRET)

    (docs / "notes.md").write_text(NOTES)
    (docs / "record.json").write_text(json.dumps(RECORD))
    (docs / ".gitignore").write_text("*.pyc\n")
    (docs / "sub" / "deeper" / "deep.md").write_text("# deep\n")
    for name in DENIED_FILES:
        (docs / name).write_text(SECRET)
    (docs / ".git").mkdir()
    (docs / ".git" / "config").write_text(SECRET)
    (docs / "__pycache__").mkdir()
    (docs / "__pycache__" / "m.cpython-311.pyc").write_text(SECRET)
    for name, data in AWKWARD.items():
        (docs / name).write_bytes(data)

    secret = outside / "payload.txt"
    (docs / "out1.txt").symlink_to(secret)
    (docs / "sub" / "out2.txt").symlink_to(secret)
    (docs / "sub" / "deeper" / "out3.txt").symlink_to(secret)
    (deep / "out4.txt").symlink_to(os.path.relpath(secret, deep))
    (docs / "outdir").symlink_to(outside, target_is_directory=True)
    (docs / "chain1.txt").symlink_to("chain2.txt")
    (docs / "chain2.txt").symlink_to("sub/chain3.txt")
    (docs / "sub" / "chain3.txt").symlink_to(os.path.relpath(secret, docs / "sub"))
    (docs / "inside.md").symlink_to("notes.md")
    (docs / "inside-dir").symlink_to("sub", target_is_directory=True)
    (docs / "alias.txt").symlink_to(".git-credentials")
    (docs / "sibling").symlink_to("../docs-private", target_is_directory=True)
    (docs / "devnull").symlink_to("/dev/null")
    (docs / "zero").symlink_to("/dev/zero")
    (docs / "root").symlink_to("/", target_is_directory=True)
    os.mkfifo(docs / "pipe")
    mount = FsMount(HOST, checkout, ["docs", "data"])
    return Box(checkout, outside, Namespace(HOST, {"fs": mount}), mount)


T = TypeVar("T")


def within(seconds: float, action: Callable[[], T]) -> T:
    """Run ``action`` in a thread and fail if it has not returned in ``seconds`` (never hang)."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = action()
        except BaseException as exc:  # handed back to the caller below
            outcome["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still running after {seconds} s: it blocked"
    if "error" in outcome:
        raise outcome["error"]
    value: T = outcome["value"]
    return value
