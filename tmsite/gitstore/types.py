"""The values the git library returns: small frozen records, no dulwich types."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

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
    """One entry of a tree listing.

    Attributes:
        name: The entry's own name.
        path: Its path from the repository root.
        kind: As :attr:`Node.kind`.
        mode: The git file mode.
        sha: The object id.
        size: Bytes for blobs and symlinks, None otherwise.
        depth: 1 for the listed directory's own children, 2 for theirs, and so on.
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
