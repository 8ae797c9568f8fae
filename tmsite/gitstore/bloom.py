"""Changed-path Bloom filters of a commit-graph: does a commit leave a path as its parent had it?

``git commit-graph write --changed-paths`` stores, per commit, a Bloom filter of every path
(and every leading directory of one) that differs between the commit and its first parent.
A path whose key is missing from the filter is certainly unchanged there, so a history walk
passes over the commit without reading a tree; a key present means "maybe" and the trees
decide. The hashing is git's version 1 (``bloom.c``): 32-bit murmur3 of the path's bytes,
read as *signed* chars (the form git 2.39 writes and reads), double hashing with two seeds,
bit ``h % (8 × filter bytes)`` in byte ``h // 8``, least significant bit first.

Spec: ANY2.
"""

from __future__ import annotations

SEED0 = 0x293AE76F
SEED1 = 0x7E646E2C
MASK = 0xFFFFFFFF
#: Filter settings git writes when the chunk header cannot be read: version, hashes, bits.
DEFAULT_HASHES = 7


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & MASK


def _signed(byte: int) -> int:
    """A byte as C's ``(uint32_t)(char)b`` on a platform where ``char`` is signed."""
    return byte | 0xFFFFFF00 if byte & 0x80 else byte


def murmur3(seed: int, data: bytes) -> int:
    """Git's ``murmur3_seeded`` (hash version 1) of ``data``."""
    c1, c2 = 0xCC9E2D51, 0x1B873593
    length = len(data)
    whole = length - length % 4
    h = seed
    for i in range(0, whole, 4):
        k = (
            _signed(data[i])
            | (_signed(data[i + 1]) << 8)
            | (_signed(data[i + 2]) << 16)
            | (_signed(data[i + 3]) << 24)
        ) & MASK
        k = (_rotl((k * c1) & MASK, 15) * c2) & MASK
        h ^= k
        h = (_rotl(h, 13) * 5 + 0xE6546B64) & MASK
    tail = length % 4
    if tail:
        k1 = 0
        if tail >= 3:
            k1 ^= (_signed(data[whole + 2]) << 16) & MASK
        if tail >= 2:
            k1 ^= (_signed(data[whole + 1]) << 8) & MASK
        k1 ^= _signed(data[whole])
        k1 = (_rotl((k1 * c1) & MASK, 15) * c2) & MASK
        h ^= k1
    h ^= length
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & MASK
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & MASK
    h ^= h >> 16
    return h


def key(path: bytes, hashes: int = DEFAULT_HASHES) -> tuple[int, ...]:
    """The bit hashes of one path (no leading or trailing slash)."""
    first = murmur3(SEED0, path)
    step = murmur3(SEED1, path)
    return tuple((first + i * step) & MASK for i in range(hashes))


def keys(path: str, hashes: int = DEFAULT_HASHES) -> tuple[tuple[int, ...], ...]:
    """Keys of a path and of each directory leading to it, as ``git log -- path`` checks."""
    raw = path.encode("utf-8", "surrogateescape")
    parts = raw.split(b"/")
    return tuple(key(b"/".join(parts[:n]), hashes) for n in range(len(parts), 0, -1))


def contains(data: bytes | memoryview, start: int, end: int, one: tuple[int, ...]) -> bool | None:
    """Whether the filter in ``data[start:end]`` may hold the key; None for an empty filter."""
    bits = (end - start) * 8
    if bits <= 0:
        return None
    for h in one:
        at = h % bits
        if not data[start + (at >> 3)] & (1 << (at & 7)):
            return False
    return True
