"""Writing a repository's commit-graph, with changed-path Bloom filters, as git writes it.

``git commit-graph write --reachable --changed-paths`` in Python over the handle's reader: every
commit reachable from a ref, sorted by id, with its root tree, parents, topological level
(generation number version 1) and committer date (``OIDF``, ``OIDL``, ``CDAT``, ``EDGE``), and
per commit a Bloom filter of the paths changed against its first parent (``BIDX``, ``BDAT``):
each changed file and every directory leading to one, ten bits per path, seven hashes (git's
defaults, :mod:`tmsite.gitstore.bloom`), a commit changing more than 512 paths marked "too
many" (one byte, every bit set) as git marks it. The file is the format git documents
(``gitformat-commit-graph``) and git 2.39 reads and verifies it; its filters are the bytes git
writes for the same commits. It replaces ``objects/info/commit-graph`` atomically, and, as
git's own whole write does, then removes a split chain (``info/commit-graphs/``) it supersedes:
every commit the chain holds is in the new file, which git and this reader take first.

Where a graph is there already, the commits it lacks are written as a new layer of a split
chain instead, the layer ``git commit-graph write --split`` writes byte for byte (a ``BASE``
chunk naming the layers below, parent positions and levels counted across them); a single
file becomes the chain's base under its checksum first, as git renames it.

dulwich's own writer is not used: it computes generations recursively and writes chunk
offsets git refuses ("improper chunk offset(s)").

Beside the graph, :func:`write_size_tables` gives each pack a table of its objects' sizes
(:func:`~tmsite.gitstore.repo.read_size_table`), so that a listing reads a blob's size in one
step rather than from its entry, inflating the head of a delta; a table whose pack is gone is
removed.

Spec: ANY2.
"""

from __future__ import annotations

import hashlib
import os
import re
import struct
import sys
import tempfile
from array import array
from dataclasses import dataclass
from pathlib import Path

from dulwich.commit_graph import GRAPH_EXTRA_EDGES_NEEDED, GRAPH_LAST_EDGE, GRAPH_PARENT_MISSING
from dulwich.objects import parse_tree

from tmsite.gitstore import bloom
from tmsite.gitstore.bloom import MASK
from tmsite.gitstore.errors import GitError
from tmsite.gitstore.repo import (
    COMMIT,
    SIZE_TABLE_HEADER,
    SIZE_TABLE_MAGIC,
    TAG,
    TREE,
    UNKNOWN_SIZE,
    GitRepo,
    LazyCommitGraph,
    graph_file,
    packed_size,
    parse_walk,
    read_commit_graph,
    size_table_path,
)
from tmsite.gitstore.tree import is_tree_mode

#: git's ``commitGraph.maxNewFilters``-free defaults (``bloom.h``).
BITS_PER_ENTRY = 10
MAX_CHANGED_PATHS = 512
MAX_LEVEL = 0x3FFFFFFF


@dataclass(frozen=True)
class Written:
    """What one write did.

    Attributes:
        path: The commit-graph file written; None when the graph held every commit.
        commits: Commits in it.
        filters: Commits given a Bloom filter (0 when written without them).
        too_many: Of those, commits marked as changing more than 512 paths.
    """

    path: Path | None
    commits: int
    filters: int
    too_many: int


def _reachable(
    repo: GitRepo, held: LazyCommitGraph | None = None
) -> dict[str, tuple[str, tuple[str, ...], int]]:
    """Every commit reachable from a ref that ``held`` lacks: id → (tree, parents, time)."""
    todo: list[str] = []
    for target in repo.refs().values():
        sha = target
        for _ in range(16):  # a tag of a tag…, peeled a bounded number of times
            kind, data = repo.raw(sha)
            if kind != TAG:
                break
            sha = data[7:47].decode("ascii")
        if repo.object_type(sha) == COMMIT:
            todo.append(sha)
    found: dict[str, tuple[str, tuple[str, ...], int]] = {}
    while todo:
        sha = todo.pop()
        if sha in found or (held is not None and held.position(sha) is not None):
            continue  # every ancestor of a commit a graph holds is in it too
        kind, data = repo.raw(sha)
        if kind != COMMIT:
            raise GitError(f"object {sha} is not a commit")
        found[sha] = parse_walk(data)
        todo.extend(p for p in found[sha][1] if p not in found)
    return found


def _levels(
    commits: dict[str, tuple[str, tuple[str, ...], int]], below: dict[str, int] | None = None
) -> dict[str, int]:
    """Topological levels: 1 at a root, else one more than the highest parent's (no recursion).

    ``below`` holds the levels of parents in the layers below, which ``commits`` lacks.
    """
    level: dict[str, int] = dict(below or {})
    for start in commits:
        stack = [start]
        while stack:
            sha = stack[-1]
            if sha in level:
                stack.pop()
                continue
            waiting = [p for p in commits[sha][1] if p not in level and p in commits]
            if waiting:
                stack.extend(waiting)
                continue
            stack.pop()
            level[sha] = min(
                MAX_LEVEL, 1 + max((level.get(p, 0) for p in commits[sha][1]), default=0)
            )
    return {sha: level[sha] for sha in commits}


class _Differ:
    """The paths that differ between two root trees, as git's recursive tree diff lists them.

    Entries are compared as the tree objects hold them (name bytes, mode, id), every name
    included as git includes it, and only the entries that differ reach Python: the sets of a
    tree's entries are subtracted in C.
    """

    #: Trees' entries kept for the next commits: a commit's trees are mostly its parent's.
    KEPT = 1024

    def __init__(self, repo: GitRepo) -> None:
        self.repo = repo
        self.kept: dict[str, set[tuple[bytes, int, bytes]]] = {}

    def changed(self, old: str | None, new: str) -> tuple[int, set[bytes]]:
        """How many file entries differ, and their paths with every leading directory."""
        files: list[bytes] = []
        self._diff(old, new, b"", files)
        paths: set[bytes] = set()
        for path in files:
            while path and path not in paths:
                paths.add(path)
                path = path.rpartition(b"/")[0]
        return len(files), paths

    def _entries(self, tree: str | None) -> set[tuple[bytes, int, bytes]]:
        if tree is None:
            return set()
        entries = self.kept.get(tree)
        if entries is None:
            kind, raw = self.repo.raw(tree)
            if kind != TREE:
                raise GitError(f"{tree} is not a tree")
            entries = self.kept[tree] = set(parse_tree(raw, 20))
            if len(self.kept) > self.KEPT:
                del self.kept[next(iter(self.kept))]
        return entries

    def _diff(self, old: str | None, new: str | None, prefix: bytes, out: list[bytes]) -> None:
        if len(out) > MAX_CHANGED_PATHS:
            return
        before, after = self._entries(old), self._entries(new)
        gone = {name: (mode, sha) for name, mode, sha in before - after}
        came = {name: (mode, sha) for name, mode, sha in after - before}
        for name in gone.keys() | came.keys():
            one, two = gone.get(name), came.get(name)
            path = prefix + name
            one_tree = one is not None and is_tree_mode(one[0])
            two_tree = two is not None and is_tree_mode(two[0])
            if one_tree or two_tree:
                self._diff(
                    one[1].decode("ascii") if one is not None and one_tree else None,
                    two[1].decode("ascii") if two is not None and two_tree else None,
                    path + b"/",
                    out,
                )
            if (one is not None and not one_tree) or (two is not None and not two_tree):
                out.append(path)


def _filter(paths: set[bytes], hashes: int) -> bytes:
    """The Bloom filter of a set of paths, git's size: ten bits a path, whole bytes, ≥ 1."""
    length = max(1, (len(paths) * BITS_PER_ENTRY + 7) // 8)
    data = bytearray(length)
    bits = length * 8
    for path in paths:
        for h in bloom.key(path, hashes):
            at = h % bits
            data[at >> 3] |= 1 << (at & 7)
    return bytes(data)


def commit_graph_bytes(repo: GitRepo, *, filters: bool = True) -> tuple[bytes, int, int, int]:
    """The commit-graph file for ``repo``, and its counts (commits, filters, too many)."""
    return _graph_bytes(repo, _reachable(repo), None, [], filters)


def _graph_bytes(
    repo: GitRepo,
    commits: dict[str, tuple[str, tuple[str, ...], int]],
    base: LazyCommitGraph | None,
    base_names: list[str],
    filters: bool,
) -> tuple[bytes, int, int, int]:
    """One graph file of ``commits``, above ``base`` (the layers ``base_names`` name) if any.

    A layer's parent positions count the base's commits first, its levels go on from theirs,
    and its ``BASE`` chunk lists the base's layers, as git's ``--split`` writes a layer.
    """
    ids = sorted(commits)
    start = base.commit_count if base is not None else 0
    position = {sha: start + i for i, sha in enumerate(ids)}
    below: dict[str, int] = {}
    if base is not None:
        for sha in {p for _tree, parents, _when in commits.values() for p in parents}:
            at = base.position(sha)
            if at is not None:
                position[sha] = at
                below[sha] = base.level_at(at)
    chunks = _commit_chunks(ids, commits, position, _levels(commits, below))
    made = too_many = 0
    if filters:
        index, data, made, too_many = _filters(repo, ids, commits)
        chunks += [(b"BIDX", index), (b"BDAT", data)]
    if base_names:
        chunks.append((b"BASE", b"".join(bytes.fromhex(name) for name in base_names)))
    return _file(chunks, len(base_names)), len(ids), made, too_many


def _commit_chunks(
    ids: list[str],
    commits: dict[str, tuple[str, tuple[str, ...], int]],
    position: dict[str, int],
    level: dict[str, int],
) -> list[tuple[bytes, bytes]]:
    """``OIDF``, ``OIDL``, ``CDAT`` and, for octopus merges, ``EDGE``."""
    fanout = [0] * 256
    for sha in ids:
        fanout[int(sha[:2], 16)] += 1
    for i in range(1, 256):
        fanout[i] += fanout[i - 1]
    cdat = bytearray()
    edges: list[int] = []
    for sha in ids:
        tree, parents, when = commits[sha]
        known = [position[p] for p in parents if p in position]
        one = known[0] if known else GRAPH_PARENT_MISSING
        if len(known) <= 2:
            two = known[1] if len(known) == 2 else GRAPH_PARENT_MISSING
        else:
            two = GRAPH_EXTRA_EDGES_NEEDED | len(edges)
            edges.extend(known[1:-1])
            edges.append(known[-1] | GRAPH_LAST_EDGE)
        when = max(when, 0)
        cdat += bytes.fromhex(tree)
        cdat += struct.pack(">LLLL", one, two, (level[sha] << 2) | ((when >> 32) & 3), when & MASK)
    chunks = [
        (b"OIDF", struct.pack(">256L", *fanout)),
        (b"OIDL", b"".join(bytes.fromhex(sha) for sha in ids)),
        (b"CDAT", bytes(cdat)),
    ]
    if edges:
        chunks.append((b"EDGE", struct.pack(f">{len(edges)}L", *edges)))
    return chunks


def _filters(
    repo: GitRepo, ids: list[str], commits: dict[str, tuple[str, tuple[str, ...], int]]
) -> tuple[bytes, bytes, int, int]:
    differ = _Differ(repo)
    hashes = bloom.DEFAULT_HASHES
    index: list[int] = []
    body = bytearray(struct.pack(">LLL", 1, hashes, BITS_PER_ENTRY))
    made: dict[str, bytes] = {}
    for sha in sorted(ids, key=lambda sha: commits[sha][2]):  # oldest first: parents' trees kept
        tree, parents, _when = commits[sha]
        old = commits[parents[0]][0] if parents and parents[0] in commits else None
        if parents and old is None:
            old = parse_walk(repo.raw(parents[0])[1])[0]
        count, paths = differ.changed(old, tree)
        if count > MAX_CHANGED_PATHS or len(paths) > MAX_CHANGED_PATHS:
            made[sha] = b"\xff"
        else:
            made[sha] = _filter(paths, hashes)
    too_many = 0
    for sha in ids:
        body += made[sha]
        too_many += made[sha] == b"\xff"
        index.append(len(body) - 12)
    return struct.pack(f">{len(index)}L", *index), bytes(body), len(ids), too_many


def _file(chunks: list[tuple[bytes, bytes]], bases: int = 0) -> bytes:
    """Header, chunk table, chunks, and the SHA-1 of all of it.

    The table gives each chunk's offset from the file's start, then the end's.
    """
    head = b"CGPH" + bytes([1, 1, len(chunks), bases])
    offset = len(head) + 12 * (len(chunks) + 1)
    table = bytearray()
    for chunk_id, data in chunks:
        table += chunk_id + struct.pack(">Q", offset)
        offset += len(data)
    table += b"\0\0\0\0" + struct.pack(">Q", offset)
    content = head + bytes(table) + b"".join(data for _id, data in chunks)
    return content + hashlib.sha1(content, usedforsecurity=False).digest()


def write_commit_graph(repo: GitRepo, *, filters: bool = True, whole: bool = False) -> Written:
    """Write the commit-graph for every commit reachable from a ref.

    Where a graph is there already, only the commits it lacks are written, as a new layer of
    a split chain on top of it (a single file becomes the chain's base under its checksum,
    as git's ``--split`` does). Every commit goes into one new ``objects/info/commit-graph``,
    which supersedes any chain, when ``whole`` is asked, when the graph has no filters and
    filters are asked (or the other way), or when the new commits are more than half of the
    top layer's: so each layer is at most half the one below and a chain stays short.

    Raises:
        GitError: an object cannot be read, or the file cannot be written.
    """
    info = Path(repo.path) / "objects" / "info"
    current = None if whole else _current(info, filters)
    if current is not None:
        graph, names, single = current
        commits = _reachable(repo, graph)
        if not commits:
            return Written(None, 0, 0, 0)
        if 2 * len(commits) <= graph.layer_sizes[-1]:
            return _add_layer(repo, info, (graph, names, single), commits, filters)
    content, count, made, too_many = commit_graph_bytes(repo, filters=filters)
    target = info / "commit-graph"
    try:
        info.mkdir(parents=True, exist_ok=True)
        _write_file(target, content)
    except OSError as exc:
        raise GitError(f"the commit-graph could not be written: {exc}") from exc
    _drop_chain(info / "commit-graphs")
    return Written(target, count, made, too_many)


#: A graph there already: the graph, its files' checksums (base first), whether it is one file.
Current = tuple[LazyCommitGraph, list[str], bool]


def _current(info: Path, filters: bool) -> Current | None:
    """The graph a new layer may go on, or None when there is none or it must be rewritten."""
    graph = read_commit_graph(str(info))
    if graph is None or graph.has_filters != filters:
        return None
    if filters and graph.filter_hashes != bloom.DEFAULT_HASHES:
        return None
    single = graph_file(str(info / "commit-graph"))
    if single is not None and single[1] == 0:
        return graph, [single[2].hex()], True
    try:
        names = (info / "commit-graphs" / "commit-graph-chain").read_text("ascii").split()
    except (OSError, UnicodeDecodeError):
        return None
    return graph, names[: graph.layers], False


def _add_layer(
    repo: GitRepo,
    info: Path,
    current: Current,
    commits: dict[str, tuple[str, tuple[str, ...], int]],
    filters: bool,
) -> Written:
    """Write ``commits`` as a layer on ``current``, then the chain that names it, last."""
    graph, names, single = current
    content, count, made, too_many = _graph_bytes(repo, commits, graph, names, filters)
    folder = info / "commit-graphs"
    target = folder / f"graph-{content[-20:].hex()}.graph"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _write_file(target, content)
        if single:  # the file becomes the chain's base, under its checksum, as git renames it
            base = folder / f"graph-{names[0]}.graph"
            if not base.exists():
                _write_file(base, (info / "commit-graph").read_bytes())
        chain = "".join(f"{name}\n" for name in [*names, content[-20:].hex()])
        _write_file(folder / "commit-graph-chain", chain.encode("ascii"))
        if single:
            (info / "commit-graph").unlink()  # else git and this reader would read it alone
    except OSError as exc:
        raise GitError(f"the commit-graph could not be written: {exc}") from exc
    return Written(target, count, made, too_many)


_SIZE_TABLE_NAME = re.compile(r"pack-[0-9a-f]{40}\.sizes")


def write_size_tables(repo: GitRepo) -> int:
    """Give each pack without one its size table; remove the tables of packs that are gone.

    Returns how many tables were written (none when every pack has one, or when a pack's
    index cannot be read directly, as the reader then does not use tables either).

    Raises:
        GitError: a table cannot be written.
    """
    if sys.byteorder != "little" or array("I").itemsize != 4:
        return 0  # the reader maps a table as native uint32s
    written = 0
    kept: set[str] = set()
    try:
        for (reader, buf), found in zip(repo.pack_indexes(), repo.size_tables(), strict=True):
            target = Path(size_table_path(repo.objects_path, reader.pack_checksum))
            kept.add(target.name)
            if found is not None:
                continue
            table = array("I", [UNKNOWN_SIZE]) * reader.count
            for index in range(reader.count):
                size = packed_size(buf, reader.offset_at(index))
                if 0 <= size < UNKNOWN_SIZE:
                    table[index] = size
            header = SIZE_TABLE_HEADER.pack(SIZE_TABLE_MAGIC, 1, reader.count)
            target.parent.mkdir(parents=True, exist_ok=True)
            _write_file(target, header + table.tobytes())
            written += 1
        folder = Path(repo.objects_path) / "info" / "sizes"
        if folder.is_dir():
            for stale in folder.iterdir():
                if _SIZE_TABLE_NAME.fullmatch(stale.name) and stale.name not in kept:
                    stale.unlink()
    except OSError as exc:
        raise GitError(f"a size table could not be written: {exc}") from exc
    return written


def _write_file(target: Path, content: bytes) -> None:
    """``content`` at ``target``, read-only, replacing it at once (written beside it first)."""
    fd, temporary = tempfile.mkstemp(prefix="tmp_graph_", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
        os.chmod(temporary, 0o444)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _drop_chain(folder: Path) -> None:
    """Remove the split chain's list, then the layers it names (only those: none is guessed)."""
    chain = folder / "commit-graph-chain"
    try:
        names = chain.read_bytes().split()
        chain.unlink()
    except OSError:
        return  # no chain (or one already gone): nothing to supersede
    for name in names:
        if re.fullmatch(rb"[0-9a-f]{40}", name):
            (folder / f"graph-{name.decode('ascii')}.graph").unlink(missing_ok=True)
