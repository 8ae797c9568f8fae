"""Paths inside a tree: normalised once, refused when they could leave it.

Spec: GIT.
"""

from __future__ import annotations

from collections.abc import Iterable

from tmsite.gitstore.errors import HostileName, OutOfRoot


def normalise(segments: Iterable[str] | str) -> tuple[str, ...]:
    r"""Check a path, given as its segments (or as one slash-separated string), for reading.

    A string is split on ``/``; one trailing slash is allowed (a directory) and ``""`` is the
    root. Nothing is collapsed: a ``..`` or ``.`` segment, an empty segment (``a//b``, a
    leading ``/``), and a segment holding ``/``, ``\`` or NUL are refused rather than
    interpreted, so no spelling can reach outside the tree. Segments come percent-decoded
    once; the answer is a tuple of them (empty for the root).

    Raises:
        OutOfRoot: a segment is a dot segment, empty, absolute or holds a separator.
        HostileName: a segment is ``.git`` (in any letter case).
    """
    if isinstance(segments, str):
        text = segments
        if text in ("", "/"):
            return ()
        if text.startswith("/"):
            raise OutOfRoot(text)
        parts = text[:-1].split("/") if text.endswith("/") else text.split("/")
    else:
        parts = list(segments)
        text = "/".join(parts)
    for part in parts:
        if part in ("", ".", "..") or "/" in part or "\\" in part or "\0" in part:
            raise OutOfRoot(text)
        if part.lower() == ".git":
            raise HostileName(text, part)
    return tuple(parts)


def join(parts: tuple[str, ...]) -> str:
    """The slash-separated form of normalised segments (``""`` for the root)."""
    return "/".join(parts)
