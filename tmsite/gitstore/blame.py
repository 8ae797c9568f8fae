"""Line blame: which commit last changed each line of a file.

The algorithm is git's (``git blame`` without rename or copy detection):

1. Every line of the file at the start commit is a *suspect* of that commit.
2. Commits are taken newest first by committer date from a queue; a commit's suspects are the
   lines it still holds, each known by its line number in that commit's version of the file.
3. If a parent has the very same blob at the path, all suspects pass to the first such parent
   unchanged (no diff is needed).
4. Otherwise, for each parent in order that has the path: the parent's version is diffed with
   this commit's; suspects lying in unchanged regions pass to that parent (renumbered), the
   rest stay and are offered to the next parent.
5. Suspects no parent took are blamed on the commit. A root commit keeps all it holds.

The diff trims the common head and tail and runs :class:`difflib.SequenceMatcher` (no junk
heuristic) on what is left; when the newer side repeats no line, the matcher's blocks are taken
from the diagonal runs directly (:func:`unique_blocks`, the same pairs without its dynamic
programme). It agrees with git's xdiff wherever an edit has one placement; where
identical lines (blank lines, a repeated brace) let an edit be placed in several ways, the two
may pick different ones and so blame a neighbouring identical line differently.

Spec: GIT.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from difflib import SequenceMatcher

from tmsite.core import work
from tmsite.gitstore.cache import OBJECTS, read_get, read_put
from tmsite.gitstore.errors import NotABlob
from tmsite.gitstore.history import iso_utc, scrub
from tmsite.gitstore.paths import join, normalise
from tmsite.gitstore.repo import GitRepo
from tmsite.gitstore.tree import PathReader, kind_of, lookup
from tmsite.gitstore.types import BlameLine

#: A suspect: (index of the line in the final file, index in the current commit's version).
Suspect = tuple[int, int]


def split_lines(data: bytes) -> list[bytes]:
    r"""Lines as git counts them: split on ``\n`` only, a final unterminated line included."""
    if not data:
        return []
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    return lines


def _lines(repo: GitRepo, sha: str) -> list[bytes]:
    key = (repo.path, "lines", sha)
    cached = OBJECTS.get(key)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    data = repo.blob(sha)
    lines = split_lines(data)
    return OBJECTS.put(key, lines, len(data) + 40 * len(lines) + 64)


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


def line_map(old: list[bytes], new: list[bytes]) -> list[int]:
    """For each line of ``new``, its index in ``old`` when unchanged, else -1."""
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


def blame(repo: GitRepo, commit: str, path: Iterable[str] | str) -> list[BlameLine]:
    """Blame every line of the file at ``path`` as of ``commit`` (see the module docstring).

    Args:
        repo: The repository.
        commit: A full commit id.
        path: The file (a blob or a symlink, whose target text is blamed).

    Returns:
        One record per line, in order, each with the full id of the commit that introduced it.

    Raises:
        NotABlob: the path is a directory or a submodule.
        PathNotFound, OutOfRoot, HostileName: as :func:`~tmsite.gitstore.tree.lookup`.
    """
    parts = normalise(path)
    node = lookup(repo, commit, parts)
    if node.kind not in ("blob", "symlink"):
        raise NotABlob(node.path, node.kind)
    key = (repo.path, commit, join(parts), "blame")
    cached = read_get(key)
    if cached is not None:
        return cached  # type: ignore[no-any-return]

    final_lines = _lines(repo, node.sha)
    owner = _Walk(repo, commit, parts, node.sha, len(final_lines)).run()
    who: dict[str, tuple[str, str]] = {}
    for sha in set(owner):
        info = repo.commit(sha)
        who[sha] = (scrub(info.author_name), iso_utc(info.author_time))
    out: list[BlameLine] = []
    for index, text in enumerate(final_lines):
        name, date = who[owner[index]]
        out.append(
            BlameLine(
                line_no=index + 1,
                commit=owner[index],
                author_name=name,
                date=date,
                text=text.decode("utf-8", "replace"),
            )
        )
    return read_put(key, out, 200 + sum(len(t) + 150 for t in final_lines))


class _Walk:
    """One blame walk (steps 1–5 of the module docstring): the queue, and who holds what."""

    def __init__(
        self, repo: GitRepo, commit: str, parts: tuple[str, ...], sha: str, count: int
    ) -> None:
        self.repo = repo
        self.reader = PathReader(repo, parts)
        self.blobs: dict[str, str | None] = {commit: sha}
        self.owner: list[str] = [""] * count
        self.pending: dict[str, list[Suspect]] = {commit: [(i, i) for i in range(count)]}
        self.counter = 0
        self.queue = [(-repo.walk_info(commit)[2], self.counter, commit)]

    def blob_of(self, sha: str) -> str | None:
        """The blob (or symlink) id at the path in commit ``sha``; None if it has no file there."""
        if sha in self.blobs:
            return self.blobs[sha]
        found = self.reader.entry(self.repo.walk_info(sha)[0])
        ok = found is not None and kind_of(found[0]) in ("blob", "symlink")
        blob = self.blobs[sha] = found[1] if found is not None and ok else None
        return blob

    def give(self, parent: str, suspects: list[Suspect]) -> None:
        """Pass ``suspects`` to ``parent``, queueing it by committer date if it is new."""
        if not suspects:
            return
        if parent in self.pending:
            self.pending[parent].extend(suspects)
            return
        self.pending[parent] = suspects
        self.counter += 1
        heapq.heappush(self.queue, (-self.repo.walk_info(parent)[2], self.counter, parent))

    def run(self) -> list[str]:
        """Walk to the end; for each line of the final file, the commit it is blamed on."""
        while self.queue:
            _t, _n, sha = heapq.heappop(self.queue)
            suspects = self.pending.pop(sha, None)
            work.spend("commits")
            if suspects:
                self.visit(sha, suspects)
        return self.owner

    def visit(self, sha: str, suspects: list[Suspect]) -> None:
        """Hand ``sha``'s suspects to its parents (steps 3–4) and blame the rest on it (5)."""
        mine = self.blob_of(sha)
        assert mine is not None
        parents = self.repo.walk_info(sha)[1]
        if len(parents) == 1:
            same: str | None = parents[0] if self.blob_of(parents[0]) == mine else None
        else:
            same = next((p for p in parents if self.blob_of(p) == mine), None)
        if same is not None:
            self.give(same, suspects)
            return
        remaining = suspects
        for parent in parents:
            theirs = self.blob_of(parent)
            if theirs is None or not remaining:
                continue
            mapping = line_map(_lines(self.repo, theirs), _lines(self.repo, mine))
            self.give(
                parent, [(final, mapping[here]) for final, here in remaining if mapping[here] >= 0]
            )
            remaining = [(final, here) for final, here in remaining if mapping[here] < 0]
        for final, _here in remaining:
            self.owner[final] = sha
