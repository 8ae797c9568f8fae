"""Line blame: which commit last changed each line of a file, across renames.

The algorithm is git's (``git blame`` with its defaults: whole-file renames followed, no
``-M`` or ``-C`` line moves or copies):

1. Every line of the file at the start commit is a *suspect* of that commit's *origin* —
   the commit and the file's path in it.
2. Commits are taken newest first by committer date from a queue; an origin's suspects are
   the lines it still holds, as ranges (git's blame entries) known by their line numbers in
   the final file and in that origin's version.
3. For each parent in order that has the file at the same path: if it is the very same blob,
   all suspects pass to that parent unchanged (no diff is needed).
4. Then, for each parent that lacks the path, the rename the commit made into it is sought
   (:func:`~tmsite.gitstore.renames.renamed_from`); the older path becomes the parent's
   origin, and again the very same blob takes every suspect.
5. Otherwise, for each parent origin in order (one repeating an earlier parent's blob is
   skipped): the parent's version is diffed with this one; the suspect ranges are split at
   the diff's runs of unchanged lines (:func:`split`), the parts lying in them pass to that
   parent (renumbered), the rest stay and are offered to the next parent.
6. Suspects no parent took are blamed on the origin. A root commit keeps all it holds. The
   walk stops as soon as every line is blamed.

Where the commit-graph carries changed-path Bloom filters, a commit whose filter rules the
path out hands everything to its first parent without a tree being read (as git does); the
walk keeps such commits as their positions in the graph and names only those it diffs.

The diff is Myers' shortest edit script compacted as git's xdiff compacts it, indent heuristic
included (:mod:`tmsite.gitstore.linediff`), so an edit that identical lines (blank lines, a
repeated brace) let be placed in several ways is placed where git places it. Past 500 edits
between two versions a longest common subsequence found in C takes Myers' place, compacted
the same way. Only where the versions are too large for that (``MAX_CELLS``) are the common
head and tail trimmed and :class:`difflib.SequenceMatcher` (no junk heuristic; when the newer
side repeats no line, its blocks taken from the diagonal runs directly,
:func:`unique_blocks`) matches the rest.

Spec: GIT, ANY2.
"""

from __future__ import annotations

import bisect
import heapq
from array import array
from collections.abc import Iterable, Sequence
from difflib import SequenceMatcher

from tmsite.core import work
from tmsite.gitstore.cache import OBJECTS, read_get, read_put
from tmsite.gitstore.errors import NotABlob
from tmsite.gitstore.history import iso_utc, scrub
from tmsite.gitstore.linediff import Flags, Text, edit_spans
from tmsite.gitstore.paths import join, normalise
from tmsite.gitstore.renames import renamed_from
from tmsite.gitstore.repo import GitRepo
from tmsite.gitstore.tree import PathReader, kind_of, lookup
from tmsite.gitstore.types import Blame

#: Suspects: lines of the final file from ``final`` on, lines ``here`` on in the current
#: commit's version, ``count`` of them (git's ``blame_entry``).
Suspect = tuple[int, int, int]


def _text(repo: GitRepo, sha: str) -> Text:
    key = (repo.path, "text", sha)
    cached = OBJECTS.get(key)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    text = Text(repo.blob(sha))
    return OBJECTS.put(key, text, len(text.data) + 64)


#: Diagonal runs past which :func:`unique_blocks` leaves the diff to ``SequenceMatcher``.
MAX_RUNS = 64


def unique_blocks(a: list[bytes], b: list[bytes]) -> list[tuple[int, int, int]] | None:
    """``SequenceMatcher(None, a, b, autojunk=False)``'s matching blocks, found directly.

    Returns None when ``b`` repeats a line or the sequences share too many separate runs;
    the caller then runs the matcher itself.

    With no junk and no repeats in ``b``, every line of ``a`` matches at most one line of
    ``b``, so the common blocks are the diagonal runs ``a[i + t] == b[j + t]``. The matcher
    takes the longest block inside a window (the earliest in ``a`` among equals), then works
    on the windows before and after it; a run clipped to a window is exactly the block its
    dynamic programme finds there, so the same windows are split at the same blocks.
    The blocks come back unordered and unmerged (the caller only reads the pairs).
    """
    where = {line: index for index, line in enumerate(b)}
    if len(where) != len(b):
        return None
    runs = _diagonal_runs(a, where)
    if runs is None:
        return None
    return _split_windows(runs, len(a), len(b))


def _diagonal_runs(a: list[bytes], where: dict[bytes, int]) -> list[tuple[int, int, int]] | None:
    """The runs ``(start in a, start in b, length)`` where ``a`` follows ``b`` line for line.

    ``where`` maps each line of ``b`` to its index. None once there are more than
    :data:`MAX_RUNS` runs.
    """
    runs: list[tuple[int, int, int]] = []
    get = where.get
    start = -1
    start_j = 0
    prev_j = -2
    for i, line in enumerate(a):
        j = get(line, -1)
        if j >= 0 and j == prev_j + 1 and start >= 0:
            prev_j = j
            continue
        if start >= 0:
            runs.append((start, start_j, i - start))
            if len(runs) > MAX_RUNS:
                return None
        if j >= 0:
            start, start_j, prev_j = i, j, j
        else:
            start, prev_j = -1, -2
    if start >= 0:
        runs.append((start, start_j, len(a) - start))
    return runs


def _split_windows(
    runs: list[tuple[int, int, int]], len_a: int, len_b: int
) -> list[tuple[int, int, int]]:
    """The matcher's blocks: the longest run clipped to each window, windows split around it."""
    blocks: list[tuple[int, int, int]] = []
    queue = [(0, len_a, 0, len_b)]
    while queue:
        alo, ahi, blo, bhi = queue.pop()
        best_i, best_j, best_k = alo, blo, 0
        for i0, j0, length in runs:
            shift = j0 - i0
            lo = max(i0, alo, blo - shift)
            hi = min(i0 + length, ahi, bhi - shift)
            if hi - lo > best_k or (hi - lo == best_k and best_k and lo < best_i):
                best_i, best_j, best_k = lo, lo + shift, hi - lo
        if best_k:
            blocks.append((best_i, best_j, best_k))
            if alo < best_i and blo < best_j:
                queue.append((alo, best_i, blo, best_j))
            if best_i + best_k < ahi and best_j + best_k < bhi:
                queue.append((best_i + best_k, ahi, best_j + best_k, bhi))
    return blocks


#: Lines unchanged between two versions: (first in the newer, first in the older, how many).
Run = tuple[int, int, int]


def line_map(old: list[bytes], new: list[bytes]) -> list[int]:
    """For each line of ``new``, its index in ``old`` when unchanged, else -1."""
    mapping = [-1] * len(new)
    for j, i, size in line_runs(Text.of(old), Text.of(new)):
        mapping[j : j + size] = range(i, i + size)
    return mapping


def line_runs(old: Text, new: Text) -> list[Run]:
    """The runs of lines of ``new`` unchanged from ``old``, in order.

    The diff is :func:`~tmsite.gitstore.linediff.edit_spans` (Myers, compacted as xdiff does);
    past its size bound, the common head and tail are trimmed and ``SequenceMatcher`` (or
    :func:`unique_blocks`) matches what is left.
    """
    found = edit_spans(old, new)
    if found is None:
        return _runs_of(_matcher_map(old.lines(), new.lines()))
    gone, added, span_a, span_b = found
    # Unchanged lines pair up in order: those before the first change on either side and
    # after the last one at once, the rest a run at a time between the spans.
    size_a, size_b = old.count, new.count
    first = min(span_a[0] if span_a[1] else size_a, span_b[0] if span_b[1] else size_b)
    last = min(
        size_a - span_a[1] if span_a[1] else size_a,
        size_b - span_b[1] if span_b[1] else size_b,
        size_a - first,
        size_b - first,
    )
    runs: list[Run] = [(0, 0, first)] if first else []
    i = j = first
    stop_a, stop_b = size_a - last, size_b - last
    while True:
        j = added.find(0, j, stop_b)
        i = gone.find(0, i, stop_a)
        if j < 0 or i < 0:
            break
        size = min(_run_end(added, j, stop_b) - j, _run_end(gone, i, stop_a) - i)
        runs.append((j, i, size))
        i += size
        j += size
    if last:
        runs.append((size_b - last, size_a - last, last))
    return runs


def _runs_of(mapping: list[int]) -> list[Run]:
    """The runs of a per-line mapping (-1: changed)."""
    runs: list[Run] = []
    for j, i in enumerate(mapping):
        if i < 0:
            continue
        if runs and runs[-1][0] + runs[-1][2] == j and runs[-1][1] + runs[-1][2] == i:
            runs[-1] = (runs[-1][0], runs[-1][1], runs[-1][2] + 1)
        else:
            runs.append((j, i, 1))
    return runs


def split(suspects: list[Suspect], runs: list[Run]) -> tuple[list[Suspect], list[Suspect]]:
    """``suspects`` split by the diff's runs (git's ``blame_chunk`` over its hunks).

    Returns the parts lying in ``runs``, renumbered to the older version, and the rest.
    """
    passed: list[Suspect] = []
    kept: list[Suspect] = []
    ends = [j + size for j, _i, size in runs]
    count_runs = len(runs)
    for suspect in suspects:
        final, here, count = suspect
        end = here + count
        k = bisect.bisect_right(ends, here)
        if k < count_runs:  # most suspects lie in one run: they pass whole
            j, i, size = runs[k]
            if j <= here and end <= j + size:
                passed.append(suspect if i == j else (final, here + i - j, count))
                continue
        at = here
        while at < end:
            if k >= count_runs or runs[k][0] >= end:
                kept.append((final + at - here, at, end - at))
                break
            j, i, size = runs[k]
            if j > at:
                kept.append((final + at - here, at, j - at))
                at = j
            stop = min(j + size, end)
            passed.append((final + at - here, i + at - j, stop - at))
            at = stop
            k += 1
    return passed, kept


def _run_end(flags: Flags, at: int, stop: int) -> int:
    end = flags.find(1, at, stop)
    return stop if end < 0 else end


def _matcher_map(old: list[bytes], new: list[bytes]) -> list[int]:
    mapping = [-1] * len(new)
    head = 0
    limit = min(len(old), len(new))
    while head < limit and old[head] == new[head]:
        head += 1
    mapping[:head] = range(head)
    tail = 0
    while tail < limit - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    if tail:
        mapping[len(new) - tail :] = range(len(old) - tail, len(old))
    old_mid = old[head : len(old) - tail]
    new_mid = new[head : len(new) - tail]
    if old_mid and new_mid:
        blocks = unique_blocks(old_mid, new_mid)
        if blocks is None:
            matcher = SequenceMatcher(None, old_mid, new_mid, autojunk=False)
            blocks = [(a, b, size) for a, b, size in matcher.get_matching_blocks()]
        for a, b, size in blocks:
            mapping[head + b : head + b + size] = range(head + a, head + a + size)
    return mapping


def line_count(repo: GitRepo, sha: str) -> int:
    """How many lines blame counts in blob ``sha``."""
    return _text(repo, sha).count


def blame(
    repo: GitRepo, commit: str, path: Iterable[str] | str, lines: tuple[int, int] | None = None
) -> Blame:
    """Blame the lines of the file at ``path`` as of ``commit`` (see the module docstring).

    Args:
        repo: The repository.
        commit: A full commit id.
        path: The file (a blob or a symlink, whose target text is blamed).
        lines: Only lines ``first`` to ``last`` (from 1, both included; ``last`` past the end
            means to the end), as ``git blame -L first,last``: only their suspects are walked,
            and the walk stops once they are blamed — each line's commit is the one the whole
            blame gives it.

    Returns:
        One record per line, in order, each with the full id of the commit that introduced it
        (:class:`~tmsite.gitstore.types.Blame`: the compact form, kept as it is).

    Raises:
        NotABlob: the path is a directory or a submodule.
        PathNotFound, OutOfRoot, HostileName: as :func:`~tmsite.gitstore.tree.lookup`.
        OverBudget: the walk went past the request's allowance; its ``progress`` is the runs
            ``(first, last)`` of lines it had blamed, each of which blames within it.
    """
    parts = normalise(path)
    node = lookup(repo, commit, parts)
    if node.kind not in ("blob", "symlink"):
        raise NotABlob(node.path, node.kind)
    final = _text(repo, node.sha)
    first, last = 1, final.count
    if lines is not None:
        first, last = lines[0], min(lines[1], last)
        if first < 1 or first > lines[1]:
            raise ValueError("lines must be FIRST-LAST with 1 <= FIRST <= LAST")
    key = (repo.path, commit, join(parts), "blame-follow", first, last)
    cached = read_get(key)
    if cached is not None:
        return cached  # type: ignore[no-any-return]

    walk = _Walk(repo, commit, join(parts), node.sha, final.count, (first - 1, last))
    owner = walk.run()
    origins: dict[Origin, int] = {}
    owners = array("I", (origins.setdefault(o, len(origins)) for o in owner[first - 1 : last]))
    infos = [repo.commit(sha) for sha, _path in origins]
    out = Blame(
        tuple(sha for sha, _path in origins),
        tuple(scrub(info.author_name) for info in infos),
        tuple(iso_utc(info.author_time) for info in infos),
        tuple(where for _sha, where in origins),
        owners,
        "\n".join(line.decode("utf-8", "replace") for line in final.lines()[first - 1 : last]),
        first,
    )
    return read_put(key, out, out.size())


#: An origin: a commit and the file's path in it (git's ``blame_origin``).
Origin = tuple[str, str]
#: A commit in the walk: its position in the commit-graph, or its id when the graph lacks it.
Node = int | str


class _Walk:
    """One blame walk (steps 1–6 of the module docstring): the queue, and who holds what.

    Commits the commit-graph holds are walked by their position in it: dates, parents and
    Bloom filters are read in place, and a commit whose filter rules every path it holds out
    hands its suspects to its first parent without its id being decoded or a tree read.
    """

    def __init__(
        self, repo: GitRepo, commit: str, path: str, sha: str, count: int, span: tuple[int, int]
    ) -> None:
        self.repo = repo
        self.graph = repo.graph()
        self.readers: dict[str, PathReader] = {}
        self.keys: dict[str, tuple[tuple[int, ...], ...] | None] = {}
        start = self.node(commit)
        self.blobs: dict[tuple[Node, str], str | None] = {(start, path): sha}
        self.owner: list[Origin] = [("", "")] * count
        low, high = span
        self.span = span
        self.pending: dict[Node, dict[str, list[Suspect]]] = {
            start: {path: [(low, low, high - low)] if high > low else []}
        }
        self.counter = 0
        self.queue: list[tuple[int, int, Node]] = [(-self.when(start), self.counter, start)]
        self.left = max(0, high - low)
        self.reader(path)

    def node(self, sha: str) -> Node:
        """The commit's position in the commit-graph, else its id."""
        if self.graph is not None:
            position = self.graph.position(sha)
            if position is not None:
                return position
        return sha

    def when(self, node: Node) -> int:
        if isinstance(node, int):
            assert self.graph is not None
            return self.graph.when(node)
        return self.repo.walk_info(node)[2]

    def sha(self, node: Node) -> str:
        if isinstance(node, int):
            assert self.graph is not None
            return self.graph.id_at(node)
        return node

    def tree(self, node: Node) -> str:
        if isinstance(node, int):
            assert self.graph is not None
            return self.graph.tree_at(node)
        return self.repo.walk_info(node)[0]

    def parents(self, node: Node) -> list[Node]:
        if isinstance(node, int):
            assert self.graph is not None
            return list(self.graph.parents_at(node))
        return [self.node(parent) for parent in self.repo.walk_info(node)[1]]

    def reader(self, path: str) -> PathReader:
        reader = self.readers.get(path)
        if reader is None:
            reader = self.readers[path] = PathReader(self.repo, tuple(path.split("/")))
            self.keys[path] = self.repo.path_keys(path, prefixes=False)
        return reader

    def blob_of(self, node: Node, path: str) -> str | None:
        """The blob (or symlink) id at ``path`` in commit ``node``; None if no file is there."""
        known = self.blobs.get((node, path), ())
        if known != ():
            return known  # type: ignore[return-value]
        found = self.reader(path).entry(self.tree(node))
        ok = found is not None and kind_of(found[0]) in ("blob", "symlink")
        blob = self.blobs[(node, path)] = found[1] if found is not None and ok else None
        return blob

    def unchanged(self, node: Node, path: str) -> bool:
        """Whether the commit's Bloom filter shows it left ``path`` as its first parent had it."""
        keys = self.keys.get(path)
        if keys is None:
            return False
        if isinstance(node, int):
            assert self.graph is not None
            return not self.graph.changed_at(node, keys)
        return not self.repo.maybe_changed(node, keys)

    def give(self, parent: Node, path: str, suspects: list[Suspect]) -> None:
        """Pass ``suspects`` to ``parent``'s ``path``, queueing the commit if it is new."""
        if not suspects:
            return
        origins = self.pending.get(parent)
        if origins is not None:
            origins.setdefault(path, []).extend(suspects)
            return
        self.pending[parent] = {path: suspects}
        self.counter += 1
        heapq.heappush(self.queue, (-self.when(parent), self.counter, parent))

    def run(self) -> list[Origin]:
        """Walk until every line is blamed; for each line of the final file, its origin.

        Raises:
            OverBudget: past the allowance, with the runs of lines blamed so far.
        """
        try:
            while self.queue and self.left:
                _t, _n, node = heapq.heappop(self.queue)
                origins = self.pending.pop(node, None)
                work.spend("commits")
                for path, suspects in (origins or {}).items():
                    self.visit(node, path, suspects)
        except work.OverBudget as over:
            over.progress = self.blamed()
            raise
        return self.owner

    def blamed(self) -> tuple[tuple[int, int], ...]:
        """The runs ``(first, last)`` (from 1, both included) of lines blamed so far.

        Blaming one of them alone walks only commits this walk had walked before blaming it.
        """
        runs: list[tuple[int, int]] = []
        start = -1
        low, high = self.span
        for index in range(low, high + 1):
            done = index < high and self.owner[index][0] != ""
            if done and start < 0:
                start = index
            elif not done and start >= 0:
                runs.append((start + 1, index))
                start = -1
        return tuple(runs)

    def visit(self, node: Node, path: str, suspects: list[Suspect]) -> None:
        """Hand the suspects of ``node``'s ``path`` to its parents (steps 3–5), blame the rest."""
        mine = self.blob_of(node, path)
        assert mine is not None
        parents = self.parents(node)
        if parents and self.unchanged(node, path):
            self.pass_down(parents[0], path, mine, suspects)
            return
        scapegoats = self.scapegoats(node, path, mine, parents)
        if isinstance(scapegoats, tuple):
            self.give(scapegoats[0], scapegoats[1], suspects)
            return
        remaining = suspects
        for parent, found in zip(parents, scapegoats, strict=True):
            if found is None or not remaining:
                continue
            older, theirs = found
            passed, remaining = split(
                remaining, line_runs(_text(self.repo, theirs), _text(self.repo, mine))
            )
            self.give(parent, older, passed)
        if remaining:
            origin = (self.sha(node), path)
            for final, _here, count in remaining:
                self.owner[final : final + count] = [origin] * count
                self.left -= count

    def pass_down(self, parent: Node, path: str, blob: str, suspects: list[Suspect]) -> None:
        """Give every suspect to a first parent the filter says holds the very ``blob``.

        The suspects go on down the line of first parents whose filters say the same at once,
        not by the queue: the order commits are taken in changes no line's commit, only how
        often diffs are shared, and those commits need none. The line ends at a commit that
        may have changed the file, or one already queued, which then takes them. Commits the
        commit-graph holds are walked by the graph itself.
        """
        keys = self.keys.get(path)
        passed: Sequence[Node]
        if isinstance(parent, int) and self.graph is not None and keys is not None:
            passed, parent = self.graph.unchanged_line(parent, keys, self.pending)
        else:
            passed = []
            while parent not in self.pending:
                grandparents = self.parents(parent)
                if not grandparents or not self.unchanged(parent, path):
                    break
                passed.append(parent)
                parent = grandparents[0]
        for node in (*passed, parent):
            self.blobs[(node, path)] = blob
        work.spend("commits", len(passed))
        self.give(parent, path, suspects)

    def scapegoats(
        self, node: Node, path: str, mine: str, parents: list[Node]
    ) -> tuple[Node, str] | list[tuple[str, str] | None]:
        """Each parent's origin (steps 3–4), or the ``(parent, path)`` holding the very blob.

        Origins repeating an earlier parent's blob are dropped (None), as git drops them.
        """
        found_all: list[tuple[str, str] | None] = [None] * len(parents)
        for pass_ in (self._same_path, self._renamed):
            for i, parent in enumerate(parents):
                if found_all[i] is not None:
                    continue
                found = pass_(node, parent, path)
                if found is None:
                    continue
                if found[1] == mine:
                    return parent, found[0]
                if all(s is None or s[1] != found[1] for s in found_all[:i]):
                    found_all[i] = found
        return found_all

    def _same_path(self, node: Node, parent: Node, path: str) -> tuple[str, str] | None:
        """Pass 1: the file at the same path in the parent (git's ``find_origin``)."""
        theirs = self.blob_of(parent, path)
        return None if theirs is None else (path, theirs)

    def _renamed(self, node: Node, parent: Node, path: str) -> tuple[str, str] | None:
        """Pass 2: the file the commit renamed to ``path`` (git's ``find_rename``)."""
        if self.blob_of(parent, path) is not None:
            return None
        return renamed_from(self.repo, self.tree(parent), self.tree(node), path)
