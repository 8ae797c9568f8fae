"""The fs mount's reads on real files: awkward names, stat, the cap, parts, huge files and dirs."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.fs.tree import AWKWARD, HOST, NOTES, RECORD, Box, within
from tmsite.core.errors import BadFacet, NotFound, TooLarge
from tmsite.core.parts import READ_CAP, to_text
from tmsite.core.uri import build
from tmsite.mounts.fs.mount import FsMount
from tmsite.mounts.namespace import Namespace

pytestmark = pytest.mark.spec("FS", "NS4", "NS5", "NS6")

DOCS = f"tm://{HOST}/fs/docs/"
GIB = 1 << 30


def test_awkward_names_list_with_uris_that_read_back_the_same_bytes(box: Box) -> None:
    listed = {child["uri"]: child for child in box.body(DOCS)["children"]}
    for name, data in AWKWARD.items():
        uri = build(HOST, "fs", ["docs", name])
        assert uri.isascii() and "#" not in uri and "?" not in uri and " " not in uri
        entry = listed[uri]
        assert entry["size"] == len(data)
        assert entry["name"] == name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        content = box.read(uri)
        assert content.uri == uri
        assert to_text(content.body).encode() == data
        stat = box.body(uri + "?as=stat")
        assert stat["uri"] == uri and stat["size"] == len(data)
    latin = build(HOST, "fs", ["docs", os.fsdecode(b"caf\xe9-latin1.txt")])
    assert latin == DOCS + "caf%E9-latin1.txt"
    assert listed[latin]["name"] == "caf\ufffd-latin1.txt"


def test_stat_fields(box: Box) -> None:
    docs = box.checkout / "docs"
    when = 1_700_000_000.75
    os.utime(docs / "notes.md", (when, when))
    (docs / "image.bin").write_bytes(b"\x89PNG\x00\x01\x02" * 10)
    stat = box.read(DOCS + "notes.md?as=stat")
    assert stat.mime_type == "application/vnd.tm.stat+json"
    assert stat.uri == DOCS + "notes.md?as=stat"
    assert stat.body == {
        "uri": DOCS + "notes.md",
        "name": "notes.md",
        "path": "docs/notes.md",
        "size": len(NOTES),
        "mimeType": "text/markdown",
        "modified": "2023-11-14T22:13:20+00:00",
        "isCollection": False,
        "text": True,
    }
    assert datetime.fromisoformat(stat.body["modified"]).tzinfo == UTC
    binary = box.body(DOCS + "image.bin?as=stat")
    assert binary["mimeType"] == "application/octet-stream" and binary["text"] is False
    assert binary["size"] == 70
    assert box.body(DOCS + "record.json?as=stat")["mimeType"] == "application/json"
    rels = {link.rel: link.href for link in stat.links}
    assert rels["alternate"] == DOCS + "notes.md" and rels["up"] == DOCS


def test_directory_stat_is_bad_facet(box: Box) -> None:
    with pytest.raises(BadFacet) as refused:
        box.read(DOCS + "sub/?as=stat")
    assert refused.value.data == {
        "reason": "bad-facet",
        "uri": DOCS + "sub/?as=stat",
        "valid": ["raw", "links"],  # links: the namespace pages any thing's links
    }
    with pytest.raises(NotFound) as not_found:
        box.read(DOCS + "sub?as=stat")
    assert not_found.value.data["nearest"] == [DOCS + "sub/"]


def test_too_large_names_its_size_and_ready_templates(box: Box) -> None:
    # Lines end at \n only: form feeds, \r and the ASCII separators are line content.
    line = "abc\fdef\x0bghi\x1cjkl\x1dmno\x1epqr\rstu"
    text = "".join(f"{i:06d} {line}\n" for i in range(300 * 1024 // 40))
    data = text.encode()
    assert len(data) > READ_CAP
    (box.checkout / "docs" / "big.txt").write_bytes(data)
    uri = DOCS + "big.txt"
    with pytest.raises(TooLarge) as refused:
        box.read(uri)
    assert refused.value.data == {
        "reason": "too-large",
        "uri": uri,
        "size": len(data),
        "cap": READ_CAP,
        "range": uri + "?range={start}-{end}",
        "lines": uri + "?lines={first}-{last}",
        "stat": uri + "?as=stat",
    }
    ranged = box.read(refused.value.data["range"].format(start=1000, end=1100))
    assert ranged.body == text[1000:1100] and ranged.size == len(data)
    assert ranged.uri == uri + "?range=1000-1100"
    raw = box.read(uri + "?as=raw&range=1000-1100")
    # a raw range is the bytes themselves (sent base64), never text
    assert raw.uri == uri + "?as=raw&range=1000-1100" and raw.body == data[1000:1100]
    lines = box.read(refused.value.data["lines"].format(first=3, last=4))
    assert lines.body == f"000002 {line}\n000003 {line}\n"
    last = box.read(uri + "?lines=7680-9999")
    assert last.body == f"007679 {line}\n"
    assert box.body(refused.value.data["stat"])["size"] == len(data)
    with pytest.raises(TooLarge) as wide:
        box.read(uri + f"?range=0-{READ_CAP + 1}")
    assert wide.value.data["size"] == len(data) and wide.value.data["cap"] == READ_CAP
    assert box.read(uri + f"?range=0-{READ_CAP}").body == text[:READ_CAP]


def sparse(path: Path, size: int) -> None:
    with path.open("wb") as handle:
        handle.truncate(size)
        handle.seek(size // 2)
        handle.write(b"MIDDLE")
        handle.seek(size - 4)
        handle.write(b"TAIL")


def test_range_on_a_1_gib_sparse_file_is_quick_and_exact(box: Box) -> None:
    sparse(box.checkout / "docs" / "huge.bin", GIB)
    uri = DOCS + "huge.bin"
    started = time.perf_counter()
    middle = within(5, lambda: box.read(f"{uri}?range={GIB // 2}-{GIB // 2 + 6}"))
    tail = box.read(f"{uri}?range={GIB - 4}-{GIB + 1000}")
    zeros = box.read(f"{uri}?range=1000-{1000 + READ_CAP}")
    elapsed = time.perf_counter() - started
    assert middle.body == b"MIDDLE" and middle.size == GIB
    assert middle.uri == f"{uri}?range={GIB // 2}-{GIB // 2 + 6}"
    assert tail.body == b"TAIL" and tail.uri == f"{uri}?range={GIB - 4}-{GIB}"
    assert zeros.body == bytes(READ_CAP)
    assert elapsed < 2.0, f"three range reads of a sparse GiB took {elapsed:.2f} s"
    with pytest.raises(BadFacet) as past:
        box.read(f"{uri}?range={GIB}-{GIB + 1}")
    assert past.value.data == {
        "reason": "bad-facet",
        "uri": f"{uri}?range={GIB}-{GIB + 1}",
        "valid": [f"0-{GIB}"],
        "size": GIB,
    }
    for asked in (uri, uri + "?lines=1-1", uri + "?as=raw", uri + "?pointer=/a"):
        with pytest.raises(TooLarge) as refused:
            within(5, lambda asked=asked: box.read(asked))  # type: ignore[misc]
        assert refused.value.data["size"] == GIB
    assert box.body(uri + "?as=stat")["size"] == GIB


@pytest.fixture
def fast_tmp(tmp_path: Path) -> Iterator[Path]:
    """A directory on tmpfs when the machine has one (creating 100,000 files there is quick)."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    made = Path(tempfile.mkdtemp(dir=shm, prefix="tmsite-fs-"))
    try:
        yield made
    finally:
        shutil.rmtree(made, ignore_errors=True)


def test_a_page_of_a_100000_entry_directory(fast_tmp: Path) -> None:
    crowd = fast_tmp / "checkout" / "docs" / "crowd"
    crowd.mkdir(parents=True)
    flags = os.O_CREAT | os.O_WRONLY | os.O_EXCL
    for i in range(100_000):
        os.close(os.open(crowd / f"f{i:06d}.txt", flags, 0o644))
    (crowd / "zz.md").write_text("# last\n")
    ns = Namespace(HOST, {"fs": FsMount(HOST, fast_tmp / "checkout", ["docs"])})
    started = time.perf_counter()
    first = ns.read(DOCS + "crowd/")
    elapsed = time.perf_counter() - started
    body = first.body
    assert isinstance(body, dict)
    page = body["children"]
    assert [child["name"] for child in page] == [f"f{i:06d}.txt" for i in range(500)]
    assert all(child["size"] == 0 and child["mimeType"] == "text/plain" for child in page)
    assert body["next"] == DOCS + "crowd/?cursor=" + body["nextCursor"]
    second = ns.read(body["next"]).body
    assert isinstance(second, dict)
    assert [c["name"] for c in second["children"]] == [f"f{i:06d}.txt" for i in range(500, 1000)]
    assert elapsed < 5, f"one page of 100,000 entries took {elapsed:.2f} s"


def test_lines_of_a_file(box: Box) -> None:
    assert to_text(box.read(DOCS + "notes.md?lines=2-3").body) == "two\nthree\n"
    assert to_text(box.read(DOCS + "notes.md?lines=4-99").body) == "four\n"
    part = box.read(DOCS + "notes.md?lines=1-1")
    assert part.uri == DOCS + "notes.md?lines=1-1" and part.mime_type == "text/markdown"
    with pytest.raises(BadFacet) as past:
        box.read(DOCS + "notes.md?lines=5-6")
    assert past.value.data == {
        "reason": "bad-facet",
        "uri": DOCS + "notes.md?lines=5-6",
        "valid": ["1-4"],
        "lines": 4,
    }


def test_pointer_into_a_json_file(box: Box) -> None:
    uri = DOCS + "record.json"
    assert box.read(uri + "?pointer=/a/1/b").body == "two"
    assert box.read(uri + "?pointer=/c~0d/e~1f").body == 3
    assert box.read(uri + "?pointer=").body == RECORD
    pointed = box.read(uri + "?pointer=/a/0")
    assert pointed.uri == uri + "?pointer=/a/0" and pointed.mime_type == "application/json"
    with pytest.raises(NotFound) as missing:
        box.read(uri + "?pointer=/a/5")
    assert missing.value.data["nearest"] == [uri + "?pointer=/a/0", uri + "?pointer=/a/1"]
    with pytest.raises(BadFacet) as not_json:
        box.read(DOCS + "notes.md?pointer=/a")
    assert not_json.value.data == {
        "reason": "bad-facet",
        "uri": DOCS + "notes.md?pointer=/a",
        "valid": [],
    }
