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

The diff is xdiff's own, step for step (:mod:`tmsite.gitstore.linediff`): where several
scripts are equally short (a repeated blank line or brace) or xdiff's heuristics take a longer
one, the lines go to the parent git gives them.

Spec: GIT, ANY2.
"""

from __future__ import annotations

import bisect
import heapq
from array import array
from collections.abc import Iterable, Sequence

from tmsite.core import work
from tmsite.gitstore.cache import OBJECTS, read_get, read_put
from tmsite.gitstore.errors import NotABlob
from tmsite.gitstore.history import iso_utc, scrub
from tmsite.gitstore.linediff import Counts, Flags, LineCounts, Text, edit_spans, line_counts
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


#: Lines unchanged between two versions: (first in the newer, first in the older, how many).
Run = tuple[int, int, int]


def line_map(old: list[bytes], new: list[bytes]) -> list[int]:
    """For each line of ``new``, its index in ``old`` when unchanged, else -1."""
    mapping = [-1] * len(new)
    for j, i, size in line_runs(Text.of(old), Text.of(new)):
        mapping[j : j + size] = range(i, i + size)
    return mapping


def line_runs(old: Text, new: Text, counts: Counts | None = None) -> list[Run]:
    """The runs of lines of ``new`` unchanged from ``old``, in order.

    The diff is :func:`~tmsite.gitstore.linediff.edit_spans`, xdiff's as ``git blame`` runs
    it; ``counts`` carries how often each line occurs in ``new`` and learns them for ``old``.
    """
    gone, added, span_a, span_b = edit_spans(old, new, counts)
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
        #: How often each line occurs in the versions (by blob) the walk has yet to diff.
        self.counts: dict[str, LineCounts] = {}
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
        text = _text(self.repo, mine)
        counts = self.counts.pop(mine, None)
        diffs = [
            (parent, found) for parent, found in zip(parents, scapegoats, strict=True) if found
        ]
        for index, (parent, (older, theirs)) in enumerate(diffs):
            if not remaining:
                break
            if counts is None:
                counts = line_counts(text)
            learnt = Counts(counts, spare=index == len(diffs) - 1)
            passed, remaining = split(remaining, line_runs(_text(self.repo, theirs), text, learnt))
            if learnt.of_old is not None:
                self.counts.setdefault(theirs, learnt.of_old)
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
