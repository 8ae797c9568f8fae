"""Media types of files the box holds: by extension, by well-known name, then by content."""

from __future__ import annotations

import mimetypes

SNIFF_BYTES = 8192

_BY_EXTENSION: dict[str, str] = {
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
_KNOWN_TEXT_NAMES = frozenset(
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


def by_name(name: str) -> str | None:
    """The media type a file name alone tells, or None when only the content can."""
    dot = name.rfind(".")
    if dot > 0:
        found = _BY_EXTENSION.get(name[dot:].lower())
        if found:
            return found
    if name in _KNOWN_TEXT_NAMES or name.split(".", 1)[0] in _KNOWN_TEXT_NAMES:
        return "text/plain"
    guessed, _ = mimetypes.guess_type(name, strict=False)
    return guessed


def sniff(head: bytes) -> str:
    """``text/plain`` for UTF-8 without NUL (a character cut at the end tolerated), else bytes."""
    if b"\x00" in head:
        return OCTET_STREAM
    for cut in range(4):
        try:
            head[: len(head) - cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
        return "text/plain"
    return OCTET_STREAM


def is_text(mime_type: str) -> bool:
    """Whether a file of this type is read as text."""
    return mime_type.startswith("text/") or mime_type in {"application/json", "image/svg+xml"}
