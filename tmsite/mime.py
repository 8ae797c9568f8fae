"""File types by name and content — the one table every mount that holds files uses.

Independent of any backend: the ``fs`` mount, the ``git`` mount and :mod:`tmsite.gitstore` all
type files here, so a file has the same type whichever way it is read. The rules, in order:

1. the extension table :data:`EXTENSIONS`;
2. extension-less known names (``LICENSE``, ``Makefile``…, also when the name is one of them
   followed by a dot and more, as ``README.ja``) are ``text/plain``;
3. Python's :mod:`mimetypes` guess;
4. a sniff of the first :data:`SNIFF_BYTES` bytes: no NUL byte and valid UTF-8 (a multibyte
   character cut off in the last three bytes tolerated) → ``text/plain``;
5. otherwise ``application/octet-stream``.

"Is text" means ``text/*``, ``application/json`` or ``image/svg+xml``.

Two spellings of the same rules are kept, one per caller: :func:`by_name`, :func:`sniff` and
:func:`is_text` (the mounts), :func:`guess_mime_by_name`, :func:`guess_mime`,
:func:`looks_binary` and :func:`is_text_mime` (:mod:`tmsite.gitstore`).

Spec: NS5.
"""

from __future__ import annotations

import mimetypes

#: How many leading bytes the sniff reads.
SNIFF_BYTES = 8192

#: Extension (lower case, with its dot) → media type; tried first.
EXTENSIONS: dict[str, str] = {
    ".md": "text/markdown",
    ".mdx": "text/markdown",
    ".txt": "text/plain",
    ".py": "text/x-python",
    ".json": "application/json",
    ".csv": "text/csv",
    ".ts": "text/typescript",
    ".tsx": "text/typescript",
    ".mjs": "text/javascript",
    ".js": "text/javascript",
    ".css": "text/css",
    ".html": "text/html",
    ".svg": "image/svg+xml",
    ".yml": "text/yaml",
    ".yaml": "text/yaml",
    ".toml": "text/toml",
    ".s": "text/x-asm",
    ".asm": "text/x-asm",
    ".inc": "text/x-asm",
    ".lock": "text/plain",
    ".rs": "text/x-rust",
    ".sh": "text/x-shellscript",
    ".c": "text/x-c",
    ".h": "text/x-c",
    ".cfg": "text/plain",
    ".ini": "text/plain",
    ".xml": "text/xml",
    ".log": "text/plain",
    ".service": "text/plain",
    ".nginx": "text/plain",
    ".conf": "text/plain",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".pdf": "application/pdf",
}

#: Names without a telling extension that are plain text.
KNOWN_TEXT_NAMES: frozenset[str] = frozenset(
    {
        "LICENSE",
        "VERSION",
        "Makefile",
        "Dockerfile",
        "README",
        "COPYING",
        "NOTICE",
        "CHANGELOG",
        "AUTHORS",
    }
)

OCTET_STREAM = "application/octet-stream"
TEXT_PLAIN = "text/plain"
_TEXT_APPLICATION = frozenset({"application/json", "image/svg+xml"})


def looks_binary(first_bytes: bytes) -> bool:
    """Whether the leading bytes of a file look like binary data.

    Only the first :data:`SNIFF_BYTES` bytes are looked at. Text is: no NUL byte, and valid
    UTF-8 — a multibyte character cut off by the end of the sample (in its last three bytes)
    is tolerated, since the sample may end inside it.

    Args:
        first_bytes: The start of the content (more is accepted and ignored).

    Returns:
        True when the sample is not text by that rule.
    """
    sample = first_bytes[:SNIFF_BYTES]
    if b"\0" in sample:
        return True
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        cut_short = exc.reason == "unexpected end of data" and exc.start >= len(sample) - 3
        return not cut_short
    return False


def guess_mime_by_name(name: str) -> str | None:
    """The media type a name alone implies, or None when only the content can tell.

    Args:
        name: A file name or a slash-separated path (only the last segment counts).
    """
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    dot = base.rfind(".")
    if dot > 0:
        known = EXTENSIONS.get(base[dot:].lower())
        if known is not None:
            return known
    if base in KNOWN_TEXT_NAMES or base.split(".", 1)[0] in KNOWN_TEXT_NAMES:
        return TEXT_PLAIN
    guessed, _encoding = mimetypes.guess_type(base, strict=False)
    return guessed


def guess_mime(name: str, first_bytes: bytes | None = None) -> str:
    """The media type of a file from its name, then its first bytes.

    Args:
        name: The file name or path.
        first_bytes: The start of its content (at least :data:`SNIFF_BYTES` bytes when the file
            is that long), or None when the content is not at hand — then an unknown name is
            ``application/octet-stream``.

    Returns:
        A media type string such as ``text/markdown``.
    """
    known = guess_mime_by_name(name)
    if known is not None:
        return known
    if first_bytes is not None and not looks_binary(first_bytes):
        return TEXT_PLAIN
    return OCTET_STREAM


def is_text_mime(mime: str) -> bool:
    """Whether a media type is read as text (``text/*``, JSON or SVG; parameters ignored)."""
    base = mime.split(";", 1)[0].strip().lower()
    return base.startswith("text/") or base in _TEXT_APPLICATION


# ---- the mounts' spelling -------------------------------------------------------------------


def by_name(name: str) -> str | None:
    """The media type a file name alone tells, or None when only the content can."""
    return guess_mime_by_name(name)


def sniff(head: bytes) -> str:
    """``text/plain`` for UTF-8 without NUL (a character cut at the end tolerated), else bytes."""
    return OCTET_STREAM if looks_binary(head) else TEXT_PLAIN


def is_text(mime_type: str) -> bool:
    """Whether a file of this type is read as text."""
    return is_text_mime(mime_type)
