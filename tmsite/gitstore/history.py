"""History of a path: the commits that changed it, newest first.

The walk is git's own default for ``git log -- <path>`` (history simplification without
``--full-history``), so the answers match the git CLI:

* commits are visited newest first by committer date, from a queue ordered by that date
  (equal dates in the order they were queued), each commit once;
* a commit's *entry* is the ``(mode, id)`` at the path in its tree (a file's blob, a
  directory's tree, a submodule's pinned commit), or nothing;
* a commit with one parent is shown when its entry differs from the parent's;
* a merge whose entry equals one of its parents' ("TREESAME") is not shown, and the walk
  follows only the first such parent — the side branches that did not bring the content are
  pruned; a merge that differs from every parent is shown and all its parents are walked;
* a root commit is shown when the path exists in it;
* the repository root (``""``) shows every commit, merges included, with no simplification.

A file's history is ``git log --follow -- <file>`` instead (:func:`walk_follow`): every commit
reachable is visited in the same date order, with no simplification; a commit with one parent
is shown when the file's entry differs from its parent's, a root commit when it has the file,
a merge never (``git log`` shows no diff for a merge). When a commit adds the followed path,
the rename or copy it made is sought (:func:`~tmsite.gitstore.renames.renamed_from`, copies
included as ``--follow`` finds them); if one is found the commit is shown with it and the walk
follows the older path from then on, for
every commit still to come, as git's single pathspec does. Where the repository's
commit-graph carries changed-path Bloom filters, a commit whose filter rules the path out is
passed over without reading a tree (git itself does not use them with ``--follow``; the
answer is the same, only cheaper).

A commit's root tree, parents and date come from the commit-graph when there is one, and a
commit whose changed-path Bloom filter rules the path out is TREESAME to its first parent
without a tree being read (as git's own walk uses the filters); its entry
is found by :class:`~tmsite.gitstore.tree.PathReader`, which reads only the trees on the path
and remembers each subtree's answer, so a subtree the walk has met costs one dictionary lookup;
each commit's entry is computed once per walk.

Spec: GIT, ANY2.
"""

from __future__ import annotations

import heapq
import re
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from itertools import islice

from dulwich.commit_graph import GRAPH_PARENT_MISSING as PARENT_MISSING

from tmsite.core import work
from tmsite.gitstore.cache import read_get, read_put
from tmsite.gitstore.paths import join, normalise
from tmsite.gitstore.renames import renamed_from
from tmsite.gitstore.repo import CommitInfo, GitRepo
from tmsite.gitstore.tree import PathReader, kind_of
from tmsite.gitstore.types import LogEntry

MAX_LOG = 100
_EMAIL = re.compile(r"<?[\w.+-]+@[\w-]+(?:\.[\w-]+)*>?")


def scrub(text: str) -> str:
    """``text`` with anything shaped like an e-mail address replaced by ``[e-mail]``."""
    return _EMAIL.sub("[e-mail]", text) if "@" in text else text


def iso_utc(seconds: int) -> str:
    """Epoch seconds as ISO-8601 in UTC with its offset: ``2026-01-02T03:04:05+00:00``."""
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat()


def log_entry(sha: str, info: CommitInfo) -> LogEntry:
    """The public record of one commit (no e-mail addresses)."""
    return LogEntry(
        commit=sha,
        short=sha[:7],
        author_name=scrub(info.author_name),
        date=iso_utc(info.author_time),
        subject=scrub(info.subject),
    )


@dataclass(frozen=True)
class Walked:
    """How far a history walk stopped past its allowance had gone (``OverBudget.progress``).

    It had found ``found`` entries of the log (newest first) in the ``commits`` it walked.
    The log of ``found`` entries walks the same commits in the same order and stops at the
    last of them, so it costs no more than what the stopped walk had spent.
    """

    found: int
    commits: int


def walk_changes(repo: GitRepo, commit: str, parts: tuple[str, ...]) -> Iterable[str]:
    """Yield, newest first, the commits that changed ``parts`` (see the module docstring).

    Raises:
        OverBudget: past the allowance, with how far it went (:class:`Walked`).
    """
    entries: dict[str, tuple[int, str] | None] = {}
    reader = PathReader(repo, parts)

    def entry(sha: str) -> tuple[int, str] | None:
        if sha in entries:
            return entries[sha]
        found = entries[sha] = reader.entry(repo.walk_info(sha)[0])
        return found

    keys = repo.path_keys("/".join(parts)) if parts else None
    counter = 0
    queue: list[tuple[int, int, str]] = [(-repo.walk_info(commit)[2], counter, commit)]
    seen = {commit}
    found = 0
    while queue:
        _neg_time, _n, sha = heapq.heappop(queue)
        try:
            work.spend("commits")
        except work.OverBudget as over:
            # every commit seen was queued once; the one it stopped at is not walked
            over.progress = Walked(found, len(seen) - len(queue) - 1)
            raise
        parents: tuple[str, ...] = repo.walk_info(sha)[1]
        show = True
        if parts and parents and not repo.maybe_changed(sha, keys):
            # The Bloom filter shows the first parent has the same entry: TREESAME to it.
            show, parents = False, parents[:1]
        elif parts:
            show, parents = _changed(entry, sha, parents)
        if show:
            found += 1
            yield sha
        for parent in parents:
            if parent not in seen:
                seen.add(parent)
                counter += 1
                heapq.heappush(queue, (-repo.walk_info(parent)[2], counter, parent))


class _Follow:
    """The path ``git log --follow`` is on, and each path's reader and Bloom keys."""

    def __init__(self, repo: GitRepo, path: str) -> None:
        self.repo = repo
        self.current = path
        self.readers: dict[str, PathReader] = {}
        self.keys: dict[str, tuple[tuple[int, ...], ...] | None] = {}
        self.entry(path, "")

    def entry(self, where: str, sha: str) -> tuple[int, str] | None:
        """The entry at ``where`` in commit ``sha`` (``""``: only set the path's reader up)."""
        reader = self.readers.get(where)
        if reader is None:
            reader = self.readers[where] = PathReader(self.repo, tuple(where.split("/")))
            self.keys[where] = self.repo.path_keys(where)
        return reader.entry(self.repo.walk_info(sha)[0]) if sha else None

    def step(
        self, sha: str, tree: str, parents: tuple[str, ...]
    ) -> tuple[str, str, str | None, str | None] | None:
        """The entry commit ``sha`` makes in the log, if any, moving the path at a rename."""
        current = self.current
        if not parents:
            found = self.entry(current, sha) is not None
            return (sha, current, None, None) if found else None
        if len(parents) > 1 or not self.repo.maybe_changed(sha, self.keys[current]):
            return None
        mine, theirs = self.entry(current, sha), self.entry(current, parents[0])
        if mine == theirs:
            return None
        older = None
        if theirs is None and mine is not None and kind_of(mine[0]) in ("blob", "symlink"):
            parent_tree = self.repo.walk_info(parents[0])[0]
            found_from = renamed_from(self.repo, parent_tree, tree, current, copies=True)
            if found_from is not None:
                older = self.current = found_from[0]
                self.entry(older, "")
        return sha, current, older, parents[0]


def walk_follow(
    repo: GitRepo, commit: str, path: str
) -> Iterable[tuple[str, str, str | None, str | None]]:
    """Yield ``git log --follow -- path``'s commits, newest first (see the module docstring).

    Each as ``(commit, the path there, the path it was renamed or copied from, first parent)``.
    Commits the commit-graph holds are walked by their position in it — dates, parents and
    Bloom filters read in place — and named only when their filter lets the path through.

    Raises:
        OverBudget: past the allowance, with how far it went (:class:`Walked`).
    """
    follow = _Follow(repo, path)
    walk = _DateWalk(repo, commit)
    graph = walk.graph
    found = 0
    try:
        for node in walk:
            if isinstance(node, int):
                assert graph is not None
                parents = walk.parents
                if len(parents) > 1:
                    continue
                if parents and not graph.changed_at(node, follow.keys[follow.current] or ()):
                    continue
                sha = graph.id_at(node)
            else:
                sha = node
            tree, parent_ids, _when = repo.walk_info(sha)
            shown = follow.step(sha, tree, parent_ids)
            if shown is not None:
                found += 1
                yield shown
    except work.OverBudget as over:
        over.progress = Walked(found, walk.walked())
        raise


class _DateWalk:
    """Every commit reachable from one, newest first by committer date, each once.

    Equal dates come in the order they were queued (git's ``commit_list_insert_by_date``).
    A commit the commit-graph holds is a position in it (an ``int``), any other its id; the
    graph holds every ancestor of a commit it holds, so a walk that enters it stays there.
    ``parents`` is the last yielded commit's parents, in the same form.
    """

    def __init__(self, repo: GitRepo, commit: str) -> None:
        self.repo = repo
        self.graph = repo.graph()
        self.parents: list[int] | list[int | str] | tuple[str, ...] = ()
        start = self._node(commit)
        self.queue: list[tuple[int, int, int | str]] = [(-self._when(start), 0, start)]
        self.seen: set[int | str] = {start}
        self.counter = 0

    def walked(self) -> int:
        """The commits walked before the one it stopped at, which was taken from the queue.

        Every commit seen was queued once, so those taken are the seen ones no longer queued.
        """
        return len(self.seen) - len(self.queue) - 1

    def _node(self, sha: str) -> int | str:
        if self.graph is not None:
            position = self.graph.position(sha)
            if position is not None:
                return position
        return sha

    def _when(self, node: int | str) -> int:
        if isinstance(node, int):
            assert self.graph is not None
            return self.graph.when(node)
        return self.repo.walk_info(node)[2]

    def __iter__(self) -> Iterator[int | str]:
        queue, seen, graph = self.queue, self.seen, self.graph
        pop, push, unpack = heapq.heappop, heapq.heappush, struct.unpack_from
        data = graph.commit_data if graph is not None else b""
        while queue:
            _neg_time, _n, node = pop(queue)
            # one at a time: a walk past the caller's allowance stops at the commit that takes
            # it past, and an abandoned one at the next commit (``tmsite.core.work``)
            work.spend("commits")
            children: list[int] | list[int | str]
            if isinstance(node, int):
                assert graph is not None
                one, two = unpack(">LL", data, node * 36 + 20)
                if two == PARENT_MISSING:  # the common case, decoded in place
                    children = [one] if one != PARENT_MISSING else []
                else:
                    children = graph.parents_at(node)
                self.parents = children
            else:
                self.parents = self.repo.walk_info(node)[1]
                children = [self._node(parent) for parent in self.parents]
            for child in children:
                if child not in seen:
                    seen.add(child)
                    self.counter += 1
                    push(queue, (-self._when(child), self.counter, child))
            yield node


def _changed(
    entry: Callable[[str], tuple[int, str] | None], sha: str, parents: tuple[str, ...]
) -> tuple[bool, tuple[str, ...]]:
    """Whether commit ``sha`` changed the path's entry, and the parents to walk on from it.

    A root commit changed it if it has the path; a commit with one parent if the entries
    differ. A merge changed it only if no parent has the very same entry; otherwise the walk
    follows the first parent that has it and leaves the others.
    """
    if not parents:
        return entry(sha) is not None, parents
    if len(parents) == 1:
        return entry(parents[0]) != entry(sha), parents
    mine = entry(sha)
    same = next((p for p in parents if entry(p) == mine), None)
    if same is None:
        return True, parents
    return False, (same,)


def log(repo: GitRepo, commit: str, path: Iterable[str] | str = "", n: int = 20) -> list[LogEntry]:
    """The ``n`` (1 to 100) newest commits that changed ``path``, reachable from ``commit``.

    ``""`` (the root) lists every commit. Newest first; each with author name and author
    date, never an e-mail address.

    Raises:
        ValueError: ``n`` out of range (callers refuse it; it is never clamped).
        OutOfRoot, HostileName: the path is refused by :func:`normalise`.
    """
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_LOG:
        raise ValueError(f"n must be an integer from 1 to {MAX_LOG}")
    parts = normalise(path)
    key = (repo.path, commit, join(parts), "log-follow", n)
    cached = read_get(key)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    found = PathReader(repo, parts).entry(repo.walk_info(commit)[0]) if parts else None
    if found is not None and kind_of(found[0]) in ("blob", "symlink"):
        out = [
            replace(log_entry(sha, repo.commit(sha)), path=where, renamed_from=older, parent=parent)
            for sha, where, older, parent in islice(walk_follow(repo, commit, join(parts)), n)
        ]
    else:
        out = [
            log_entry(sha, repo.commit(sha)) for sha in islice(walk_changes(repo, commit, parts), n)
        ]
    return read_put(key, out, 100 + 300 * len(out))
