"""The fs mount's URIs, for any mount that links into fs: pure builders, no mount needed.

``tm://<host>/fs/<root>/`` is a root, ``fs/<root>/<dir>/`` a directory, ``fs/<root>/<path>`` a
file (``?at=`` a revision of it, ``?pointer=`` a part of a JSON file).
"""

from __future__ import annotations

from collections.abc import Sequence

from tmsite.core.uri import TmUri

MOUNT = "fs"


def root_uri(host: str, root: str) -> TmUri:
    """The collection of one served root."""
    return TmUri(host, MOUNT, (root,), True)


def dir_uri(host: str, parts: Sequence[str]) -> TmUri:
    """A directory: ``parts`` from the root down."""
    return TmUri(host, MOUNT, tuple(parts), True)


def file_uri(
    host: str, parts: Sequence[str], *, at: str | None = None, pointer: str | None = None
) -> TmUri:
    """A file: ``parts`` from the root down, at a revision and into a JSON part if asked."""
    return TmUri(host, MOUNT, tuple(parts)).with_params(at=at, pointer=pointer)


def checkout_file_uri(
    host: str, relpath: str, *, at: str | None = None, pointer: str | None = None
) -> TmUri:
    """A file named by its checkout-relative path (``data/autopsy.json``)."""
    return file_uri(host, relpath.split("/"), at=at, pointer=pointer)
