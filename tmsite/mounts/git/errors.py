"""The git mount's one translation of gitstore's refusals into the namespace's.

:func:`refusals` is the one place they are caught (the shape of httpx's
``map_httpcore_exceptions``): every gitstore call of the mount runs inside it. :func:`refusal`
is the table, one row per gitstore refusal, found along the exception's class hierarchy (the
most specific row wins: ``AmbiguousRef`` before ``NoSuchRef``); a refusal with no row of its
own is a ``git-error``.

What a refusal suggests (refs, siblings, roots) is addressed by the read it interrupted: a
:class:`RepoRead` suggests the repository's URIs, a :class:`CheckoutRead` (an fs file read at a
revision, ``fs/…?at=``) the same fs file at real refs.

Spec: GIT, RJ1.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import singledispatch

from typing_extensions import override

from tmsite import gitstore
from tmsite.core.errors import BadFacet, Denied, GitError, NoSuchRef, NotFound, OutOfRoot, Refusal
from tmsite.core.nearest import rank
from tmsite.core.paths import NOT_OFFERED, PLAIN_NAMES, denied_name
from tmsite.core.uri import TmUri
from tmsite.mounts.fs import uris as fs_uris
from tmsite.mounts.git import uris as git_uris

#: At most this many refs are offered as ``valid`` for a malformed ``at``.
VALID_REFS = 20


@dataclass
class RepoRead:
    """A read of a path in a served repository: what it suggests is in that repository.

    ``uri``'s ``at`` stays on suggested paths; ``repo`` is the handle when opened (for the
    refs a malformed ``at`` is offered).
    """

    host: str
    uri: TmUri
    repo_name: str
    repo: gitstore.GitRepo | None

    def at_ref(self, ref: str) -> str:
        """Where to read at a real ``ref``: the repository's root at it."""
        label = None if ref == "HEAD" else ref
        return str(git_uris.repo_root(self.host, self.repo_name, label))

    def roots(self) -> list[str]:
        """What a path that leaves the tree is pointed back to."""
        return [str(git_uris.repo_root(self.host, self.repo_name))]

    def sibling(self, parts: tuple[str, ...], is_dir: bool) -> str | None:
        """A path that exists at the revision, as a suggestion (None: not one to offer)."""
        at = self.uri.param("at")
        return str(git_uris.path_uri(self.host, self.repo_name, parts, collection=is_dir, at=at))

    def fallback(self) -> list[str]:
        """What a missing path suggests when no sibling is near it."""
        return [str(git_uris.repo_root(self.host, self.repo_name, self.uri.param("at")))]


class CheckoutRead(RepoRead):
    """An fs file read at a revision: what it suggests is fs files (files only) at real refs."""

    @override
    def at_ref(self, ref: str) -> str:
        return str(self.uri.identity.with_params(at=ref))

    @override
    def roots(self) -> list[str]:
        return [str(fs_uris.dir_uri(self.host, self.uri.path[:1]))]

    @override
    def sibling(self, parts: tuple[str, ...], is_dir: bool) -> str | None:
        if is_dir:
            return None  # fs reads at a revision are files only
        return str(fs_uris.file_uri(self.host, parts, at=self.uri.param("at")))

    @override
    def fallback(self) -> list[str]:
        return []


@contextmanager
def refusals(read: RepoRead) -> Iterator[None]:
    """Run gitstore calls for ``read``; a gitstore refusal leaves as the namespace's."""
    try:
        yield
    except gitstore.GitStoreError as exc:
        raise refusal(exc, read) from exc


@singledispatch
def refusal(exc: gitstore.GitStoreError, read: RepoRead) -> Refusal:
    """The namespace's refusal for a gitstore refusal (this row: one with no row of its own)."""
    detail = exc.detail if isinstance(exc, gitstore.GitError) else str(exc)
    return GitError(str(read.uri), f"the repository could not be read: {detail}")


@refusal.register
def _bad_ref(exc: gitstore.BadRef, read: RepoRead) -> Refusal:
    names: list[str] = ["HEAD"]
    if read.repo is not None:
        try:
            branches, tags = gitstore.list_refs(read.repo)
            names += [*branches, *tags]
        except gitstore.GitStoreError:
            pass
    return BadFacet(
        str(read.uri),
        f"at= is refused: {exc.why}; it takes a branch, a tag, a full or abbreviated "
        "commit, or an ISO date or datetime",
        valid=names[:VALID_REFS],
        rule=exc.why,
    )


@refusal.register
def _ambiguous_ref(exc: gitstore.AmbiguousRef, read: RepoRead) -> Refusal:
    return NoSuchRef(
        str(read.uri),
        f"{exc.ref!r} abbreviates more than one commit: give more digits",
        nearest=[read.at_ref(ref) for ref in exc.nearest],
        candidates=[read.at_ref(sha) for sha in exc.candidates],
    )


@refusal.register
def _not_a_commit(exc: gitstore.NotACommit, read: RepoRead) -> Refusal:
    return NoSuchRef(
        str(read.uri),
        f"the tag {exc.ref!r} points at a {exc.kind}, not a commit: ?at= takes a branch, a "
        "tag of a commit, a commit or a date",
        nearest=[read.at_ref(ref) for ref in exc.nearest if ref != exc.ref],
        tagged=exc.kind,
    )


@refusal.register
def _no_such_ref(exc: gitstore.NoSuchRef, read: RepoRead) -> Refusal:
    nearest = [read.at_ref(ref) for ref in exc.nearest]
    if exc.starts is None:
        why = f"no branch, tag, commit or date {exc.ref!r} in {read.repo_name}"
        return NoSuchRef(str(read.uri), why, nearest=nearest)
    # a date before the history: say where it starts
    why = f"{read.repo_name} has no commit at or before {exc.ref!r}: its history starts at "
    return NoSuchRef(str(read.uri), why + exc.starts, nearest=nearest, starts=exc.starts)


@refusal.register
def _out_of_root(exc: gitstore.OutOfRoot, read: RepoRead) -> Refusal:
    return OutOfRoot(str(read.uri), PLAIN_NAMES, roots=read.roots())


@refusal.register
def _hostile_name(exc: gitstore.HostileName, read: RepoRead) -> Refusal:
    return Denied(str(read.uri), NOT_OFFERED)


@refusal.register
def _path_not_found(exc: gitstore.PathNotFound, read: RepoRead) -> Refusal:
    return NotFound(str(read.uri), "no such path at that revision", nearest=_nearest(exc, read))


@refusal.register(gitstore.NotATree)
@refusal.register(gitstore.NotABlob)
def _not_that_kind(exc: gitstore.GitStoreError, read: RepoRead) -> Refusal:
    return NotFound(str(read.uri), str(exc), nearest=[])


def _nearest(exc: gitstore.PathNotFound, read: RepoRead) -> list[str]:
    """The siblings nearest the missing segment, at the same revision."""
    base = exc.deepest_existing.split("/") if exc.deepest_existing else []
    asked = exc.path.split("/")
    wanted = asked[len(base)] if len(asked) > len(base) else asked[-1]
    candidates = []
    for name in exc.siblings:
        plain = name.rstrip("/")
        if denied_name(plain):
            continue
        target = read.sibling((*base, plain), name.endswith("/"))
        if target is not None:
            candidates.append((name, target))
    return rank(wanted, candidates, exclude=str(read.uri)) or read.fallback()
