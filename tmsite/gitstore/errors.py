"""The exceptions of the git library.

Every refusal the library makes is one of these classes, each carrying the fields a caller needs
to explain it (the nearest refs, the deepest existing ancestor and its children…). The ``git``
mount translates them into its own rejections by one table; nothing else escapes the library:
dulwich and OS errors met while reading are wrapped in :class:`GitError`.
"""

from __future__ import annotations


class GitStoreError(Exception):
    """The base of every refusal raised by :mod:`tmsite.gitstore`."""


class BadRef(GitStoreError):
    """A ref text refused by its shape, before any lookup; ``why`` says which rule it broke."""

    def __init__(self, text: str, why: str) -> None:
        super().__init__(f"bad ref {text!r}: {why}")
        self.text = text
        self.why = why


class NoSuchRef(GitStoreError):
    """A well-formed ref that names no commit of the repository.

    Attributes:
        ref: The ref text that did not resolve.
        nearest: Up to five real ref names (``HEAD``, branches, tags), nearest first by edit
            distance.
        starts: For a date before the history: when the history starts (the committer date of
            the first commit on the default ref's first-parent chain, ISO 8601 in UTC); else
            None.
    """

    def __init__(self, ref: str, nearest: list[str], starts: str | None = None) -> None:
        super().__init__(f"no such ref {ref!r}")
        self.ref = ref
        self.nearest = nearest
        self.starts = starts


class AmbiguousRef(NoSuchRef):
    """An abbreviated commit id that more than one commit starts with.

    ``candidates`` are the full ids of (up to five of) the commits it could mean, sorted.
    """

    def __init__(self, ref: str, nearest: list[str], candidates: list[str]) -> None:
        super().__init__(ref, nearest)
        self.args = (f"ambiguous abbreviated commit {ref!r}",)
        self.candidates = candidates


class NotACommit(NoSuchRef):
    """A tag that points at a blob or a tree (``kind``, its tags followed), not a commit."""

    def __init__(self, ref: str, nearest: list[str], kind: str) -> None:
        super().__init__(ref, nearest)
        self.args = (f"the tag {ref!r} points at a {kind}, not a commit",)
        self.kind = kind


class OutOfRoot(GitStoreError):
    """A path that would leave the tree it is resolved in (dot segments, absolute forms…)."""

    def __init__(self, path: str) -> None:
        super().__init__(f"path leaves the tree: {path!r}")
        self.path = path


class HostileName(GitStoreError):
    """A path naming an entry the library never returns (``.git`` and the like): ``name``."""

    def __init__(self, path: str, name: str) -> None:
        super().__init__(f"path {path!r} names a refused entry {name!r}")
        self.path = path
        self.name = name


class PathNotFound(GitStoreError):
    """A path that does not exist in the tree at the commit.

    Attributes:
        path: The path that was asked for.
        deepest_existing: The deepest ancestor directory that does exist (``""`` is the root).
        siblings: The names of that directory's children (directories end with ``/``), in tree
            order, hostile names left out — the material for "nearest" suggestions.
    """

    def __init__(self, path: str, deepest_existing: str, siblings: list[str]) -> None:
        super().__init__(f"no such path {path!r}")
        self.path = path
        self.deepest_existing = deepest_existing
        self.siblings = siblings


class NotATree(GitStoreError):
    """A directory operation on a ``kind`` that is not one (``blob``, ``symlink``…)."""

    def __init__(self, path: str, kind: str) -> None:
        super().__init__(f"{path!r} is a {kind}, not a tree")
        self.path = path
        self.kind = kind


class NotABlob(GitStoreError):
    """A content read of a path or object id that is a ``kind`` (``tree``, ``commit``…)."""

    def __init__(self, path: str, kind: str) -> None:
        super().__init__(f"{path!r} is a {kind}, not a blob")
        self.path = path
        self.kind = kind


class GitError(GitStoreError):
    """The repository itself could not be read (missing, corrupt, unreadable).

    ``detail`` says what failed, without machine paths beyond the repository's own.
    """

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail
