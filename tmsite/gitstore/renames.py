"""Where a file came from: the rename (or copy) git finds when a path appears in a commit.

``git blame`` and ``git log --follow`` ask the same question when the path they follow is
absent from a parent: run rename detection between the parent's tree and the commit's, for
that one destination (git's ``single_follow``), and take the source, if any. This is dulwich's
:class:`~dulwich.diff_tree.RenameDetector` set up as each of them sets up git's:

* ``git blame`` (``find_rename``, ``-M`` off): the sources are files the commit *deleted*, so
  a rename is followed and a copy is not (``copies=False``);
* ``git log --follow`` (``try_to_follow_renames``): ``--find-copies-harder``, so every file of
  the parent is a source, deleted (a rename) or not (a copy) (``copies=True``);
* the one destination is the followed path; exact matches (the same blob) first, else the
  most similar source scoring at least 50% (git's ``-M50%``; the score is the share of bytes
  in common, counted in blocks of a line or at most 64 bytes of one, as dulwich's
  ``_count_blocks`` and git's ``diffcore-delta`` count them); no rewrite split (``-B`` off);
* objects are read through the handle (:class:`~tmsite.gitstore.repo.GitRepo`), its lock and
  its caches; a path with a hostile name is never offered as a source.

Spec: ANY2.
"""

from __future__ import annotations

import stat
from collections import Counter

from dulwich.diff_tree import (
    CHANGE_COPY,
    CHANGE_DELETE,
    CHANGE_RENAME,
    RenameDetector,
    TreeChange,
)
from dulwich.objects import ObjectID, ShaFile

from tmsite.gitstore.cache import OBJECTS
from tmsite.gitstore.repo import GitRepo, is_hostile_name

#: git's ``-M`` default: a content rename needs half of the bytes in common.
RENAME_SCORE = 50
#: git's ``diff.renameLimit`` default.
RENAME_LIMIT = 1000
#: The longest block dulwich and git count: a line, or 64 bytes of one.
BLOCK = 64


class _Store:
    """The object lookups dulwich's tree walk and detector make, served by the handle."""

    def __init__(self, repo: GitRepo) -> None:
        self.repo = repo

    def __getitem__(self, sha: bytes) -> ShaFile:
        text = sha.decode("ascii")
        type_num, data = self.repo.raw(text)
        return ShaFile.from_raw_string(type_num, data, ObjectID(sha))


def _blocks(repo: GitRepo, sha: str) -> dict[bytes, int]:
    r"""Block → bytes it accounts for, as dulwich's ``_count_blocks`` counts them.

    A block is a line with its ``\n``, or 64 bytes of a longer one; equal lines are counted
    once and multiplied, where dulwich walks the content byte by byte.
    """
    key = (repo.path, "blocks", sha)
    cached = OBJECTS.get(key)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    data = repo.blob(sha)
    lines = data.split(b"\n")
    last = lines.pop()
    counts: dict[bytes, int] = {}
    pieces = [(line + b"\n", times) for line, times in Counter(lines).items()]
    if last:
        pieces.append((last, 1))
    for whole, times in pieces:
        for at in range(0, len(whole), BLOCK):
            piece = whole[at : at + BLOCK]
            counts[piece] = counts.get(piece, 0) + times * len(piece)
    return OBJECTS.put(key, counts, 64 + len(data) + 64 * len(counts))


class _FollowDetector(RenameDetector):
    """Rename detection for one destination, with deleted files as the only sources."""

    def __init__(self, repo: GitRepo, path: bytes, copies: bool) -> None:
        super().__init__(
            _Store(repo),  # type: ignore[arg-type]
            rename_threshold=RENAME_SCORE - 1,  # dulwich keeps scores above it, git at or above
            max_files=RENAME_LIMIT,
            rewrite_threshold=None,
            find_copies_harder=copies,
        )
        self.repo = repo
        self.path = path
        self.copies = copies

    def _add_change(self, change: TreeChange) -> None:
        new, old = change.new, change.old
        if new is not None and new.path == self.path and old is None:
            self._adds.append(change)
        elif old is not None and (self.copies or change.type == CHANGE_DELETE):
            assert old.path is not None
            if not any(
                is_hostile_name(part.decode("utf-8", "surrogateescape"))
                for part in old.path.split(b"/")
            ):
                self._deletes.append(change)

    def _find_exact_renames(self) -> None:
        """The same blob under another path, chosen as git's ``find_identical_files`` does.

        A deleted source is preferred over one that stays, then one with the same base name,
        then the first by path.
        """
        for add in self._adds:
            new = add.new
            assert new is not None and new.path is not None and new.mode is not None
            base = new.path.rsplit(b"/", 1)[-1]
            best: tuple[int, int] | None = None
            chosen: TreeChange | None = None
            for delete in self._deletes:
                old = delete.old
                assert old is not None and old.path is not None and old.mode is not None
                if old.sha != new.sha or stat.S_IFMT(old.mode) != stat.S_IFMT(new.mode):
                    continue
                score = (
                    int(delete.type == CHANGE_DELETE),
                    int(old.path.rsplit(b"/", 1)[-1] == base),
                )
                if best is None or score > best:
                    best, chosen = score, delete
            if chosen is not None:
                assert chosen.old is not None
                kind = CHANGE_RENAME if chosen.type == CHANGE_DELETE else CHANGE_COPY
                self._changes.append(TreeChange(kind, chosen.old, new))
                self._adds = []
                return

    def _find_content_rename_candidates(self) -> None:
        """The most similar sources scoring at least 50%, as dulwich scores them.

        Sources are tried in order of the best score their size allows (the smaller size over
        the larger); once that bound falls below the best score found, none left can match
        it, so the choice is dulwich's without scoring every file of the tree.
        """
        candidates: list[tuple[int, TreeChange]] = []
        self._candidates = candidates
        if not self._adds or not self._should_find_content_renames():
            return
        for add in self._adds:
            new = add.new
            assert new is not None and new.sha is not None and new.mode is not None
            sources = [
                d
                for d in self._deletes
                if d.old is not None
                and d.old.mode is not None
                and stat.S_IFMT(d.old.mode) == stat.S_IFMT(new.mode)
            ]
            new_sha = new.sha.decode("ascii")
            shas = [new_sha] + [d.old.sha.decode("ascii") for d in sources]  # type: ignore[union-attr]
            new_size, *sizes = self.repo.sizes(shas)
            bounds = [
                100 if not max(size, new_size) else min(size, new_size) * 100 // max(size, new_size)
                for size in sizes
            ]
            order = sorted(range(len(sources)), key=lambda i: -bounds[i])
            best = RENAME_SCORE
            new_blocks: dict[bytes, int] | None = None
            for i in order:
                if bounds[i] < best:
                    break
                old = sources[i].old
                assert old is not None and old.sha is not None
                largest = max(sizes[i], new_size)
                if largest:
                    if new_blocks is None:
                        new_blocks = _blocks(self.repo, new_sha)
                    old_blocks = _blocks(self.repo, shas[i + 1])
                    score = _common(old_blocks, new_blocks) * 100 // largest
                else:
                    score = 100
                if score >= best:
                    best = score
                    kind = CHANGE_RENAME if sources[i].type == CHANGE_DELETE else CHANGE_COPY
                    candidates.append((-score, TreeChange(kind, old, new)))


def _common(one: dict[bytes, int], two: dict[bytes, int]) -> int:
    if len(one) > len(two):
        one, two = two, one
    return sum(min(count, two.get(block, 0)) for block, count in one.items())


def renamed_from(
    repo: GitRepo, parent_tree: str, tree: str, path: str, *, copies: bool = False
) -> tuple[str, str] | None:
    """The path (and its blob) in ``parent_tree`` that ``tree`` renamed to ``path``, or None.

    ``parent_tree`` and ``tree`` are root trees; ``path`` is a file the parent lacks.
    ``copies`` takes any file of the parent as a source, not only deleted ones (``git log
    --follow``'s ``--find-copies-harder``); else renames only (``git blame``).
    """
    key = (repo.path, "renamed", parent_tree, tree, path, copies)
    cached = OBJECTS.get(key)
    if cached is not None:
        return cached or None
    target = path.encode("utf-8", "surrogateescape")
    detector = _FollowDetector(repo, target, copies)
    found: tuple[str, str] | None = None
    for change in detector.changes_with_renames(
        ObjectID(parent_tree.encode("ascii")), ObjectID(tree.encode("ascii"))
    ):
        new, old = change.new, change.old
        if change.type not in (CHANGE_RENAME, CHANGE_COPY) or new is None or new.path != target:
            continue
        assert old is not None and old.path is not None and old.sha is not None
        found = (old.path.decode("utf-8", "surrogateescape"), old.sha.decode("ascii"))
        break
    OBJECTS.put(key, found or (), 300)
    return found
