"""The repository handle: dulwich plumbing behind one lock, parsed objects behind caches.

A :class:`GitRepo` wraps one dulwich ``Repo``. Every touch of dulwich (the object store, the
refs container) happens under the handle's lock, because dulwich's pack readers share file
positions and were not safe for concurrent reads; what is read is parsed once and kept in the
process-wide :data:`~tmsite.gitstore.cache.OBJECTS` cache, keyed by the repository's path and
the object id, so threads and later handles on the same repository share it.

Packed objects are read from the bytes dulwich's ``PackData`` has mapped, at the offset its
pack index gives (searched directly in the index bytes dulwich has mapped): whole objects are
inflated in one call, deltas are resolved through their entry headers with dulwich's
``apply_delta``, and sizes and types come from the entry headers without inflating anything
(sizes from the pack's size table, where ``tm_git maintain`` wrote one);
whatever this reader does not understand is handed to dulwich's own ``Pack.get_raw``. Loose
objects are read through the object store. The commit-graph — one file, or the chain of
layers a split write leaves — is split into chunks by dulwich's reader and its records decoded
one at a time when asked for.

Commits and trees are parsed here from the raw object text (client text never reaches a
revision parser, and no porcelain is used): a commit keeps only what the library uses — its
tree, parents, author name and dates, and subject — and never the e-mail addresses.

Spec: GIT.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import heapq
import mmap
import os
import re
import struct
import sys
import threading
import zlib
from collections.abc import Callable, Container
from dataclasses import dataclass
from types import TracebackType
from typing import Literal, TypeVar

from dulwich.commit_graph import (
    CHUNK_BASE_GRAPHS_LIST,
    CHUNK_BLOOM_FILTER_DATA,
    CHUNK_BLOOM_FILTER_INDEX,
    CHUNK_COMMIT_DATA,
    CHUNK_EXTRA_EDGE_LIST,
    CHUNK_OID_FANOUT,
    CHUNK_OID_LOOKUP,
    GRAPH_EXTRA_EDGES_NEEDED,
    GRAPH_LAST_EDGE,
    GRAPH_PARENT_MISSING,
    CommitGraph,
)
from dulwich.errors import NotGitRepository
from dulwich.objects import ObjectID, RawObjectID, parse_tree
from dulwich.pack import Pack, PackFileDisappeared, PackIndex2, apply_delta
from dulwich.refs import Ref, check_ref_format
from dulwich.repo import Repo

from tmsite.gitstore import bloom
from tmsite.gitstore.cache import OBJECTS
from tmsite.gitstore.errors import GitError

_T = TypeVar("_T")

_HEX40 = re.compile(rb"[0-9a-f]{40}")

#: Object type numbers of the git object format.
COMMIT, TREE, BLOB, TAG = 1, 2, 3, 4
TYPE_NAMES = {COMMIT: "commit", TREE: "tree", BLOB: "blob", TAG: "tag"}
#: Pack entry types of deltas: against a base at an earlier offset, or named by its id.
OFS_DELTA, REF_DELTA = 6, 7
#: Longest delta chain followed here (git writes at most 50 by default); a longer one, or a
#: chain of deltas named by id deep enough to exhaust the stack, is left to dulwich's reader.
MAX_DELTA_DEPTH = 256
#: Bytes of resolved delta bases kept per handle, by pack offset.
BASE_CACHE_BYTES = 16 * 1024 * 1024

#: Blobs up to this size are kept in the object cache.
CACHED_BLOB_BYTES = 512 * 1024
#: Commits whose walk facts a handle keeps before it starts over (about 500 bytes each).
WALKED_LIMIT = 50_000
#: Objects read between two looks at this process's resident file pages (:meth:`GitRepo.trim`).
CHECK_EVERY_READS = 128
#: Resident file pages (the mapped packs and indexes, the program's own files) past which a
#: handle releases its mapped pages.
RESIDENT_FILE_BYTES = 48 * 1024 * 1024
#: What dulwich's own reader may keep of resolved delta bases, per pack (its default: 96 MiB).
DULWICH_BASE_CACHE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class CommitInfo:
    """What the library keeps of a commit object.

    Attributes:
        tree: The root tree id.
        parents: The parent commit ids, in order.
        author_name: The author's name, decoded, no e-mail.
        author_time: Author time, seconds since the epoch (UTC).
        author_tz: Author time-zone offset in seconds east of UTC.
        commit_time: Committer time, seconds since the epoch (UTC).
        subject: The first paragraph of the message on one line.
    """

    tree: str
    parents: tuple[str, ...]
    author_name: str
    author_time: int
    author_tz: int
    commit_time: int
    subject: str


#: A parsed tree: name → (mode, id), in the tree's own (git) order, hostile names left out.
TreeData = dict[str, tuple[int, str]]


def is_hostile_name(name: str) -> bool:
    r"""Whether a tree entry name is one the library never returns or descends into.

    Refused: the empty name, ``.``, ``..``, ``.git`` in any letter case, and names holding
    ``/``, ``\`` or NUL (a well-formed tree cannot contain those, a crafted one can).
    """
    return (
        name in ("", ".", "..")
        or name.lower() == ".git"
        or "/" in name
        or "\\" in name
        or "\0" in name
    )


def _split_ident(value: bytes) -> tuple[bytes, int, int]:
    """Name, time and offset from an ``author``/``committer`` header value."""
    lt = value.find(b"<")
    gt = value.rfind(b">")
    name = value[:lt].strip() if lt >= 0 else value.strip()
    rest = value[gt + 1 :].split() if gt >= 0 else []
    when = 0
    tz = 0
    if rest:
        try:
            when = int(rest[0])
        except ValueError:
            when = 0
    if len(rest) > 1:
        text = rest[1]
        sign = -1 if text.startswith(b"-") else 1
        digits = text.lstrip(b"+-")
        if len(digits) == 4 and digits.isdigit():
            tz = sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
    return name, when, tz


def _decode(data: bytes, encoding: str) -> str:
    try:
        return data.decode(encoding, "replace")
    except LookupError:
        return data.decode("utf-8", "replace")


def parse_commit(raw: bytes) -> CommitInfo:
    """Parse the text of a commit object into a :class:`CommitInfo`."""
    head, _sep, message = raw.partition(b"\n\n")
    tree = b""
    parents: list[str] = []
    author = b""
    committer = b""
    encoding = "utf-8"
    for line in head.split(b"\n"):
        if not line or line[:1] == b" ":
            continue  # continuation of a multi-line header (gpgsig, mergetag)
        key, _space, value = line.partition(b" ")
        if key == b"tree":
            tree = value
        elif key == b"parent":
            parents.append(value.decode("ascii"))
        elif key == b"author":
            author = value
        elif key == b"committer":
            committer = value
        elif key == b"encoding":
            encoding = value.decode("ascii", "replace").strip() or "utf-8"
    author_name, author_time, author_tz = _split_ident(author)
    _cname, commit_time, _ctz = _split_ident(committer)
    paragraph: list[bytes] = []
    for line in message.lstrip(b"\n").split(b"\n"):
        if not line.strip():
            break
        paragraph.append(line.strip())
    return CommitInfo(
        tree=tree.decode("ascii"),
        parents=tuple(parents),
        author_name=_decode(author_name, encoding),
        author_time=author_time,
        author_tz=author_tz,
        commit_time=commit_time,
        subject=_decode(b" ".join(paragraph), encoding),
    )


def parse_walk(raw: bytes) -> tuple[str, tuple[str, ...], int]:
    """A commit's tree, parents and committer time from its header lines alone.

    Commits as git writes them start ``tree``, ``parent``…, and carry one ``committer`` line
    before the blank line; anything else is left to :func:`parse_commit`.
    """
    head_end = raw.find(b"\n\n")
    if head_end < 0:
        head_end = len(raw)
    if raw[:5] == b"tree " and raw[45:46] == b"\n":
        parents: list[str] = []
        pos = 46
        while raw[pos : pos + 7] == b"parent " and raw[pos + 47 : pos + 48] == b"\n":
            parents.append(raw[pos + 7 : pos + 47].decode("ascii"))
            pos += 48
        start = raw.find(b"\ncommitter ", pos - 1, head_end)
        if start >= 0 and raw.find(b"\nparent ", pos - 1, head_end) < 0:
            end = raw.find(b"\n", start + 1, head_end + 1)
            if end < 0:
                end = head_end
            _name, when, _tz = _split_ident(raw[start + 11 : end])
            return raw[5:45].decode("ascii"), tuple(parents), when
    info = parse_commit(raw)
    return info.tree, info.parents, info.commit_time


def find_in_tree(raw: bytes, name: bytes) -> tuple[int, str] | None:
    r"""The ``(mode, id)`` of the first entry called ``name`` in a raw tree, or None.

    Entries are ``<octal mode> <name>\0<20-byte id>``. The entry's text ``" name\0"`` is
    sought first (in C): where it occurs nowhere, no entry has the name. Else entries are
    stepped over from the start, a find of their terminating NUL each (a mode or a name holds
    none), until one ends where the text does and begins just before it; an occurrence that
    is not an entry (the tail of a longer name, bytes of an id) is stepped past.
    """
    needle = b" " + name + b"\0"
    at = raw.find(needle)
    if at > ENTRIES_IN_C:
        found = _entry_pattern(name).match(raw)
        if found is not None:
            return int(found[1], 8), found[2].hex()
    pos = 0
    size = len(raw)
    while at >= 0:
        nul = raw.find(b"\0", pos)
        if nul < 0 or nul + 21 > size:
            raise GitError("a tree object is malformed")
        if nul == at + len(needle) - 1 and raw.find(b" ", pos, nul) == at:
            try:
                mode = int(raw[pos:at], 8)
            except ValueError:
                raise GitError("a tree object is malformed") from None
            return mode, raw[nul + 1 : nul + 21].hex()
        pos = nul + 21
        if pos > at:
            at = raw.find(needle, pos)
    return None


#: How far into a tree the name is found past which entries are stepped over in C (a
#: regular expression) rather than one ``find`` each.
ENTRIES_IN_C = 2048


@functools.lru_cache(maxsize=256)
def _entry_pattern(name: bytes) -> re.Pattern[bytes]:
    """Well-formed entries from the start of a tree, then the first called ``name``.

    A tree it does not match (malformed before the entry) is stepped over one entry at a
    time, which says why.
    """
    entry = rb"[0-7]+ [^\x00]*\x00[\x00-\xff]{20}"
    return re.compile(
        rb"(?:" + entry + rb")*?([0-7]+) " + re.escape(name) + rb"\x00([\x00-\xff]{20})"
    )


def entry_header(buf: bytes | mmap.mmap, offset: int) -> tuple[int, int, int]:
    """Type number, size and the position after the header of the pack entry at ``offset``."""
    byte = buf[offset]
    type_num = (byte >> 4) & 7
    size = byte & 0x0F
    shift = 4
    pos = offset + 1
    while byte & 0x80:
        byte = buf[pos]
        pos += 1
        size |= (byte & 0x7F) << shift
        shift += 7
    return type_num, size, pos


def _ofs_base(buf: bytes | mmap.mmap, pos: int) -> tuple[int, int]:
    """An offset delta's distance back to its base, and the position after it."""
    byte = buf[pos]
    pos += 1
    back = byte & 0x7F
    while byte & 0x80:
        byte = buf[pos]
        pos += 1
        back = ((back + 1) << 7) | (byte & 0x7F)
    return pos, back


def inflate(buf: bytes | mmap.mmap, pos: int, size: int) -> bytes:
    """The zlib stream at ``pos``, which must inflate to exactly ``size`` bytes.

    The stream's compressed length is not stored; deflate never grows data by more than a few
    bytes per 16 KiB, so a window of ``size`` plus a margin holds it (else it is fed on).
    """
    end = pos + size + (size >> 8) + 64
    try:
        data = zlib.decompress(buf[pos:end])
    except zlib.error:
        inflater = zlib.decompressobj()
        data = inflater.decompress(buf[pos:end])
        while not inflater.eof:
            if end >= len(buf):
                raise ValueError("truncated pack entry") from None
            data += inflater.decompress(buf[end : end + 65536])
            end += 65536
    if len(data) != size:
        raise ValueError("pack entry size mismatch")
    return data


def delta_target_size(buf: bytes | mmap.mmap, pos: int, type_num: int) -> int:
    """The size of the object a delta entry makes, from the head of its delta data.

    ``pos`` is just after the entry header; the delta data starts after the base reference.
    """
    if type_num == OFS_DELTA:
        pos, _back = _ofs_base(buf, pos)
    else:
        pos += 20
    inflater = zlib.decompressobj()
    head = b""
    while len(head) < 20 and not inflater.eof:
        piece = buf[pos : pos + 256]
        if not piece:
            break
        head += inflater.decompress(piece, 20 - len(head))
        pos += 256
        while len(head) < 20 and inflater.unconsumed_tail and not inflater.eof:
            head += inflater.decompress(inflater.unconsumed_tail, 20 - len(head))
    at = 0
    for _field in range(2):  # the base size, then the target size
        value = 0
        shift = 0
        while True:
            if at >= len(head):
                raise ValueError("truncated delta header")
            byte = head[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
    return value


#: Entries either side of an id's expected place in its table searched first.
WINDOW = 48


def find_id(table: bytes | mmap.mmap, base: int, fanout: tuple[int, ...], binary: bytes) -> int:
    """The index of a 20-byte id in a sorted id table at ``base`` with its fan-out, or -1.

    Ids are spread evenly, so the bytes after the first tell about where in its bucket one
    sits: a window around that place is searched first (in C); when the id is not there but
    sorts between the window's ends, it is not in the table at all. Otherwise the rest of
    the bucket is searched.
    """
    first = binary[0]
    low = fanout[first - 1] if first else 0
    high = fanout[first]
    if high - low > 4 * WINDOW:
        guess = low + (high - low) * int.from_bytes(binary[1:4], "big") // 0x1000000
        start, end = max(low, guess - WINDOW), min(high, guess + WINDOW)
        at = _find_between(table, base, start, end, binary)
        if at >= 0:
            return at
        below = table[base + 20 * start : base + 20 * start + 20]
        above = table[base + 20 * end - 20 : base + 20 * end]
        if below < binary < above:
            return -1
    return _find_between(table, base, low, high, binary)


def _find_between(table: bytes | mmap.mmap, base: int, low: int, high: int, binary: bytes) -> int:
    end = base + 20 * high
    at = table.find(binary, base + 20 * low, end)
    while at >= 0 and (at - base) % 20:
        at = table.find(binary, at + 1, end)
    return -1 if at < 0 else (at - base) // 20


#: A pack's size table (written by ``tm_git maintain``, :mod:`tmsite.gitstore.graphwrite`):
#: ``objects/info/sizes/pack-<pack checksum>.sizes``, the header, then the size of each object
#: of the pack in its index's order, a little-endian uint32 each, :data:`UNKNOWN_SIZE` for one
#: of 4 GiB or more (or unreadable), whose size is then read from its entry as without a table.
#: Named by the pack's checksum, a table never speaks of another pack's objects.
SIZE_TABLE_HEADER = struct.Struct("<4sII")  # magic, version, object count
SIZE_TABLE_MAGIC = b"TMSZ"
UNKNOWN_SIZE = 0xFFFFFFFF


def size_table_path(objects: str, pack_checksum: bytes) -> str:
    """Where the size table of the pack with ``pack_checksum`` lies under ``objects``."""
    return os.path.join(objects, "info", "sizes", f"pack-{pack_checksum.hex()}.sizes")


def read_size_table(path: str, count: int) -> memoryview | None:
    """The sizes of a table at ``path`` holding ``count`` objects, or None (none, or not one)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(SIZE_TABLE_HEADER.size + 4 * count + 1)
    except OSError:
        return None
    if sys.byteorder != "little" or len(data) != SIZE_TABLE_HEADER.size + 4 * count:
        return None
    if SIZE_TABLE_HEADER.unpack_from(data) != (SIZE_TABLE_MAGIC, 1, count):
        return None
    return memoryview(data)[SIZE_TABLE_HEADER.size :].cast("I")


class PackIndexReader:
    """Finds objects in a version-2 pack index through the index bytes dulwich has mapped.

    The fan-out table narrows an id to its first-byte bucket, and :func:`find_id` searches
    the sorted id table there with ``find`` (a hit must fall on a 20-byte boundary);
    dulwich's own lookup bisects with a Python call per step, several times slower.
    """

    __slots__ = ("_contents", "_count", "_fanout", "_large", "_names", "_offsets")

    def __init__(self, contents: bytes | mmap.mmap) -> None:
        if contents[:8] != b"\377tOc\0\0\0\2":
            raise ValueError("not a version-2 pack index")
        self._contents = contents
        self._fanout = struct.unpack_from(">256L", contents, 8)
        self._count = self._fanout[255]
        self._names = 8 + 1024
        self._offsets = self._names + 24 * self._count  # after the names and the CRCs
        self._large = self._offsets + 4 * self._count
        if len(contents) < self._large + 40:
            raise ValueError("the pack index is cut short")

    @property
    def count(self) -> int:
        """How many objects the pack holds."""
        return int(self._count)

    @property
    def pack_checksum(self) -> bytes:
        """The checksum of the pack the index is of (its name's hex)."""
        return bytes(self._contents[len(self._contents) - 40 : len(self._contents) - 20])

    def index(self, binary: bytes) -> int:
        """The object's position in the index, or -1 when this pack does not hold it."""
        return find_id(self._contents, self._names, self._fanout, binary)

    def offset(self, binary: bytes) -> int | None:
        """The pack offset of the object, or None when this pack does not hold it."""
        index = find_id(self._contents, self._names, self._fanout, binary)
        return None if index < 0 else self.offset_at(index)

    def offset_at(self, index: int) -> int:
        """The pack offset of the object at ``index`` in the index."""
        contents = self._contents
        (value,) = struct.unpack_from(">L", contents, self._offsets + 4 * index)
        if value & 0x80000000:
            (value,) = struct.unpack_from(">Q", contents, self._large + 8 * (value & 0x7FFFFFFF))
        return int(value)


@dataclass(slots=True)
class GraphLayer:
    """What one commit-graph file adds to the graph: its commits' place and its own tables.

    Attributes:
        start: Commits in the layers below it: its first commit's position in the graph.
        count: Commits it holds.
        fanout: Its ``OIDF`` fan-out (its ids are sorted within the layer only).
        edges: Its ``EDGE`` list (parent positions in the whole graph's numbering).
        bloom_index: Its ``BIDX`` table, empty when its filters are not read.
        bloom_data: Its ``BDAT`` chunk, header included.
        bloom_settings: The filter header's version, hashes and bits per entry.
    """

    start: int
    count: int
    fanout: tuple[int, ...]
    edges: bytes
    bloom_index: bytes = b""
    bloom_data: bytes = b""
    bloom_settings: tuple[int, int, int] = (0, 0, 0)


class LazyCommitGraph(CommitGraph):
    """dulwich's commit-graph reader, with its records looked up one at a time when asked.

    dulwich reads the file and splits it into chunks; instead of building an entry object for
    every commit up front (tens of milliseconds for a few thousand commits, paid by every
    new handle), a commit's record is found by searching the id table within its fan-out
    bucket and decoded alone.

    A split graph (``git commit-graph write --split``: a chain of files, each adding the
    commits its bases lack) is one graph of several :class:`GraphLayer` (:meth:`stack_on`):
    a layer's positions follow those of the layers below it, and parent positions count across
    every layer, so the id and commit-data tables are joined in layer order and read as one;
    a commit's own layer is sought only for its extra edges and its Bloom filter.
    """

    def _parse_chunks(self) -> None:
        for needed in (CHUNK_OID_FANOUT, CHUNK_OID_LOOKUP, CHUNK_COMMIT_DATA):
            if needed not in self.chunks:
                raise ValueError("the commit-graph lacks a required chunk")
        if self.object_format.oid_length != 20:
            raise ValueError("only SHA-1 commit-graphs are read")
        fanout = struct.unpack(">256L", self.chunks[CHUNK_OID_FANOUT].data[:1024])
        self._ids = self.chunks[CHUNK_OID_LOOKUP].data
        self._data = self.chunks[CHUNK_COMMIT_DATA].data
        edges = self.chunks.get(CHUNK_EXTRA_EDGE_LIST)
        self._count = len(self._ids) // 20
        if fanout[255] != self._count or len(self._data) != self._count * 36:
            raise ValueError("the commit-graph's tables disagree")
        layer = GraphLayer(0, self._count, fanout, edges.data if edges is not None else b"")
        self._read_filters(layer)
        self._layers = [layer]
        self._starts = [0]
        self._bloom_hashes = layer.bloom_settings[1] if layer.bloom_data else bloom.DEFAULT_HASHES

    def _read_filters(self, layer: GraphLayer) -> None:
        """The layer's changed-path Bloom filters (``BIDX``, ``BDAT``), when well formed."""
        index = self.chunks.get(CHUNK_BLOOM_FILTER_INDEX)
        data = self.chunks.get(CHUNK_BLOOM_FILTER_DATA)
        if index is None or data is None or len(index.data) != 4 * layer.count:
            return
        if len(data.data) < 12:
            return
        version, hashes, bits = struct.unpack_from(">LLL", data.data, 0)
        if version != 1 or not 1 <= hashes <= 32:
            return  # only the hash version git 2.39 writes is read
        last = struct.unpack_from(">L", index.data, 4 * layer.count - 4)[0] if layer.count else 0
        if 12 + last > len(data.data):
            return
        layer.bloom_index = index.data
        layer.bloom_data = data.data
        layer.bloom_settings = (version, hashes, bits)

    def stack_on(self, bases: list[LazyCommitGraph]) -> None:
        """Make this graph, the top file of a split chain, the whole chain: ``bases`` below it.

        ``bases`` are the chain's other files as read, base first. Their tables are joined
        once, in order. The filters' settings are the topmost layer's that has filters; a
        layer below whose settings differ has its filters set aside, as git does (its commits
        are then "maybe changed", and the trees tell).
        """
        files = [*bases, self]
        self._layers = [graph._layers[0] for graph in files]
        start = 0
        for layer in self._layers:
            layer.start = start
            start += layer.count
        self._starts = [layer.start for layer in self._layers]
        self._ids = b"".join(graph._ids for graph in files)
        self._data = b"".join(graph._data for graph in files)
        self._count = start
        settings = next(
            (layer.bloom_settings for layer in reversed(self._layers) if layer.bloom_data), None
        )
        for layer in self._layers:
            if layer.bloom_data and layer.bloom_settings != settings:
                layer.bloom_index = layer.bloom_data = b""
        self._bloom_hashes = settings[1] if settings is not None else bloom.DEFAULT_HASHES

    @property
    def layers(self) -> int:
        """How many files make up the graph (more than one: a split chain)."""
        return len(self._layers)

    @property
    def layer_sizes(self) -> list[int]:
        """How many commits each file holds, base first."""
        return [layer.count for layer in self._layers]

    @property
    def commit_count(self) -> int:
        """How many commits the graph holds, every layer's."""
        return self._count

    def level_at(self, position: int) -> int:
        """The topological level (generation number version 1) of the commit at a position."""
        (value,) = struct.unpack_from(">L", self._data, position * 36 + 28)
        return int(value >> 2)

    def _layer(self, position: int) -> GraphLayer:
        """The layer holding the commit at a position."""
        layers = self._layers
        if len(layers) == 1 or position >= layers[-1].start:
            return layers[-1]
        return layers[bisect.bisect_right(self._starts, position) - 1]

    @property
    def has_filters(self) -> bool:
        """Whether the graph carries changed-path Bloom filters this reader can use."""
        return any(layer.bloom_data for layer in self._layers)

    @property
    def filter_hashes(self) -> int:
        """How many hashes a key of these filters has."""
        return self._bloom_hashes

    def _position(self, binary: bytes) -> int | None:
        """The commit's position in the id table, or None when the graph does not hold it.

        Each layer's ids are sorted on their own: the newest layer is searched first.
        """
        for layer in reversed(self._layers):
            found = find_id(self._ids, 20 * layer.start, layer.fanout, binary)
            if found >= 0:
                return layer.start + found
        return None

    def _parent_positions(self, position: int) -> list[int]:
        """The positions of a commit's parents, in order, from its record and the edge list."""
        one, two = struct.unpack_from(">LL", self._data, position * 36 + 20)
        parents = [one] if one < GRAPH_PARENT_MISSING else []
        if two & GRAPH_EXTRA_EDGES_NEEDED:
            edges = self._layer(position).edges  # indexed within the commit's own layer
            edge = (two & ~GRAPH_EXTRA_EDGES_NEEDED) * 4
            while True:
                if edge + 4 > len(edges):
                    raise ValueError("a commit-graph edge list is cut short")
                (value,) = struct.unpack_from(">L", edges, edge)
                parents.append(value & ~GRAPH_LAST_EDGE)
                if value & GRAPH_LAST_EDGE:
                    break
                edge += 4
        elif two < GRAPH_PARENT_MISSING:
            parents.append(two)
        return parents

    def position(self, sha: str) -> int | None:
        """A commit's position in the graph (its id table), or None when it is not there."""
        return self._position(bytes.fromhex(sha))

    def tree_at(self, position: int) -> str:
        """The root tree id of the commit at a position."""
        at = position * 36
        return self._data[at : at + 20].hex()

    def when(self, position: int) -> int:
        """The committer time of the commit at a position."""
        high, low = struct.unpack_from(">LL", self._data, position * 36 + 28)
        return int(low | ((high & 0x3) << 32))

    @property
    def commit_data(self) -> bytes:
        """The ``CDAT`` table: 36 bytes a commit (tree, two parent words, generation, time)."""
        return self._data

    def parents_at(self, position: int) -> list[int]:
        """The positions of the parents of the commit at a position, in order."""
        parents = self._parent_positions(position)
        if any(parent >= self._count for parent in parents):
            raise ValueError("a commit-graph parent is out of range")
        return parents

    def unchanged_line(
        self, position: int, keys: tuple[tuple[int, ...], ...], stop: Container[object]
    ) -> tuple[list[int], int]:
        """The first parents down from a position whose filters rule the keys' path out.

        Returns the positions passed (each ruled out, its first parent taken next) and the
        one the line ends at: one in ``stop``, one with no parent, or one whose filter may
        hold the path.
        """
        passed: list[int] = []
        while position not in stop and self._filter_says(position, keys) is False:
            parents = self.parents_at(position)
            if not parents:
                break
            passed.append(position)
            position = parents[0]
        return passed, position

    def changed_at(self, position: int, keys: tuple[tuple[int, ...], ...]) -> bool:
        """Whether the commit at a position may have changed the keys' path (no filter: True)."""
        return self._filter_says(position, keys) is not False

    def _filter_says(self, position: int, keys: tuple[tuple[int, ...], ...]) -> bool | None:
        """The commit's own layer's filter on the keys: False rules the path out, None: none."""
        layer = self._layers[-1]  # the newest layer holds the most of a walk's commits
        if position < layer.start:
            layer = self._layers[bisect.bisect_right(self._starts, position) - 1]
        index = layer.bloom_index
        if not index:
            return None
        local = position - layer.start
        (end,) = struct.unpack_from(">L", index, 4 * local)
        start = struct.unpack_from(">L", index, 4 * local - 4)[0] if local else 0
        if end <= start:
            return None
        for one in keys:
            if bloom.contains(layer.bloom_data, 12 + start, 12 + end, one) is False:
                return False
        return True

    def first_before(self, binary: bytes, limit: int) -> str | None:
        """``git rev-list -1 --before=<limit> <commit>`` over the graph's own tables.

        Commits are taken newest first by committer date from a queue (equal dates in the
        order they were queued), every parent followed; the first dated at or before
        ``limit`` is the answer (``""`` when there is none). None when the graph does not
        hold the commit. Positions and dates are read in place, no id is decoded on the way.

        That walk takes every commit after ``limit`` reachable through such commits before
        it takes any other, so its answer is the newest of the commits met at that edge:
        these are found without a queue (:meth:`_edge_before`), and only when two of them
        share the newest date, which the queue's order decides, is the queue walked.
        """
        start = self._position(binary)
        if start is None:
            return None
        found = self._edge_before(start, limit)
        if found is not None:
            return found
        return self._walk_before(start, limit)

    def _edge_before(self, start: int, limit: int) -> str | None:
        """The newest commit at or before ``limit`` past the commits after it from ``start``.

        ``""`` when there is none; None when two share the newest date.
        """
        data, unpack = self._data, struct.unpack_from
        seen = {start}
        stack = [start]
        best, best_time, tied = -1, -1, False
        while stack:
            position = stack.pop()
            one, two, high, low = unpack(">LLLL", data, position * 36 + 20)
            when = low | ((high & 0x3) << 32)
            if when <= limit:
                if when > best_time:
                    best, best_time, tied = position, when, False
                elif when == best_time:
                    tied = True
                continue
            if two != GRAPH_PARENT_MISSING:
                parents = self._merge_parents(position, one, two)
            else:
                parents = (one,) if one < GRAPH_PARENT_MISSING else ()
            for parent in parents:
                if parent not in seen:
                    seen.add(parent)
                    stack.append(parent)
        if tied:
            return None
        return self.id_at(best) if best >= 0 else ""

    def _walk_before(self, start: int, limit: int) -> str:
        """:meth:`first_before` by the queue itself."""
        data, unpack = self._data, struct.unpack_from
        pop, push = heapq.heappop, heapq.heappush
        # A queued commit carries its two parent words, read with its date in one unpack (a
        # parent past the table fails it: ``struct.error``, a damaged graph).
        one, two, high, low = unpack(">LLLL", data, start * 36 + 20)
        queue: list[tuple[int, int, int, int, int]] = [
            (-(low | ((high & 0x3) << 32)), 0, start, one, two)
        ]
        seen = {start}
        counter = 0
        while queue:
            item: tuple[int, int, int, int, int] | None = pop(queue)
            while item is not None:
                neg_time, _n, position, one, two = item
                if -neg_time <= limit:
                    return self.id_at(position)
                item = None
                if two != GRAPH_PARENT_MISSING:  # a merge: every new parent queued
                    for parent in self._merge_parents(position, one, two):
                        if parent in seen:
                            continue
                        seen.add(parent)
                        counter += 1
                        first, second, high, low = unpack(">LLLL", data, parent * 36 + 20)
                        push(queue, (-(low | ((high & 0x3) << 32)), counter, parent, first, second))
                elif one < GRAPH_PARENT_MISSING and one not in seen:
                    seen.add(one)
                    counter += 1
                    first, second, high, low = unpack(">LLLL", data, one * 36 + 20)
                    queued = (-(low | ((high & 0x3) << 32)), counter, one, first, second)
                    if not queue or queued < queue[0]:
                        item = queued  # it would be taken next: no need to queue it
                    else:
                        push(queue, queued)
        return ""

    def _merge_parents(self, position: int, one: int, two: int) -> tuple[int, ...] | list[int]:
        """The parents of a merge from its two parent words (an octopus's from the edge list)."""
        if two & GRAPH_EXTRA_EDGES_NEEDED:
            return self._parent_positions(position)
        return (one, two) if one < GRAPH_PARENT_MISSING else (two,)

    def id_at(self, index: int) -> str:
        """The commit id at a position."""
        if not 0 <= index < self._count:
            raise ValueError("a commit-graph parent is out of range")
        return self._ids[index * 20 : index * 20 + 20].hex()

    def walk_record(self, binary: bytes) -> tuple[str, tuple[str, ...], int] | None:
        """Root tree, parents and committer time of a commit, or None when not in the graph."""
        position = self._position(binary)
        if position is None:
            return None
        at = position * 36
        tree = self._data[at : at + 20].hex()
        high, low_time = struct.unpack_from(">LL", self._data, at + 28)
        parents = tuple(self.id_at(parent) for parent in self._parent_positions(position))
        return tree, parents, low_time | ((high & 0x3) << 32)


def graph_file(path: str) -> tuple[LazyCommitGraph, int, bytes] | None:
    """One commit-graph file, its header's count of base layers, and its checksum.

    The checksum is the file's name in a chain. None when it is missing or unusable.
    """
    try:
        with open(path, "rb") as handle:
            graph = LazyCommitGraph.from_file(handle)
            handle.seek(7)
            bases = handle.read(1)[0]
            handle.seek(-20, os.SEEK_END)
            checksum = handle.read(20)
    except (OSError, ValueError, KeyError, IndexError, struct.error):
        return None  # a missing or damaged commit-graph only costs speed
    return (graph, bases, checksum) if isinstance(graph, LazyCommitGraph) else None


def read_commit_graph(info: str) -> LazyCommitGraph | None:
    """The commit-graph of the object directory whose ``info/`` is given, as git finds it.

    ``info/commit-graph`` when it reads, else the chain ``info/commit-graphs/commit-graph-chain``
    names, base first, each ``graph-<checksum>.graph`` stacked on those before it. A layer is
    taken only if its checksum is its name and its header and ``BASE`` chunk name the layers
    below it;
    the chain is cut at the first that is not (git keeps the layers below a bad one too: every
    ancestor of a commit a layer holds is in that layer or below).
    """
    single = graph_file(os.path.join(info, "commit-graph"))
    if single is not None and single[1] == 0:
        return single[0]
    folder = os.path.join(info, "commit-graphs")
    try:
        with open(os.path.join(folder, "commit-graph-chain"), "rb") as handle:
            names = handle.read(1 << 20).split()
    except OSError:
        return None
    layers: list[LazyCommitGraph] = []
    below = b""
    for name in names:
        if not _HEX40.fullmatch(name):
            break
        found = graph_file(os.path.join(folder, f"graph-{name.decode('ascii')}.graph"))
        if found is None:
            break
        layer, count, checksum = found
        bases = layer.chunks.get(CHUNK_BASE_GRAPHS_LIST)
        if checksum.hex().encode("ascii") != name or 20 * count != len(below):
            break
        if below and (bases is None or bases.data[: len(below)] != below):
            break
        layers.append(layer)
        below += checksum
    if len(layers) > 1:
        layers[-1].stack_on(layers[:-1])
    return layers[-1] if layers else None


class GitRepo:
    """A read-only handle on one git repository, safe to share between threads.

    Use :func:`open_repo` to make one; close it (or use it as a context manager) to release
    the pack files. All methods take full 40-hex object ids, never client text.

    Attributes:
        path: The real path of the repository's git directory — the cache key.
    """

    def __init__(self, repo: Repo) -> None:
        self._repo = repo
        self._lock = threading.RLock()
        self.path = os.path.realpath(repo.commondir())
        self.worktree: str | None = None if repo.bare else os.path.realpath(repo.path)
        try:
            self._packs: list[Pack] = list(repo.object_store.packs)
        except OSError as exc:
            raise GitError(f"the packs could not be read: {exc.__class__.__name__}") from exc
        self._graph: LazyCommitGraph | None = None
        self._graph_read = False
        self._bases: dict[tuple[int, int], tuple[int, bytes]] = {}
        self._indexes: list[PackIndexReader | None] | None = None
        self._tables: list[memoryview | None] | None = None
        self._walked: dict[str, tuple[str, tuple[str, ...], int]] = {}
        self._base_bytes = 0
        self._reads = 0
        self._refs: tuple[tuple[object, ...], dict[str, str]] | None = None
        for pack in self._packs:
            with contextlib.suppress(AttributeError, OSError, ValueError):
                pack.data._init_offset_cache(DULWICH_BASE_CACHE_BYTES)

    # -- life cycle -----------------------------------------------------------------------

    def close(self) -> None:
        """Release the pack files."""
        with self._lock:
            self._repo.close()

    def __enter__(self) -> GitRepo:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- raw access (under the lock) -------------------------------------------------------

    def _locate(self, binary: bytes) -> tuple[Pack, int] | None:
        """The pack holding an object and its offset there, straight through the pack indexes.

        The object store's own lookup also re-checks for a multi-pack index and pack limits on
        every call, which a walk over thousands of objects pays thousands of times.
        """
        if self._indexes is None:
            self._indexes = [self._index_reader(pack) for pack in self._packs]
        for pack, reader in zip(self._packs, self._indexes, strict=True):
            if reader is not None:
                offset = reader.offset(binary)
                if offset is not None:
                    return pack, offset
                continue
            try:
                return pack, pack.index.object_offset(RawObjectID(binary))
            except (KeyError, PackFileDisappeared):
                continue
        return None

    @staticmethod
    def _index_reader(pack: Pack) -> PackIndexReader | None:
        """A direct reader over the pack's mapped index, or None to use dulwich's lookup."""
        try:
            index = pack.index
            if not isinstance(index, PackIndex2):
                return None
            return PackIndexReader(index._contents)
        except (AttributeError, ValueError, struct.error, OSError):
            return None

    def _read_at(self, pack: Pack, offset: int, depth: int = 0) -> tuple[int, bytes]:
        """The type number and content of the pack entry at ``offset``, deltas applied.

        Whole objects are inflated straight from the pack's mapped bytes; a delta chain is
        followed down to its base through the entry headers, the base (or the nearest resolved
        link, kept in a small per-handle cache) inflated once and the deltas applied upwards.
        Every link is kept, the object itself included: a history walk reads a file's versions
        one after another, and each is likely the base of another's delta.
        """
        buf = pack.data._buffer()
        chain: list[tuple[int, int, int]] = []  # (offset, data position, inflated size)
        type_num, data = self._chain_down(pack, buf, offset, depth, chain)
        for link_at, pos, size in reversed(chain):
            data = b"".join(apply_delta(data, inflate(buf, pos, size)))
            self._keep_base(pack, link_at, type_num, data)
        return type_num, data

    def _chain_down(
        self,
        pack: Pack,
        buf: bytes | mmap.mmap,
        offset: int,
        depth: int,
        chain: list[tuple[int, int, int]],
    ) -> tuple[int, bytes]:
        """Follow the delta chain from ``offset`` to its base: the base's type and content.

        Each delta met is appended to ``chain`` as (offset, data position, inflated size),
        newest first; the walk stops at a whole object, a cached link or a ref-delta's base.

        Raises:
            ValueError: the chain is too deep, a base offset is bad or an entry type unknown.
        """
        at = offset
        while True:
            cached = self._bases.pop((id(pack), at), None)
            if cached is not None:
                self._bases[(id(pack), at)] = cached  # the most recently used now
                return cached
            type_num, size, pos = entry_header(buf, at)
            if type_num <= TAG:
                data = inflate(buf, pos, size)
                if chain:
                    self._keep_base(pack, at, type_num, data)
                return type_num, data
            if len(chain) + depth >= MAX_DELTA_DEPTH:
                raise ValueError("delta chain too deep")
            if type_num == OFS_DELTA:
                pos, back = _ofs_base(buf, pos)
                chain.append((at, pos, size))
                at -= back
                if back <= 0 or at < 12:
                    raise ValueError("bad delta base offset")
            elif type_num == REF_DELTA:
                base_id = bytes(buf[pos : pos + 20])
                chain.append((at, pos + 20, size))
                return self._read_binary(base_id, depth + len(chain))
            else:
                raise ValueError(f"unknown pack entry type {type_num}")

    def _keep_base(self, pack: Pack, offset: int, type_num: int, data: bytes) -> None:
        """Keep a resolved link of a delta chain, dropping the least recently used past the bound.

        A history walk reads a file's versions newest first, each the base of the next one's
        delta: dropping every link at once made the next versions resolve their whole chain
        again from its full object.
        """
        bases = self._bases
        old = bases.pop((id(pack), offset), None)
        if old is not None:
            self._base_bytes -= len(old[1])
        bases[(id(pack), offset)] = (type_num, data)
        self._base_bytes += len(data)
        while self._base_bytes > BASE_CACHE_BYTES and bases:
            dropped = bases.pop(next(iter(bases)))
            self._base_bytes -= len(dropped[1])

    def trim(self) -> None:
        """Release the pages of the mapped packs and indexes this process holds (lock held).

        The files are mapped whole: every page a read touches stays resident in this process
        (its ``RssFile``) until released, up to the size of the packs (hundreds of MiB for a
        large repository). Released pages stay in the kernel's page cache; the next read of
        one maps it again without reading the disk.
        """
        for pack in self._packs:
            for mapped in (
                getattr(pack.data, "_contents", None),
                getattr(pack.index, "_contents", None),
            ):
                if isinstance(mapped, mmap.mmap) and not mapped.closed:
                    with contextlib.suppress(OSError, ValueError):
                        mapped.madvise(mmap.MADV_DONTNEED)

    def _touched(self, objects: int = 1) -> None:
        """``objects`` were read from the mapped files (lock held): trim when too many pages are.

        Every :data:`CHECK_EVERY_READS` objects, the process's resident file pages are read
        from ``/proc/self/statm``; past :data:`RESIDENT_FILE_BYTES` this handle's are released.
        """
        self._reads += objects
        if self._reads < CHECK_EVERY_READS:
            return
        self._reads = 0
        if resident_file_bytes() > RESIDENT_FILE_BYTES:
            self.trim()

    def _read_binary(self, binary: bytes, depth: int = 0) -> tuple[int, bytes]:
        """Type number and content of the object with the binary id (lock held)."""
        self._touched()
        found = self._locate(binary)
        if found is not None:
            pack, offset = found
            try:
                return self._read_at(pack, offset, depth)
            except (AttributeError, ValueError, IndexError, RecursionError, zlib.error):
                # Anything the direct reader does not understand goes through dulwich's own.
                return pack.get_raw(RawObjectID(binary))
        return self._repo.object_store.get_raw(ObjectID(binary.hex().encode("ascii")))

    def raw(self, sha: str) -> tuple[int, bytes]:
        """The type number and content of an object.

        Raises:
            GitError: the object is missing or unreadable.
        """
        return self._locked(sha, self._read_binary)

    def _raw_as(self, sha: str, want: int) -> bytes:
        """The content of object ``sha``, which must be of type ``want``.

        Raises:
            GitError: the object is missing or unreadable, or is of another type.
        """
        type_num, data = self.raw(sha)
        if type_num != want:
            raise GitError(
                f"object {sha} is a {TYPE_NAMES.get(type_num, '?')}, not a {TYPE_NAMES[want]}"
            )
        return data

    def _locked(self, sha: str, read: Callable[[bytes], _T]) -> _T:
        """``read`` of the object ``sha`` under the handle's lock, its failures as GitError."""
        try:
            binary = bytes.fromhex(sha)
        except ValueError as exc:
            raise GitError(f"not an object id: {sha!r}") from exc
        try:
            with self._lock:
                self._touched()
                return read(binary)
        except KeyError as exc:
            raise GitError(f"object {sha} is missing from the repository") from exc
        except (OSError, ValueError, AssertionError) as exc:
            raise GitError(f"object {sha} could not be read: {exc.__class__.__name__}") from exc

    def _header_at(self, pack: Pack, offset: int, depth: int = 0) -> tuple[int, int]:
        """Type number and size of the pack entry at ``offset``, without inflating it.

        A whole object's header holds both; a delta's size is the target size at the head of
        its (inflated) delta data, and its type is its base's, found through the base headers.
        """
        buf = pack.data._buffer()
        type_num, size, pos = entry_header(buf, offset)
        if type_num <= TAG:
            return type_num, size
        at = offset
        target = -1
        for _ in range(MAX_DELTA_DEPTH - depth):
            if target < 0:
                target = delta_target_size(buf, pos, type_num)
            if type_num == OFS_DELTA:
                pos, back = _ofs_base(buf, pos)
                at -= back
                if back <= 0 or at < 12:
                    raise ValueError("bad delta base offset")
                type_num, _size, pos = entry_header(buf, at)
                if type_num <= TAG:
                    return type_num, target
            elif type_num == REF_DELTA:
                base_id = bytes(buf[pos : pos + 20])
                return self._header_binary(base_id, depth + 1)[0], target
            else:
                raise ValueError(f"unknown pack entry type {type_num}")
        raise ValueError("delta chain too deep")

    def _header_binary(self, binary: bytes, depth: int = 0) -> tuple[int, int]:
        found = self._locate(binary)
        if found is not None:
            try:
                return self._header_at(*found, depth)
            except (AttributeError, ValueError, IndexError, RecursionError, zlib.error):
                pass
        type_num, data = self._read_binary(binary, depth)
        return type_num, len(data)

    def header(self, sha: str) -> tuple[int, int]:
        """The type number and size of an object, read from its pack header when packed.

        Raises:
            GitError: the object is missing or unreadable.
        """
        return self._locked(sha, self._header_binary)

    def contains(self, sha: str) -> bool:
        """Whether the object store holds ``sha`` (a full 40-hex id)."""
        with self._lock:
            return ObjectID(sha.encode("ascii")) in self._repo.object_store

    def iter_prefix(self, prefix: str, limit: int = 64) -> list[str]:
        """Up to ``limit`` object ids starting with the hex ``prefix``."""
        found: list[str] = []
        with self._lock:
            for sha in self._repo.object_store.iter_prefix(prefix.encode("ascii")):
                text = sha.decode("ascii")
                if text not in found:
                    found.append(text)
                if len(found) >= limit:
                    break
        return found

    def head(self) -> str | None:
        """The id HEAD points at, read from its files alone; None when that is not plain.

        HEAD names a branch (``ref: refs/heads/…``) whose loose file or ``packed-refs`` line
        holds the id, or holds an id itself. Anything else (a longer chain, a name that is not
        a well-formed ``refs/`` name, an unreadable file) is None, and :meth:`refs` answers.
        A repository with a thousand packed tags is thereby not read whole to find HEAD.
        """
        try:
            with open(os.path.join(self._repo.controldir(), "HEAD"), "rb") as handle:
                text = handle.read(4096).strip()
            if _HEX40.fullmatch(text):
                return text.decode("ascii")
            if not text.startswith(b"ref: "):
                return None
            name = text[5:].strip()
            if not name.startswith(b"refs/heads/") or not check_ref_format(Ref(name)):
                return None
            common = self._repo.commondir()
            try:
                with open(os.path.join(common, name.decode("utf-8")), "rb") as handle:
                    text = handle.read(4096).strip()
                return text.decode("ascii") if _HEX40.fullmatch(text) else None
            except FileNotFoundError:
                pass
            with open(os.path.join(common, "packed-refs"), "rb") as handle:
                packed = handle.read()
        except (OSError, UnicodeDecodeError):
            return None
        found = re.search(rb"^([0-9a-f]{40}) " + re.escape(name) + rb"$", packed, re.M)
        return found.group(1).decode("ascii") if found else None

    def refs_stamp(self) -> tuple[object, ...] | None:
        """What the ref store looks like on disk: equal stamps, equal refs (None: unknown).

        The ``HEAD`` files, ``packed-refs`` and every loose ref file under ``refs/``, each by
        inode, size and modification time: git and dulwich write a ref by renaming a new file
        over it, so a moved ref has a new inode even within one tick of the clock.
        """
        common = self._repo.commondir()
        paths = [os.path.join(self._repo.controldir(), "HEAD"), os.path.join(common, "HEAD")]
        paths.append(os.path.join(common, "packed-refs"))
        stamp: list[object] = []
        try:
            for root, _dirs, files in os.walk(os.path.join(common, "refs")):
                paths.extend(os.path.join(root, name) for name in files)
            for path in paths:
                try:
                    found = os.stat(path)
                except FileNotFoundError:
                    stamp.append((path, None))
                    continue
                stamp.append((path, found.st_ino, found.st_size, found.st_mtime_ns))
        except OSError:
            return None
        return tuple(stamp)

    def refs(self) -> dict[str, str]:
        """Every ref's full name → the id it points at (symbolic refs followed).

        Ref names are only ever read from the ref store here, never built from client text.
        The answer is kept while the ref store's files are as they were (:meth:`refs_stamp`):
        a repository with thousands of refs (a host's pull-request refs) is read once, not
        on every resolve.
        """
        stamp = self.refs_stamp()
        kept = self._refs
        if stamp is not None and kept is not None and kept[0] == stamp:
            return dict(kept[1])
        out = self._read_refs()
        self._refs = (stamp, out) if stamp is not None else None
        return dict(out)

    def _read_refs(self) -> dict[str, str]:
        """The refs from the store: loose ones (and HEAD) followed, packed ones as listed.

        A packed ref shadowed by no loose file is taken from ``packed-refs`` directly rather
        than by trying its loose file first (on git/git: a thousand failed opens a read).
        """
        out: dict[str, str] = {}
        with self._lock:
            container = self._repo.refs
            try:
                names = container.allkeys()
                packed = container.get_packed_refs()
                loose = set(getattr(container, "_iter_loose_refs", lambda: names)())
            except OSError as exc:
                raise GitError(f"refs could not be read: {exc.__class__.__name__}") from exc
            for name in names:
                try:
                    if name in packed and name not in loose and name != b"HEAD":
                        target = packed[name]
                    else:
                        target = container[Ref(name)]
                except (KeyError, OSError, ValueError):
                    continue
                try:
                    out[name.decode("utf-8")] = target.decode("ascii")
                except UnicodeDecodeError:
                    continue
        return out

    # -- parsed, cached objects -----------------------------------------------------------

    def object_type(self, sha: str) -> int:
        """The type number of an object (cached; read from its pack header when packed)."""
        return self._header_field(sha, "type")

    def _header_field(self, sha: str, field: Literal["type", "size"]) -> int:
        """One field of an object's header, cached; a miss reads the header and caches both."""
        key = (self.path, field, sha)
        cached = OBJECTS.get(key)
        if cached is not None:
            return int(cached)
        type_num, size = self.header(sha)
        fields = {"type": type_num, "size": size}
        other = "size" if field == "type" else "type"
        OBJECTS.put((self.path, other, sha), fields[other], 64)
        return int(OBJECTS.put(key, fields[field], 64))

    def commit(self, sha: str) -> CommitInfo:
        """The parsed commit ``sha``.

        Raises:
            GitError: it is missing or is not a commit.
        """
        key = (self.path, "commit", sha)
        info = OBJECTS.get(key)
        if info is not None:
            return info  # type: ignore[no-any-return]
        data = self._raw_as(sha, COMMIT)
        parsed = parse_commit(data)
        # what Python holds: the record, its id strings, its parents' tuple, name and subject
        size = 420 + 2 * (len(parsed.subject) + len(parsed.author_name)) + 100 * len(parsed.parents)
        return OBJECTS.put(key, parsed, size)

    def walk_info(self, sha: str) -> tuple[str, tuple[str, ...], int]:
        """A commit's root tree, parents and committer time — what history walks need.

        Read from the repository's commit-graph file when it has one (no object is inflated),
        else from the commit's own header lines, without parsing the rest of it. Kept per
        handle: a walk asks for each commit several times.
        """
        known = self._walked.get(sha)
        if known is not None:
            return known
        if not self._graph_read:
            self._read_graph()
        found: tuple[str, tuple[str, ...], int] | None = None
        if self._graph is not None:
            try:
                found = self._graph.walk_record(bytes.fromhex(sha))
            except (ValueError, struct.error):
                found = None  # a damaged record: read the commit itself
        if found is None:
            cached = OBJECTS.get((self.path, "commit", sha))
            if cached is not None:
                found = (cached.tree, cached.parents, cached.commit_time)
            else:
                data = self._raw_as(sha, COMMIT)
                found = parse_walk(data)
        if len(self._walked) >= WALKED_LIMIT:
            self._walked.clear()
        self._walked[sha] = found
        return found

    def graph(self) -> LazyCommitGraph | None:
        """The repository's commit-graph, read once per handle; None without one."""
        if not self._graph_read:
            self._read_graph()
        return self._graph

    def first_before(self, sha: str, limit: int) -> str | None:
        """The commit-graph's answer to :meth:`LazyCommitGraph.first_before`, if it has one."""
        graph = self.graph()
        if graph is None:
            return None
        try:
            return graph.first_before(bytes.fromhex(sha), limit)
        except (ValueError, struct.error, IndexError):
            return None  # a damaged graph: the commits themselves are read

    def path_keys(self, path: str, prefixes: bool = True) -> tuple[tuple[int, ...], ...] | None:
        """The Bloom keys of ``path`` (and its leading directories), or None without filters."""
        graph = self.graph()
        if graph is None or not graph.has_filters:
            return None
        hashes = graph.filter_hashes
        if prefixes:
            return bloom.keys(path, hashes)
        return (bloom.key(path.encode("utf-8", "surrogateescape"), hashes),)

    def maybe_changed(self, sha: str, keys: tuple[tuple[int, ...], ...] | None) -> bool:
        """Whether commit ``sha`` may have changed the path whose Bloom ``keys`` are given.

        False only when the commit-graph's filter shows ``sha`` left the path as its first
        parent had it (see :mod:`~tmsite.gitstore.bloom`); True means the trees must tell.
        """
        graph = self._graph
        if keys is None or graph is None:
            return True
        try:
            at = graph._position(bytes.fromhex(sha))
            return at is None or graph.changed_at(at, keys)
        except (ValueError, struct.error, IndexError):
            return True  # a damaged filter only costs speed

    def _read_graph(self) -> None:
        """Open the commit-graph (one file or a split chain), read lazily."""
        with self._lock:
            if self._graph_read:
                return
            self._graph_read = True
            store = self._repo.object_store
            if not getattr(store, "_use_commit_graph", True):
                return  # core.commitGraph = false
            self._graph = read_commit_graph(os.path.join(getattr(store, "path", ""), "info"))

    def tree_entry(self, tree: str, name: bytes) -> tuple[int, str] | None:
        """The ``(mode, id)`` of entry ``name`` in tree ``tree``, or None.

        Parsed cached trees answer from the cache; otherwise the raw tree is scanned only up
        to the name, without building the whole tree. Hostile names are never asked for
        (:func:`~tmsite.gitstore.paths.normalise` refuses them), so none can be returned.

        Raises:
            GitError: ``tree`` is missing or is not a tree.
        """
        parsed = OBJECTS.get((self.path, "tree", tree))
        if parsed is not None:
            return parsed.get(name.decode("utf-8", "surrogateescape"))  # type: ignore[no-any-return]
        raw = self._raw_as(tree, TREE)
        return find_in_tree(raw, name)

    def tree(self, sha: str) -> TreeData:
        """The parsed tree ``sha`` (hostile names left out).

        Raises:
            GitError: it is missing or is not a tree.
        """
        key = (self.path, "tree", sha)
        data = OBJECTS.get(key)
        if data is not None:
            return data  # type: ignore[no-any-return]
        raw = self._raw_as(sha, TREE)
        parsed: TreeData = {}
        for name_b, mode, entry_sha in parse_tree(raw, 20):
            name = name_b.decode("utf-8", "surrogateescape")
            if is_hostile_name(name) or name in parsed:
                continue  # a repeated name (only a crafted tree has one): the first counts
            parsed[name] = (mode, entry_sha.decode("ascii"))
        # each entry: its name, a (mode, id) tuple, the id's string and the dict's slot
        return OBJECTS.put(key, parsed, len(raw) + 300 * len(parsed) + 100)

    def blob(self, sha: str) -> bytes:
        """The content of blob ``sha`` (small blobs cached).

        Raises:
            GitError: it is missing or is not a blob.
        """
        key = (self.path, "blob", sha)
        data = OBJECTS.get(key)
        if data is not None:
            return data  # type: ignore[no-any-return]
        raw = self._raw_as(sha, BLOB)
        OBJECTS.put((self.path, "size", sha), len(raw), 64)
        if len(raw) <= CACHED_BLOB_BYTES:
            OBJECTS.put(key, raw, len(raw) + 64)
        return raw

    def sizes(self, shas: list[str]) -> list[int]:
        """The sizes of many objects at once, under one hold of the lock.

        A listing asks for thousands. A packed object's size comes from its pack's size table
        where ``tm_git maintain`` wrote one, else from its pack entry header, read in place (a
        delta's from the head of its delta data); the others' from the cache, else as
        :meth:`header` finds them.

        Raises:
            GitError: an object is missing or unreadable.
        """
        out = [-1] * len(shas)
        try:
            with self._lock:
                self._touched(len(shas))
                direct = self._direct_indexes()
                tables = self._size_tables(direct)
                for at, sha in enumerate(shas):
                    binary = bytes.fromhex(sha)
                    for (reader, buf), table in zip(direct, tables, strict=True):
                        index = reader.index(binary)
                        if index >= 0:
                            known = UNKNOWN_SIZE if table is None else table[index]
                            out[at] = (
                                known
                                if known != UNKNOWN_SIZE
                                else packed_size(buf, reader.offset_at(index))
                            )
                            break
                    if out[at] >= 0:
                        continue
                    cached = OBJECTS.get((self.path, "size", sha))
                    out[at] = int(cached) if cached is not None else self._header_binary(binary)[1]
        except KeyError as exc:
            raise GitError("an object is missing from the repository") from exc
        except (OSError, ValueError, AssertionError, IndexError) as exc:
            raise GitError(f"an object could not be read: {exc.__class__.__name__}") from exc
        return out

    def pack_indexes(self) -> list[tuple[PackIndexReader, bytes | mmap.mmap]]:
        """Each pack's index reader with the pack's mapped bytes.

        Empty when any pack's index cannot be read directly.
        """
        with self._lock:
            return self._direct_indexes()

    def size_tables(self) -> list[memoryview | None]:
        """The size table of each pack :meth:`pack_indexes` gives, None where it has none."""
        with self._lock:
            return self._size_tables(self._direct_indexes())

    def _size_tables(
        self, direct: list[tuple[PackIndexReader, bytes | mmap.mmap]]
    ) -> list[memoryview | None]:
        """The size tables of ``direct``'s packs (lock held), found on the first listing.

        Not when the handle opens: a read of one object never needs them.

        A table found is kept in the object cache by its path (named by the pack's checksum,
        its content never changes), so later handles take it without reading the file; a pack
        without one is looked at again by each handle, so a table written meanwhile is read.
        """
        if self._tables is None:
            self._tables = []
            for reader, _buf in direct:
                path = size_table_path(self.objects_path, reader.pack_checksum)
                table = OBJECTS.get(("size-table", path))
                if table is None:
                    table = read_size_table(path, reader.count)
                    if table is not None:
                        OBJECTS.put(("size-table", path), table, table.nbytes)
                self._tables.append(table)
        return self._tables

    @property
    def objects_path(self) -> str:
        """The repository's object directory."""
        return str(getattr(self._repo.object_store, "path", ""))

    def _direct_indexes(self) -> list[tuple[PackIndexReader, bytes | mmap.mmap]]:
        """Each pack's index reader with its mapped bytes (lock held); empty if any is unusable.

        Empty means every object is found the long way, since an object may sit in a pack
        whose index this reader cannot search.
        """
        if self._indexes is None:
            self._indexes = [self._index_reader(pack) for pack in self._packs]
        try:
            direct = [
                (reader, pack.data._buffer())
                for pack, reader in zip(self._packs, self._indexes, strict=True)
                if reader is not None
            ]
        except (AttributeError, ValueError):
            direct = []
        if len(direct) != len(self._packs):
            direct = []  # an index this reader cannot search: every object the long way
        return direct

    def size(self, sha: str) -> int:
        """The size in bytes of object ``sha`` (cached once known; from the pack header)."""
        return self._header_field(sha, "size")


def packed_size(buf: bytes | mmap.mmap, offset: int) -> int:
    """The size of the object at a pack offset from its entry header, -1 where it cannot tell.

    A whole object's header holds it; a delta's is the target size at the head of its delta
    data (its chain of bases is not walked: only their type lies there).
    """
    try:
        type_num, size, pos = entry_header(buf, offset)
        return size if type_num <= TAG else delta_target_size(buf, pos, type_num)
    except (ValueError, IndexError, zlib.error):
        return -1


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def resident_file_bytes() -> int:
    """This process's resident file-backed (and shared) pages, in bytes; 0 when unknown."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[2]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


def open_repo(path: str | os.PathLike[str]) -> GitRepo:
    """Open the repository at ``path`` (a work tree or a bare repository) read-only.

    Raises:
        GitError: there is no readable repository there.
    """
    try:
        repo = Repo(os.fspath(path))
    except NotGitRepository as exc:
        raise GitError("not a git repository") from exc
    except OSError as exc:
        raise GitError(f"the repository could not be opened: {exc.__class__.__name__}") from exc
    return GitRepo(repo)
