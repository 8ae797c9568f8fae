"""What a namespace keeps of its reads is bounded: in reads and in bytes, answers included."""

from __future__ import annotations

import pytest

from tmsite.core.types import Content
from tmsite.mounts import namespace as namespace_module

pytestmark = pytest.mark.spec("T7")


def _kept(size: int) -> namespace_module.Kept:
    return namespace_module.Kept(
        ("stamp",), (), Content("tm://box/fs/f", "text/plain", "x" * size, [])
    )


def test_the_oldest_reads_go_past_the_most_reads_or_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(namespace_module, "MAX_ENTRIES", 3)
    monkeypatch.setattr(namespace_module, "MAX_BYTES", 1000)
    reads = namespace_module.ReadMemo()
    for name in "abcd":
        reads.put(name, _kept(100))
    assert list(reads._entries) == ["b", "c", "d"] and reads._bytes == 300
    reads.put("e", _kept(850))  # over the bytes: the oldest go until it fits
    assert list(reads._entries) == ["d", "e"] and reads._bytes == 950
    reads.put("e", _kept(50))  # kept again in place: its old size is given back
    assert list(reads._entries) == ["d", "e"] and reads._bytes == 150


def test_an_answer_counts_beside_its_read_and_goes_with_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(namespace_module, "MAX_BYTES", 1000)
    reads = namespace_module.ReadMemo()
    first, second = _kept(300), _kept(300)
    reads.put("a", first)
    reads.put("b", second)
    reads.answered("a", first, "v1", "answer", 200)
    reads.answered("a", second, "v2", "made of another read", 10)  # not the one kept for "a"
    assert first.answers == {"v1": "answer"} and reads._bytes == 800
    reads.answered("b", second, "v1", "answer", 300)  # 1,100 bytes: "a" and its answer go
    assert list(reads._entries) == ["b"] and reads._bytes == 600
