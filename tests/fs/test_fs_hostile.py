"""The fs mount under hostile input: every way out of a root is refused, and nothing leaks."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.fs.tree import DENIED_FILES, HOST, NOTES, SECRET, Box, within
from tmsite.core.errors import Denied, NotFound, OutOfRoot, Refusal
from tmsite.core.parts import to_text
from tmsite.core.uri import parse

pytestmark = pytest.mark.spec("FS", "RJ1")

ROOTS = [f"tm://{HOST}/fs/docs/", f"tm://{HOST}/fs/data/"]
DOCS = f"tm://{HOST}/fs/docs/"


def refusal(box: Box, tail: str) -> Refusal:
    uri = box.uri(tail)

    def attempt() -> None:
        box.read(uri)

    with pytest.raises(Refusal) as caught:
        within(5, attempt)
    answer = caught.value
    assert SECRET not in json.dumps(answer.data) and SECRET not in answer.message
    assert answer.data["uri"] == str(parse(uri))
    return answer


OUT_OF_ROOT = [
    # dot segments, raw and encoded
    "docs/../private/key.txt",
    "docs/./notes.md",
    "../private/key.txt",
    "docs/%2e%2e/private/key.txt",
    "docs/%2E%2E/%2E%2E/outside/payload.txt",
    "docs/.%2e/private/key.txt",
    "docs/%2e/notes.md",
    # separators smuggled inside a segment
    "docs/..%2f..%2fprivate%2fkey.txt",
    "docs/..%2F..%2Foutside%2Fpayload.txt",
    "docs%2f..%2fprivate/key.txt",
    "docs/..%5c..%5cprivate%5ckey.txt",
    "docs/..\\private\\key.txt",
    "docs/C:%5cWindows%5cwin.ini",
    "docs/sub%5c..%5c..%5cprivate",
    # NUL
    "docs/notes.md%00.txt",
    "docs/%00",
    # absolute forms
    "docs/%2fetc%2fpasswd",
    "%2fetc%2fpasswd",
    "docs//etc/passwd",
    # roots that are not served, including a sibling sharing the root's name as prefix
    "private/key.txt",
    "docs-private/secret.md",
    "docs-private/",
    # symlinks out, at depth 1, 2, 3 and 4, a directory out, a chain ending outside
    "docs/out1.txt",
    "docs/sub/out2.txt",
    "docs/sub/deeper/out3.txt",
    "docs/sub/deeper/deepest/out4.txt",
    "docs/outdir",
    "docs/outdir/",
    "docs/outdir/payload.txt",
    "docs/outdir/README",
    "docs/chain1.txt",
    "docs/chain2.txt",
    "docs/sibling/",
    "docs/sibling/plain.md",
    # devices and the filesystem root, through symlinks
    "docs/devnull",
    "docs/zero",
    "docs/zero?range=0-10",
    "docs/root/",
    "docs/root/etc/passwd",
    # facets and parts do not open another way
    "docs/out1.txt?as=stat",
    "docs/out1.txt?range=0-4",
    "docs/out1.txt?lines=1-1",
    "docs/outdir/payload.txt?as=raw",
]


@pytest.mark.parametrize("tail", OUT_OF_ROOT)
def test_ways_out_are_out_of_root(box: Box, tail: str) -> None:
    answer = refusal(box, tail)
    assert isinstance(answer, OutOfRoot), answer.data
    assert answer.data["reason"] == "out-of-root"
    assert answer.data["roots"] == ROOTS
    assert set(answer.data) <= {"reason", "uri", "roots", "nearest"}
    assert set(answer.data.get("nearest", [])) <= set(ROOTS)


PLAIN_NAMES = [
    "docs/%252e%252e/private/key.txt",
    "docs/%252e%252e",
    "docs/%252e%252e%252fprivate",
    "docs/%EF%BC%8E%EF%BC%8E/private/key.txt",
    "docs/．．/private/key.txt",
    "docs/．．",
    "docs/‥/private/key.txt",
    "docs/%E2%80%A5",
    "docs/%E2%88%95etc%E2%88%95passwd",
    "docs/＼..＼private",
    "docs/C:/Windows/win.ini",
    "docs/notes.md/",
    "docs/notes.md/x",
]


@pytest.mark.parametrize("tail", PLAIN_NAMES)
def test_look_alikes_and_double_encoding_are_plain_names(box: Box, tail: str) -> None:
    answer = refusal(box, tail)
    assert isinstance(answer, NotFound), answer.data
    nearest = answer.data["nearest"]
    assert 0 < len(nearest) <= 5
    assert answer.data["uri"] not in nearest
    for uri in nearest:
        assert uri.startswith(DOCS)
        box.read(uri)  # every suggestion resolves


DENIED = [
    *(f"docs/{name}" for name in DENIED_FILES),
    "docs/.git/config",
    "docs/.git/",
    "docs/__pycache__/",
    "docs/__pycache__/m.cpython-311.pyc",
    "docs/alias.txt",
    "docs/never-there.pem",
    "docs/sub/.env",
    "docs/x.pem?as=stat",
    "docs/id_rsa?range=0-4",
    "docs/pipe",
    "docs/pipe?as=stat",
    "docs/pipe?range=0-4",
    "docs/pipe?lines=1-1",
    # look-alikes of dot segments that begin with a dot are dotfiles: denied, never a traversal
    "docs/..∕..∕private∕key.txt",
    "docs/...",
    "docs/..../private",
    "docs/%2e%2e.md",
]


@pytest.mark.parametrize("tail", DENIED)
def test_denied_names_and_non_regular_files_are_denied_and_tell_nothing(
    box: Box, tail: str
) -> None:
    answer = refusal(box, tail)
    assert isinstance(answer, Denied), answer.data
    assert answer.data == {"reason": "denied", "uri": str(parse(box.uri(tail)))}


def mtime_z(path: Path) -> str:
    """A file's mtime as ``lastModified`` spells it: ISO 8601, UTC, to the second, ``Z``."""
    moment = datetime.fromtimestamp(int(path.stat().st_mtime), UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def children(box: Box, tail: str) -> dict[str, dict[str, Any]]:
    body = within(5, lambda: box.body(box.uri(tail)))
    assert SECRET not in json.dumps(body)
    return {child["name"]: child for child in body["children"]}


def test_listing_redacts_what_it_will_not_serve(box: Box) -> None:
    listed = children(box, "docs/")
    redacted = [
        *DENIED_FILES,
        ".git/",
        "__pycache__/",
        "out1.txt",
        "outdir/",
        "chain1.txt",
        "chain2.txt",
        "sibling/",
        "devnull",
        "zero",
        "root/",
        "pipe",
        "alias.txt",
    ]
    for name in redacted:
        entry = listed[name]
        assert entry["redacted"] is True, name
        assert "size" not in entry and "mimeType" not in entry, name
        assert "annotations" not in entry, name
    assert listed["notes.md"] == {
        "uri": DOCS + "notes.md",
        "name": "notes.md",
        "mimeType": "text/markdown",
        "isCollection": False,
        "size": len(NOTES),
        "annotations": {"lastModified": mtime_z(box.checkout / "docs" / "notes.md")},
    }
    assert listed[".gitignore"]["size"] == len("*.pyc\n")
    assert to_text(box.read(DOCS + ".gitignore").body) == "*.pyc\n"
    assert listed["inside.md"]["size"] == len(NOTES)
    assert listed["inside-dir/"]["isCollection"] is True and "redacted" not in listed["inside-dir/"]
    deeper = children(box, "docs/sub/deeper/")
    assert deeper["out3.txt"]["redacted"] is True and deeper["deep.md"]["size"] == 7
    assert children(box, "docs/sub/")["chain3.txt"]["redacted"] is True


def test_symlinks_that_stay_inside_are_served(box: Box) -> None:
    inside = box.read(DOCS + "inside.md")
    assert inside.uri == DOCS + "inside.md" and to_text(inside.body) == NOTES
    deep = box.read(DOCS + "inside-dir/deeper/deep.md")
    assert to_text(deep.body) == "# deep\n"
    assert box.body(DOCS + "inside.md?as=stat")["mimeType"] == "text/markdown"
    names = children(box, "docs/inside-dir/")
    assert "deeper/" in names and names["out2.txt"]["redacted"] is True


def test_root_listings_show_only_the_served_roots(box: Box) -> None:
    listed = children(box, "")
    assert sorted(listed) == ["data/", "docs/"]
    with pytest.raises(OutOfRoot):
        box.read(box.uri("private/"))


def test_completion_never_offers_what_is_refused(box: Box) -> None:
    template = f"tm://{HOST}/fs/{{+path}}"
    offered = box.ns.complete(template, "path", "docs/", {})
    assert "docs/notes.md" in offered and "docs/.gitignore" in offered
    for name in ("docs/.env", "docs/out1.txt", "docs/outdir/", "docs/pipe", "docs/id_rsa"):
        assert name not in offered
    assert box.ns.complete(template, "path", "docs/outdir/", {}) == []
    assert box.ns.complete(template, "path", "docs/../private/", {}) == []
    assert box.ns.complete(template, "path", "docs-", {}) == []
