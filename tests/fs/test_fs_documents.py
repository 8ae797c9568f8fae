"""What the fs mount offers the search index: the files a read serves, nothing denied.

Spec: SRCH1.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tmsite.core.parts import READ_CAP
from tmsite.core.paths import DEFAULT_DENY, denied_name
from tmsite.mounts.fs.mount import FsMount

pytestmark = pytest.mark.spec("SRCH1", "FS")

SECRET = "WORD-NEVER-INDEXED"


def denied_names() -> list[str]:
    """One name for every default deny pattern (``*`` as a letter)."""
    return [p.replace("*", "a") for p in DEFAULT_DENY if not p.startswith("!")]


def named_back() -> list[str]:
    """The names the defaults deny and then name back (``.env.example``)."""
    return [p.removeprefix("!") for p in DEFAULT_DENY if p.startswith("!")]


def test_every_denied_name_redacted_or_outside_never_enters(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    docs = checkout / "docs"
    docs.mkdir(parents=True)
    (docs / "plain.md").write_text("# Plain\nsome words\n")
    (docs / ".gitignore").write_text("var/\n")
    for name in named_back():
        (docs / name).write_text("KEY=\n")
    (checkout / "private").mkdir()
    (checkout / "private" / "outside.md").write_text(SECRET)
    for index, name in enumerate(denied_names()):
        (docs / name).write_text(SECRET)  # a denied file
        denied_dir = docs / f"sub{index}" / name  # a denied directory, a plain file in it
        denied_dir.mkdir(parents=True)
        (denied_dir / "inside.md").write_text(SECRET)
    (docs / "escape.md").symlink_to(checkout / "private" / "outside.md")
    (docs / "escape-dir").symlink_to(checkout / "private", target_is_directory=True)
    mount = FsMount("test", checkout, ["docs"])

    documents = {d.uri: d for d in mount.documents()}

    names = sorted(uri.rsplit("/fs/docs/", 1)[1] for uri in documents)
    assert names == sorted([".gitignore", "plain.md", *named_back()])
    assert all(SECRET not in d.text and SECRET not in d.title for d in documents.values())
    assert all(denied_name(name) for name in denied_names())
    assert named_back() and not any(denied_name(name) for name in [".gitignore", *named_back()])


def test_binary_and_over_cap_files_are_offered_by_name_only(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "chip.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    (docs / "huge.txt").write_text("word " * (READ_CAP // 4))
    (docs / "small.txt").write_text("one\ntwo\n")
    mount = FsMount("test", tmp_path, ["docs"])

    documents = {d.title: d for d in mount.documents()}

    assert documents["chip.png"].text == "" and not documents["chip.png"].lines
    assert documents["huge.txt"].text == "" and not documents["huge.txt"].lines
    assert documents["small.txt"].text == "one\ntwo\n" and documents["small.txt"].lines
    assert documents["chip.png"].mime_type == "image/png"


def test_the_stamp_changes_with_the_file(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    leaf = docs / "a.md"
    leaf.write_text("one\n")
    mount = FsMount("test", tmp_path, ["docs"])
    before = next(mount.documents()).stamp
    leaf.write_text("one, and two\n")
    assert next(mount.documents()).stamp != before
