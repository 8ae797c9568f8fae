"""The values the git library returns: small frozen records, no dulwich types."""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, overload

Kind = Literal["blob", "tree", "submodule", "symlink"]


@dataclass(frozen=True, slots=True)
class Resolved:
    """A ref resolved to a commit.

    Attributes:
        commit: The full commit id (40 hex digits).
        label: What the caller asked for, as it should be shown again (``HEAD``, ``main``,
            ``v1``, the hex or the date text as given).
        is_default: True when no ref (or ``HEAD``) was asked for, so the default was read.
    """

    commit: str
    label: str
    is_default: bool


@dataclass(frozen=True, slots=True)
class Node:
    """What a path is at a commit.

    Attributes:
        kind: ``blob``, ``tree``, ``submodule`` (a gitlink) or ``symlink``.
        mode: The git file mode (``0o100644``, ``0o040000``, ``0o160000``, ``0o120000``…).
        sha: The object id (for a submodule, the pinned commit of the other repository).
        size: Bytes of a blob or of a symlink's target text; None for trees and submodules.
        path: The normalised path (``""`` is the root tree).
    """

    kind: Kind
    mode: int
    sha: str
    size: int | None
    path: str


@dataclass(frozen=True, slots=True)
class TreeEntry:
    """One entry of a tree listing, its ``path`` from the repository root.

    ``size`` is a blob's or symlink's bytes, else None; ``depth`` is 1 for the listed
    directory's own children, 2 for theirs, and so on.
    """

    name: str
    path: str
    kind: Kind
    mode: int
    sha: str
    size: int | None
    depth: int = 1


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One commit of a history.

    Attributes:
        commit: The full commit id.
        short: The first seven hex digits, for display.
        author_name: The author's name only — never an e-mail address.
        date: The author date in UTC, ISO-8601 with its offset (``2026-01-02T03:04:05+00:00``).
        subject: The first paragraph of the message on one line.
        path: The followed file's path in this commit (a file's log follows renames; empty
            for a directory's log).
        renamed_from: The path the commit renamed the file from, else None.
        parent: The commit's first parent, where ``renamed_from`` is read; None at a root.
    """

    commit: str
    short: str
    author_name: str
    date: str
    subject: str
    path: str = ""
    renamed_from: str | None = None
    parent: str | None = None


@dataclass(frozen=True, slots=True)
class BlameLine:
    """One line of a file with the commit that last changed it.

    Attributes:
        line_no: 1-based line number in the blamed version.
        commit: The full id of the commit that introduced the line.
        author_name: That commit's author name (no e-mail).
        date: That commit's author date, as :attr:`LogEntry.date`.
        text: The line without its newline, decoded as UTF-8 with invalid bytes replaced.
        path: The file's path in that commit (another than the blamed one across a rename).
    """

    line_no: int
    commit: str
    author_name: str
    date: str
    text: str
    path: str = ""


class Blame(Sequence[BlameLine]):
    """The blame of consecutive lines of a file, in the compact form it is kept in.

    Each distinct origin (commit, author, date, path) is held once, each line as an index
    into them (one array), and the lines' text as one string: a kept blame of thousands of
    lines is a handful of objects, which another worker unpickles in a millisecond or two
    where a record per line made it allocate tens of thousands (and set off the collector
    over the worker's whole heap). Lines are :class:`BlameLine` records when read.

    A slice is a :class:`Blame` of those lines (sharing the origins); a blame equals any
    sequence of the same records.

    Args:
        commits, authors, dates, paths: The origins, one item each.
        owners: Each line's origin, by index.
        text: The lines joined by newlines (a line holds none).
        first: The first line's number.
    """

    __slots__ = ("_authors", "_commits", "_dates", "_first", "_owners", "_paths", "_split", "_text")

    def __init__(
        self,
        commits: tuple[str, ...],
        authors: tuple[str, ...],
        dates: tuple[str, ...],
        paths: tuple[str, ...],
        owners: array[int],
        text: str,
        first: int = 1,
    ) -> None:
        self._commits = commits
        self._authors = authors
        self._dates = dates
        self._paths = paths
        self._owners = owners
        self._text = text
        self._first = first
        self._split: list[str] | None = None

    @classmethod
    def of(cls, lines: Sequence[BlameLine]) -> Blame:
        """The compact form of consecutive lines' records."""
        index: dict[tuple[str, str, str, str], int] = {}
        owners = array("I")
        for line in lines:
            origin = (line.commit, line.author_name, line.date, line.path)
            owners.append(index.setdefault(origin, len(index)))
        origins = list(index)

        def column(at: int) -> tuple[str, ...]:
            return tuple(origin[at] for origin in origins)

        text = "\n".join(line.text for line in lines)
        first = lines[0].line_no if lines else 1
        return cls(column(0), column(1), column(2), column(3), owners, text, first)

    def __reduce__(self) -> tuple[object, ...]:
        origins = (self._commits, self._authors, self._dates, self._paths)
        return (Blame, (*origins, self._owners, self._text, self._first))

    def __len__(self) -> int:
        return len(self._owners)

    @overload
    def __getitem__(self, at: int) -> BlameLine: ...
    @overload
    def __getitem__(self, at: slice) -> Blame: ...
    def __getitem__(self, at: int | slice) -> BlameLine | Blame:
        if isinstance(at, slice):
            start, stop, step = at.indices(len(self))
            if step != 1:
                raise ValueError("a blame is sliced in steps of one")
            stop = max(start, stop)
            return Blame(
                self._commits,
                self._authors,
                self._dates,
                self._paths,
                self._owners[start:stop],
                "\n".join(self._texts()[start:stop]),
                self._first + start,
            )
        if at < 0:
            at += len(self)
        if not 0 <= at < len(self):
            raise IndexError("blame line out of range")
        return self._line(at, self._texts()[at])

    def __iter__(self) -> Iterator[BlameLine]:
        for at, text in enumerate(self._texts()):
            yield self._line(at, text)

    def _texts(self) -> list[str]:
        if self._split is None:
            self._split = self._text.split("\n") if self._owners else []
        return self._split

    def _line(self, at: int, text: str) -> BlameLine:
        who = self._owners[at]
        return BlameLine(
            line_no=self._first + at,
            commit=self._commits[who],
            author_name=self._authors[who],
            date=self._dates[who],
            text=text,
            path=self._paths[who],
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Blame({len(self)} lines from {self._first}, {len(self._commits)} origins)"

    def size(self) -> int:
        """About the bytes it holds in memory, its text split into lines once read."""
        origins = sum(
            len(a) + len(p) + 170 for a, p in zip(self._authors, self._paths, strict=True)
        )
        return 200 + 2 * len(self._text) + 60 * len(self._owners) + origins
