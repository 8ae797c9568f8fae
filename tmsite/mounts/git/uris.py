"""The git mount's URIs, for any mount that links into git: pure builders, no mount needed.

``tm://<host>/git/<repo>/`` is a repository's root, ``git/<repo>/<path>`` a file or (ending in
``/``) a directory; ``?at=`` a revision, kept on every URI built at one.
"""

from __future__ import annotations

from collections.abc import Sequence

from tmsite.core.uri import TmUri

MOUNT = "git"


def repo_root(host: str, repo: str, at: str | None = None) -> TmUri:
    """A repository's root, at ``at`` (the default revision when None)."""
    return TmUri(host, MOUNT, (repo,), True).with_params(at=at)


def path_uri(
    host: str, repo: str, parts: Sequence[str], *, collection: bool = False, at: str | None = None
) -> TmUri:
    """``parts`` in repository ``repo`` (the repository's root when ``parts`` is empty)."""
    return TmUri(host, MOUNT, (repo, *parts), collection or not parts).with_params(at=at)


def file_uri(host: str, repo: str, relpath: str, at: str | None = None) -> TmUri:
    """A file named by its path in the repository (``scripts/build.py``)."""
    return path_uri(host, repo, relpath.split("/"), at=at)
