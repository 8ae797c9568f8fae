"""The shared file-type rules (independent of git)."""

from __future__ import annotations

import pytest

from tmsite.gitstore.cache import ByteLRU
from tmsite.mime import guess_mime, is_text_mime, looks_binary

pytestmark = pytest.mark.spec("GIT")


@pytest.mark.parametrize(
    ("name", "mime"),
    [
        ("docs/a.md", "text/markdown"),
        ("prg.s", "text/x-asm"),
        ("x.ASM", "text/x-asm"),
        ("data/pieces.json", "application/json"),
        ("icon.svg", "image/svg+xml"),
        ("Cargo.lock", "text/plain"),
        ("site.nginx", "text/plain"),
        ("LICENSE", "text/plain"),
        ("Makefile", "text/plain"),
        ("README.ja", "text/plain"),
        ("photo.png", "image/png"),
    ],
)
def test_by_name(name: str, mime: str) -> None:
    assert guess_mime(name, b"\0\0") == mime


def test_by_content() -> None:
    assert guess_mime("notes.unknownext", b"plain words\n") == "text/plain"
    assert guess_mime("blob.unknownext", b"\x00\x01\x02") == "application/octet-stream"
    assert guess_mime("blob.unknownext") == "application/octet-stream"
    assert guess_mime("noext", "naïve".encode()) == "text/plain"


def test_looks_binary() -> None:
    assert not looks_binary(b"")
    assert looks_binary(b"a\0b")
    assert looks_binary(b"\xff\xfe text")
    cut = ("x" * 8190 + "é").encode()  # 8192 bytes, the 'é' whole
    assert not looks_binary(cut)
    cut_in_half = ("x" * 8191 + "é").encode()  # the sample ends inside 'é'
    assert not looks_binary(cut_in_half)
    assert looks_binary(b"x" * 8189 + b"\xe9abc")  # invalid, not merely cut short
    assert not looks_binary(b"x" * 9000 + b"\0")  # only the first 8192 bytes are read


def test_is_text_mime() -> None:
    assert is_text_mime("text/markdown") and is_text_mime("application/json")
    assert is_text_mime("image/svg+xml; charset=utf-8")
    assert not is_text_mime("application/octet-stream") and not is_text_mime("image/png")


def test_byte_lru_is_bounded() -> None:
    lru = ByteLRU(max_bytes=100, max_item_bytes=60)
    lru.put("a", 1, 40)
    lru.put("b", 2, 40)
    assert lru.get("a") == 1  # a is now the most recent
    lru.put("c", 3, 40)  # over 100: b, the least recent, goes
    assert lru.get("b") is None and lru.get("a") == 1 and lru.get("c") == 3
    assert lru.size_bytes == 80
    lru.put("huge", 4, 61)  # bigger than an item may be: not kept
    assert lru.get("huge") is None and len(lru) == 2
    lru.clear()
    assert len(lru) == 0 and lru.size_bytes == 0
