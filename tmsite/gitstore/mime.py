"""File types by name and content: the one table in :mod:`tmsite.mime`, re-exported.

The git library types blobs with the same rules as every mount that holds files, so a file has
one type whether it is read from the checkout or from git.
"""

from __future__ import annotations

from tmsite.mime import (
    EXTENSIONS,
    KNOWN_TEXT_NAMES,
    OCTET_STREAM,
    SNIFF_BYTES,
    TEXT_PLAIN,
    guess_mime,
    guess_mime_by_name,
    is_text_mime,
    looks_binary,
)

__all__ = [
    "EXTENSIONS",
    "KNOWN_TEXT_NAMES",
    "OCTET_STREAM",
    "SNIFF_BYTES",
    "TEXT_PLAIN",
    "guess_mime",
    "guess_mime_by_name",
    "is_text_mime",
    "looks_binary",
]
