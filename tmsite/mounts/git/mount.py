"""The ``git`` mount: the served repositories, at any branch, tag, commit or date.

``tm://<host>/git/`` lists the repositories: the served checkout's own (named by the setting
``TM_CHECKOUT_REPO``) and the configured neighbours (``TM_GIT_REPOS``). Below that,
``git/<repo>/<path>`` is the repository's tree, read through :mod:`tmsite.gitstore` (dulwich
plumbing, never a subprocess, never a revision parser on client text).

Order of checks on every read: the repository name; the parameters this kind of target takes;
``at`` by its shape (:func:`tmsite.gitstore.validate_ref`, before any lookup); the path by
:func:`tmsite.gitstore.normalise` (dot segments, empty, absolute, separators → ``out-of-root``)
and the fs deny-list (→ ``denied``); then the ref is resolved and the path looked up.

What a target reads as (``?as=``):

* a directory (URI ending in ``/``): ``tree`` (default; ``depth`` 1–8, a paged listing) or
  ``log``;
* a file or a symlink: ``raw`` (default; a symlink reads as its target text, never followed),
  ``stat``, ``log`` (``n`` 1–100, default 20), ``blame`` (JSON, one record per line; ``lines``
  blames a span alone, as ``git blame -L``, unless the whole blame is kept);
* a submodule: its pin record (default and ``stat``) or ``log`` (the commits that moved it).

``?at=`` stays on every URI a read emits; a read at another revision than the default links
``latest-version`` to the default. Gitstore's refusals become rejections in one table
(:mod:`tmsite.mounts.git.errors`). Reads at a commit are immutable: gitstore caches what it
reads, and the bodies this mount assembles are cached beside them, keyed by repository,
commit, path and facet.

Spec: GIT, FS, LK2.
"""

from __future__ import annotations

import builtins
import contextlib
import math
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from django.core import checks
from typing_extensions import override

from tmsite import gitstore, mime
from tmsite.check_registry import check
from tmsite.core import work
from tmsite.core.errors import (
    BadArgument,
    BadFacet,
    Binary,
    Denied,
    GitError,
    NotFound,
    Refusal,
    TooCostly,
    path_refusal,
)
from tmsite.core.facets import UnknownFacet, parse_facets
from tmsite.core.links import Link
from tmsite.core.nearest import rank
from tmsite.core.parts import READ_CAP, check_range, cut_range, too_large
from tmsite.core.paths import (
    NOT_OFFERED,
    CheckoutRoots,
    PathRefused,
    denied_name,
    display,
)
from tmsite.core.types import (
    Content,
    Document,
    Entry,
    LazyEntries,
    Listing,
    Request,
    Stat,
    Template,
    capped,
    vnd,
)
from tmsite.core.uri import TmUri
from tmsite.gitstore import kept
from tmsite.gitstore.cache import OBJECTS, read_get, read_put
from tmsite.mounts.base import ChangeSource, Mount, Watching
from tmsite.mounts.fs import uris as fs_uris
from tmsite.mounts.git import uris as git_uris
from tmsite.mounts.git.errors import CheckoutRead, RepoRead, refusals
from tmsite.mounts.git.imports import ManifestCache, ManifestError, read_manifest
from tmsite.mounts.git.settings import GitSettings, is_repository, read_settings
from tmsite.mounts.git.watch import REFS_SEEN, RefWatcher

#: Facets by what the path is.
TREE_FACETS = ("log", "tree")
FILE_FACETS = ("blame", "log", "raw", "stat")
SUBMODULE_FACETS = ("log", "stat")
ALL_FACETS = ("blame", "log", "raw", "stat", "tree")
#: Parameters each facet takes (``as`` and ``at`` always).
_PARAMS: dict[str, tuple[str, ...]] = {
    "raw": ("lines", "range", "pointer"),
    "stat": ("pointer",),
    "log": ("n", "pointer"),
    "blame": ("lines", "pointer"),
    "record": ("pointer",),
}
DEFAULT_LOG = 20
#: Commits of each repository offered to the search index: the newest at its default revision.
INDEXED_COMMITS = 100
#: A file read whole (for ``lines``, ``pointer`` or ``blame``) may be at most this large.
WHOLE_READ_LIMIT = 16 * 1024 * 1024
#: How long a resolved ref is trusted before the ref store is read again (seconds).
REF_TTL = 1.0
COMPLETION_LIMIT = 101
N_SUGGESTIONS = ("1", "5", "10", "20", "50", "100")


# ---- configuration ---------------------------------------------------------------------------


class Repository:
    """One served repository: its name, where it is, its pinned default, a shared handle."""

    def __init__(self, name: str, path: Path, default_ref: str | None, title: str) -> None:
        self.name = name
        self.path = path
        self.default_ref = default_ref
        self.title = title
        self._handle: gitstore.GitRepo | None = None
        self._lock = threading.Lock()

    def handle(self) -> gitstore.GitRepo:
        """The repository handle, opened once (raises ``gitstore.GitError``)."""
        if self._handle is None:
            with self._lock:
                if self._handle is None:
                    self._handle = gitstore.open_repo(self.path)
        return self._handle


@dataclass(frozen=True)
class At:
    """The revision a request reads: the commit, the label as asked, whether it is the default."""

    commit: str
    label: str | None
    is_default: bool

    @property
    def shown(self) -> str:
        """The revision as bodies name it: the label asked, or ``HEAD`` for the default."""
        return self.label if self.label is not None else "HEAD"


@dataclass(frozen=True)
class Target:
    """A checked request: repository, revision, path segments and what the path is."""

    served: Repository
    repo: gitstore.GitRepo
    at: At
    parts: tuple[str, ...]
    node: gitstore.Node

    @property
    def path(self) -> str:
        """The path in the repository, ``/``-joined (``""`` for its root)."""
        return "/".join(self.parts)

    def about(self) -> dict[str, str]:
        """What every body read at the target says of it: repository, path and revision."""
        return {
            "repository": self.served.name,
            "path": display(self.path),
            "at": self.at.shown,
            "commit": self.at.commit,
        }

    def cache_key(self, host: str, facet: str, *more: object) -> tuple[object, ...]:
        """The key of a body assembled for this target.

        The URIs in the body name the host and the repository as served, so both are part of
        the key beside the commit and the path.
        """
        return (
            host,
            self.served.name,
            self.repo.path,
            self.at.commit,
            self.path,
            facet,
            self.at.label,
            *more,
        )


# ---- the mount -------------------------------------------------------------------------------


class GitMount(Mount):
    """The served repositories by name, read through gitstore by the order of checks above.

    ``checkout_repo`` names the repository of the served checkout (its files link to their
    fs working copies, and fs's ``?at=`` reads come here); ``imports_file`` is the import
    manifest that links copied docs to their origins.
    """

    name = "git"
    title = "Git repositories"
    what = (
        "The served checkout's repository and its neighbours, read at any branch, tag, commit "
        "or date: trees, files, history, blame and submodule pins."
    )
    listing_facets = (None, "tree")
    listing_params = ("at", "depth")
    sticky_params = ("at",)

    def __init__(
        self,
        host: str,
        repos: Mapping[str, str | Path],
        *,
        checkout_repo: str | None = None,
        default_refs: Mapping[str, str] | None = None,
        imports_file: Path | None = None,
    ) -> None:
        super().__init__(host)
        refs = default_refs or {}
        self.checkout_repo = checkout_repo
        self.repos: dict[str, Repository] = {}
        for name in sorted(repos):
            title = "the served checkout" if name == checkout_repo else "a neighbouring repository"
            self.repos[name] = Repository(name, Path(repos[name]), refs.get(name), title)
        self.imports = ManifestCache(imports_file)
        self._resolved: dict[tuple[str, str | None], tuple[float, int, gitstore.Resolved]] = {}
        self._resolved_lock = threading.Lock()
        #: The checkout's served roots (the fs mount's), handed over by the registry when fs is
        #: served: working-copy links and ``fs/…?at=`` reads follow the same rules.
        self.checkout_files: CheckoutRoots | None = None

    @classmethod
    def from_settings(cls, host: str) -> GitMount:
        """The mount the settings describe.

        A checkout that is not a repository is left out; the system check ``tm.W010`` says so.
        """
        conf = read_settings()
        repos: dict[str, str | Path] = dict(conf.neighbours)
        name = conf.checkout_name
        if name is not None and is_repository(conf.checkout):
            repos[name] = conf.checkout
        return cls(
            host,
            repos,
            checkout_repo=name if name in repos else None,
            default_refs=conf.default_refs,
            imports_file=conf.imports_file,
        )

    # ---- addresses -------------------------------------------------------------------------

    def repo_root(self, name: str, at: str | None = None) -> TmUri:
        """The URI of repository ``name``'s root, at ``at`` (None: the default revision)."""
        return git_uris.repo_root(self.host, name, at)

    def path_uri(
        self, name: str, parts: Sequence[str], *, collection: bool, at: str | None
    ) -> TmUri:
        """The URI of ``parts`` in repository ``name`` (the root when ``parts`` is empty)."""
        return git_uris.path_uri(self.host, name, parts, collection=collection, at=at)

    # ---- checks, in order ------------------------------------------------------------------

    def served(self, uri: TmUri) -> Repository:
        """The repository ``uri`` names (its first segment below the mount).

        Raises:
            NotFound: no repository of that name is served; ``nearest`` holds the closest.
        """
        name = uri.path[0]
        found = self.repos.get(name)
        if found is None:
            candidates = [(n, str(self.repo_root(n))) for n in self.repos]
            raise NotFound(
                str(uri),
                f"no repository named {display(name)!r} is served",
                nearest=rank(name, candidates, exclude=str(uri)),
            )
        return found

    def handle(self, served: Repository, uri: TmUri) -> gitstore.GitRepo:
        """``served``'s repository handle; one that does not open is a ``git-error`` on ``uri``."""
        try:
            return served.handle()
        except gitstore.GitError as exc:
            raise GitError(str(uri), f"the repository could not be opened: {exc.detail}") from exc

    @override
    def admits(self, uri: TmUri) -> None:
        if uri.path:
            served = self.served(uri)
            if len(uri.path) > 1:
                self.check_path(uri, served)

    def asked(self, uri: TmUri, served: Repository, repo: gitstore.GitRepo | None) -> RepoRead:
        """The read gitstore's refusals are translated for (:mod:`.errors`)."""
        return RepoRead(self.host, uri, served.name, repo)

    def resolved(self, served: Repository, label: str | None) -> gitstore.Resolved:
        """``label`` resolved in ``served`` (raises gitstore's refusals).

        An answer is trusted for ``REF_TTL`` seconds, so a burst of reads reads the ref store
        once, unless a ref was seen to move meanwhile (:func:`refs_moved`).
        """
        key = (served.name, label)
        now = time.monotonic()
        seen = REFS_SEEN[0]
        cached = self._resolved.get(key)
        if cached is not None and cached[0] > now and cached[1] == seen:
            return cached[2]
        found = gitstore.resolve(served.handle(), label, served.default_ref)
        with self._resolved_lock:
            if len(self._resolved) > 4096:
                self._resolved.clear()
            self._resolved[key] = (now + REF_TTL, seen, found)
        return found

    def check_path(self, uri: TmUri, served: Repository) -> tuple[str, ...]:
        """The path below the repository, normalised by gitstore and checked by the deny-list.

        Raises:
            OutOfRoot: a segment that is not a plain name.
            Denied: a segment the deny-list names.
        """
        with refusals(self.asked(uri, served, None)):
            parts = gitstore.normalise(uri.path[1:])
        if any(denied_name(part) for part in parts):
            raise Denied(str(uri), NOT_OFFERED)
        return parts

    def target(self, req: Request, allowed: Sequence[str]) -> Target:
        """Every check of a read, in order, up to what the path is at the revision.

        A malformed ``at`` is refused by its shape alone, before the path or any lookup.
        """
        uri = req.uri
        served = self.served(uri)
        req.facets.require(req.text, ("as", "at", *allowed), "a path in a repository")
        repo = self.handle(served, uri)
        label = uri.param("at")
        if label is not None and label != "HEAD":
            with refusals(self.asked(uri, served, repo)):
                gitstore.validate_ref(label)
        parts = self.check_path(uri, served)
        with refusals(self.asked(uri, served, repo)):
            found = self.resolved(served, label)
            node = gitstore.lookup(repo, found.commit, parts)
        return Target(served, repo, At(found.commit, label, found.is_default), parts, node)

    # ---- the contract ------------------------------------------------------------------------

    @override
    def resolve(self, req: Request) -> Content:
        uri = req.uri
        if not uri.path:
            if not uri.collection:
                raise self.leaf_as_collection(uri)
            req.facets.require_facet(req.text, (), "the list of repositories")
            return self.listing(req)
        if len(uri.path) == 1 and not uri.collection:
            self.served(uri)
            raise self.leaf_as_collection(uri)
        if uri.collection and req.facets.facet in self.listing_facets:
            t = self.target(req, ("depth", "cursor"))
            if t.node.kind == "submodule":
                return self.read_submodule(req, t)
            if t.node.kind != "tree":
                raise self.file_as_directory(req)
            return self.listing(req)
        return self.read(req)

    @override
    def list(self, req: Request) -> Listing:
        uri = req.uri
        if not uri.path:
            req.facets.require(req.text, ("as", "cursor"), "the list of repositories")
            return Listing([self.repo_entry(name, f"{name}/") for name in self.repos])
        t = self.target(req, ("depth", "cursor"))
        if t.node.kind != "tree":
            leaf = str(uri.as_leaf().keeping(*self.sticky_params))
            raise NotFound(req.text, "that is not a directory: its URI has no trailing /", [leaf])
        depth = req.facets.depth or 1
        with refusals(self.asked(uri, t.served, t.repo)), self.costly(req, t):
            entries = (
                kept.once(
                    ("tree", t.repo.path, t.at.commit, t.path, depth),
                    lambda: gitstore.list_tree(t.repo, t.at.commit, t.parts, depth),
                    lambda found: 100 + 160 * len(found),
                )
                if depth > 1
                else gitstore.list_tree(t.repo, t.at.commit, t.parts, depth)
            )
        visible = _visible(entries, len(t.parts))
        extra: dict[str, Any] = t.about()
        if depth > 1:
            extra["depth"] = depth
        links = [self.here(t, "log", rel="version-history")]
        links.extend(self.latest(t, collection=True))
        return Listing(_TreeEntries(self, t, visible, depth), extra, links, kind="tree")

    @override
    def read(self, req: Request) -> Content:
        uri = req.uri
        if not uri.path:
            raise self.leaf_as_collection(uri)
        facet = req.facets.facet
        if uri.collection:
            return self.read_directory(req)
        wanted = _PARAMS.get(facet or "raw", ())
        if facet not in (None, *ALL_FACETS):
            req.facets.require_facet(req.text, FILE_FACETS, "a file")
        t = self.target(req, sorted({*wanted, "n", "lines", "range", "pointer", "depth"}))
        kind = t.node.kind
        if kind == "tree":
            raise self.leaf_as_collection(uri)
        if kind == "submodule":
            return self.read_submodule_as(req, t, facet)
        req.facets.require_facet(req.text, FILE_FACETS, "a file")
        req.facets.require(req.text, ("as", "at", *wanted), f"a file read as {facet or 'raw'}")
        readers = {"stat": self.read_stat, "log": self.read_log, "blame": self.read_blame}
        return readers.get(facet or "raw", self.read_raw)(req, t)

    def read_directory(self, req: Request) -> Content:
        """A directory under a facet that is not its tree: its ``log``.

        A submodule asked with a trailing ``/`` reads as its pin record.
        """
        req.facets.require_facet(req.text, TREE_FACETS, "a directory")
        t = self.target(req, _PARAMS["log"])
        if t.node.kind == "submodule":
            return self.read_submodule(req, t)
        if t.node.kind != "tree":
            raise self.file_as_directory(req)
        return self.read_log(req, t)

    def read_submodule_as(self, req: Request, t: Target, facet: str | None) -> Content:
        """A submodule as ``facet`` asks: its pin record (default, ``stat``) or its ``log``."""
        req.facets.require_facet(req.text, SUBMODULE_FACETS, "a submodule")
        req.facets.require(req.text, ("as", "at", *_PARAMS[facet or "record"]), "a submodule")
        if facet == "log":
            return self.read_log(req, t)
        return self.read_submodule(req, t)

    def file_as_directory(self, req: Request) -> NotFound:
        """The refusal for a file asked with a trailing ``/``: it points at the file."""
        leaf = str(req.uri.as_leaf().keeping(*self.sticky_params))
        return NotFound(req.text, "that is a file: its URI has no trailing /", [leaf])

    @override
    def complete(self, argument: str, value: str, context: Mapping[str, str]) -> builtins.list[str]:
        fixed: dict[str, Iterable[str]] = {
            "repo": self.repos,
            "as": ALL_FACETS,
            "n": N_SUGGESTIONS,
        }
        if argument in fixed:
            return capped((v for v in fixed[argument] if v.startswith(value)), COMPLETION_LIMIT)
        if argument not in ("at", "path"):
            raise BadArgument(
                None,
                f"no template argument named {argument!r}",
                valid=["repo", "path", "at", "as", "n"],
            )
        served = self.repos.get(context.get("repo", ""))
        if served is None:
            return []
        if argument == "at":
            return self._complete_at(served, value)
        return self._complete_path(served, value, context.get("at") or None)

    def _complete_at(self, served: Repository, value: str) -> builtins.list[str]:
        """The refs of ``served`` starting with ``value``: ``HEAD``, branches, then tags."""
        try:
            branches, tags = gitstore.list_refs(served.handle())
        except (gitstore.GitStoreError, ValueError):
            return []
        names = ["HEAD", *branches, *tags]
        return capped((n for n in names if n.startswith(value)), COMPLETION_LIMIT)

    def _complete_path(
        self, served: Repository, value: str, label: str | None
    ) -> builtins.list[str]:
        """The paths at revision ``label`` completing ``value``, one directory level at a time.

        Denied names are never offered, nor is anything below a denied directory.
        """
        try:
            repo = served.handle()
            commit = self.resolved(served, label).commit
            directory, _, leaf = value.rpartition("/")
            parts = gitstore.normalise(directory) if directory else ()
            if any(denied_name(p) for p in parts):
                return []
            entries = gitstore.list_tree(repo, commit, parts, 1)
        except (gitstore.GitStoreError, ValueError):
            return []
        prefix = f"{directory}/" if directory else ""
        return capped(
            (
                prefix + display(entry.name) + ("/" if entry.kind == "tree" else "")
                for entry in entries
                if entry.name.startswith(leaf) and not denied_name(entry.name)
            ),
            COMPLETION_LIMIT,
        )

    @override
    def templates(self) -> builtins.list[Template]:
        return [
            Template(
                "git",
                f"tm://{self.host}/git/{{repo}}/{{+path}}{{?at,as,n}}",
                "A file or directory of a git repository, at any revision",
                "The served repositories (git/ lists them) read through their history. A path "
                "ending in / is a directory: its tree (?as=tree&depth=1..8, paged with a "
                "cursor) or ?as=log. A file reads as itself; ?as=stat gives its type and size, "
                "?as=log&n=1..100 the commits that changed it (newest first, each linked "
                "?at=<commit>), ?as=blame the commit of every line. ?at= takes a branch, a tag, "
                "a full or abbreviated commit, or an ISO date or datetime (the newest commit at "
                "or before it) and stays on every URI the read links to. Submodules read as "
                "their pin. ?lines=FIRST-LAST, ?range=START-END and ?pointer=/a/0 read parts "
                "at any revision.",
                ("repo", "path", "at", "as", "n"),
                None,
            )
        ]

    @override
    def collections(self, limit: int = 10_000) -> Iterator[Entry]:
        yield from super().collections(limit)
        for name in self.repos:
            yield self.repo_entry(name, f"git/{name}/")

    def repo_entry(self, name: str, shown: str) -> Entry:
        """Repository ``name``'s root as an entry, shown as ``shown``."""
        served = self.repos[name]
        return Entry(
            str(self.repo_root(name)),
            shown,
            True,
            vnd("tree"),
            title=served.title,
            modified=self.last_commit_time(served),
        )

    @override
    def change_sources(self, watching: Watching) -> builtins.list[ChangeSource]:
        """The served repositories' refs, polled while their addresses are listened to."""
        refs = RefWatcher(
            watching.host,
            {name: served.path for name, served in self.repos.items()},
            watching.publish,
            default_refs={n: s.default_ref for n, s in self.repos.items() if s.default_ref},
            interval=watching.setting("TM_SUB_GIT_POLL", 0.5),
        )
        return [ChangeSource(self.name, refs, refs.interest, refs.arm)]

    @override
    def documents_stamp(self) -> Hashable:
        """Each repository's resolved head (a ref lookup each): a new commit moves it."""
        heads: builtins.list[tuple[str, str | None]] = []
        for name, served in self.repos.items():
            try:
                heads.append((name, self.resolved(served, None).commit))
            except gitstore.GitStoreError:
                heads.append((name, None))
        return tuple(heads)

    @override
    def stamp(self, uri: TmUri) -> Hashable | None:
        """The commit the default revision resolves to, and the file's links to its fs copies.

        The ref is resolved as a read resolves it (:meth:`resolved`); None for a path refused.
        """
        served = self.repos.get(uri.path[0]) if len(uri.path) > 1 else None
        if served is None:
            return None
        try:
            parts = self.check_path(uri, served)
            found = self.resolved(served, None)
        except (Refusal, gitstore.GitStoreError, ValueError):
            return None
        return found.commit, parts, tuple(self.copies(served.name, "/".join(parts)))

    @override
    def documents(self) -> Iterator[Document]:
        """The newest ``INDEXED_COMMITS`` commits of each repository at its default revision.

        Each is offered as the address that reads it, ``git/<repo>/?at=<commit>&as=log&n=1``
        (the commit's log entry: its subject, author and date), stamped with its id, which
        never changes. The walk is gitstore's log from the resolved head, cached by that head:
        a repository that has not moved costs a ref lookup. Older commits leave the index as
        newer ones push them out; a repository that does not open offers nothing.
        """
        for name, served in self.repos.items():
            try:
                repo = served.handle()
                head = self.resolved(served, None).commit
                entries = gitstore.log(repo, head, "", INDEXED_COMMITS)
            except gitstore.GitStoreError:
                continue
            for entry in entries:
                text = f"{entry.subject}\n{entry.author_name}\n{entry.date}\n{entry.commit}\n"
                uri = self.repo_root(name, entry.commit).with_params({"as": "log", "n": "1"})
                yield Document(
                    str(uri),
                    (entry.subject or entry.short)[:200],
                    "commit",
                    entry.commit,
                    vnd("log"),
                    partial(str, text),
                )

    def last_commit_time(self, served: Repository) -> datetime | None:
        """When the repository last changed at its default revision: that commit's time.

        None when it does not open or has no default revision (an empty repository).
        """
        try:
            repo = served.handle()
            commit = self.resolved(served, None).commit
            seconds = repo.commit(commit).commit_time
        except gitstore.GitStoreError:
            return None
        return datetime.fromtimestamp(seconds, UTC)

    # ---- links -------------------------------------------------------------------------------

    def up_links(self, uri: TmUri) -> builtins.list[Link]:
        """``up`` keeps ``at`` inside a repository; a repository's root points up to ``git/``."""
        if len(uri.path) == 1:
            return [Link("up", str(self.root))]
        return super().up_links(uri)

    def here(self, t: Target, facet: str | None, *, rel: str, title: str | None = None) -> Link:
        """A link to the same path at the same revision under another facet."""
        return Link(rel, str(self.here_uri(t, facet)), title=title)

    def here_uri(self, t: Target, facet: str | None) -> TmUri:
        """The same path at the same revision under another facet."""
        collection = t.node.kind == "tree"
        uri = self.path_uri(t.served.name, t.parts, collection=collection, at=t.at.label)
        return uri.with_params({"as": facet}) if facet is not None else uri

    def latest(self, t: Target, *, collection: bool) -> builtins.list[Link]:
        """``latest-version`` to the default revision, when reading another one.

        Only when the path still exists at the default revision, as the same kind of thing.
        """
        if t.at.is_default:
            return []
        try:
            default = self.resolved(t.served, None).commit
            node = gitstore.lookup(t.repo, default, t.parts)
        except gitstore.GitStoreError:
            return []
        if (node.kind == "tree") != collection and t.parts:
            return []
        uri = self.path_uri(t.served.name, t.parts, collection=collection, at=None)
        return [Link("latest-version", str(uri), title="the same path at the default revision")]

    def file_links(self, t: Target, facet: str) -> builtins.list[Link]:
        """The links every read of a file, symlink or submodule carries."""
        parent = self.path_uri(t.served.name, t.parts[:-1], collection=True, at=t.at.label)
        links = [Link("up", str(parent)), Link("collection", str(parent))]
        if facet != "stat":
            links.append(self.here(t, "stat", rel="describedby"))
        if facet != "log":
            links.append(self.here(t, "log", rel="version-history"))
        if facet in ("stat", "log", "blame"):
            links.append(self.here(t, None, rel="alternate", title="the thing itself"))
        elif t.node.kind != "submodule":
            links.append(self.here(t, "blame", rel="alternate", title="line by line blame"))
        links.extend(self.latest(t, collection=False))
        if facet == "raw" and t.at.label is None and t.node.kind == "blob":
            # tm:working-copy for a file of the checkout, tm:generates for an import's origin
            links.extend(self.copies(t.served.name, t.path))
        return links

    def working_copy(self, path: str) -> TmUri | None:
        """The fs URI of ``path`` of the checkout, when the fs mount serves that very file."""
        files = self.checkout_files
        served = self.repos.get(self.checkout_repo or "")
        if files is None or served is None:
            return None
        parts = tuple(path.split("/"))
        if len(parts) < 2 or not files.serves(parts[0]) or any(denied_name(p) for p in parts):
            return None
        try:
            worktree = served.handle().worktree
        except gitstore.GitError:
            return None
        if worktree is None or Path(worktree) != files.checkout:
            return None
        on_disk = files.checkout.joinpath(*parts)
        if on_disk.is_symlink() or not on_disk.is_file():
            return None
        return fs_uris.file_uri(self.host, parts)

    def copies(self, repo: str, path: str) -> builtins.list[Link]:
        """The links of the default read of the file ``path`` of ``repo`` to its fs copies."""
        links: builtins.list[Link] = []
        manifest = self.imports.get()
        if repo == self.checkout_repo and path not in manifest.by_copy:
            fs_uri = self.working_copy(path)
            if fs_uri is not None:
                links.append(Link("tm:working-copy", str(fs_uri), "exact"))
        for entry in manifest.by_origin.get((repo, path), ()):
            copy = self.working_copy(entry.to)
            if copy is not None:
                links.append(Link("tm:generates", str(copy), "exact", title="an imported copy"))
        return links

    def links_into(self, uri: TmUri) -> builtins.list[Link]:
        """The links of an fs file into git: its history, and where its content comes from.

        ``tm:repository`` (the same file in the checkout's repository) or, for an imported
        copy, ``tm:generated-by`` its origin; ``version-history`` either way.
        """
        if (
            uri.mount != "fs"
            or uri.collection
            or len(uri.path) < 2
            or uri.param("at") is not None
            or uri.param("as") not in (None, "raw")
        ):
            return []
        try:
            return self._fs_links(uri)
        except (gitstore.GitStoreError, Refusal, OSError):
            return []

    def _fs_links(self, uri: TmUri) -> builtins.list[Link]:
        path = "/".join(uri.path)
        if self.working_copy(path) is None:
            return []
        entry = self.imports.get().by_copy.get(path)
        if entry is not None:
            name, parts = entry.repo, tuple(entry.path.split("/"))
            rel, title = "tm:generated-by", f"imported from {entry.repo}"
        else:
            name, parts = self.checkout_repo or "", uri.path
            rel, title = "tm:repository", "the same file in git"
        served = self.repos.get(name)
        if served is None:
            return []
        commit = self.resolved(served, None).commit
        if gitstore.lookup(served.handle(), commit, parts).kind != "blob":
            return []
        target = self.path_uri(name, parts, collection=False, at=None)
        return [
            Link(rel, str(target), "exact", title=title),
            Link("version-history", str(target.with_params({"as": "log"}))),
        ]

    @contextlib.contextmanager
    def costly(self, req: Request, t: Target) -> Iterator[None]:
        """Refuse a heavy read that went (or is known to go) past the caller's whole budget.

        ``too-costly`` names what it cost when it was stopped (``cost``, at least), the whole
        ``budget``, and ``narrower`` reads of the same path (:data:`NARROWER`), from what the
        computation had finished when it was stopped.
        """
        try:
            yield
        except work.OverBudget as over:
            facet = req.facets.facet or ("tree" if t.node.kind == "tree" else "raw")
            offer = NARROWER.get(facet)
            narrower = [str(u) for u in offer(self, t, over.progress)] if offer else []
            raise TooCostly(
                req.text,
                f"computing this {facet} would cost more than a caller's whole budget "
                f"({math.ceil(over.allowance)} tokens); it is not kept yet",
                cost=math.ceil(over.tokens),
                budget=math.ceil(over.allowance),
                narrower=narrower,
            ) from None

    # ---- reads ---------------------------------------------------------------------------------

    def blob_mime(self, t: Target) -> str:
        """The type of what ``t`` reads, as listings show it (a file by name, else sniffed)."""
        return blob_mime(t.repo, t.node.kind, t.parts[-1], t.node.sha)

    def read_raw(self, req: Request, t: Target) -> Content:
        """The file's bytes (text when its type is text), or the ``range`` asked.

        Raises:
            TooLarge: the file is over the read cap (over ``WHOLE_READ_LIMIT`` when a part
                is asked, since the part is cut from the whole).
        """
        uri = req.uri
        size = t.node.size or 0
        mime_type = self.blob_mime(t)
        links = self.file_links(t, "raw")
        span = req.facets.byte_range
        if span is not None:
            clipped = check_range(req.text, span, size)
            raw = req.facets.facet == "raw"
            cut = cut_range(
                lambda start, end: gitstore.read_blob(t.repo, t.node.sha, start, end),
                clipped,
                size,
                text=mime.is_text(mime_type),
                raw=raw,
            )
            shown = (
                req.text if not cut.moved else str(uri.with_params(range=f"{cut.start}-{cut.end}"))
            )
            return Content(shown, mime_type, cut.body, links, "file", True, size, cut.meta())
        limit = WHOLE_READ_LIMIT if req.facets.part is not None else READ_CAP
        if size > limit:
            lines = mime.is_text(mime_type) and size <= WHOLE_READ_LIMIT
            raise too_large(uri, size, ("range", "lines") if lines else ("range",))
        data = gitstore.read_blob(t.repo, t.node.sha)
        text: str | bytes = data.decode("utf-8", "replace") if mime.is_text(mime_type) else data
        return Content(req.text, mime_type, text, links, "file", size=size)

    def read_stat(self, req: Request, t: Target) -> Content:
        """The stat of a file or symlink at the revision: type, mode, blob sha, size.

        A symlink's stat also says its ``target``, as text; it is never followed.
        """
        key = t.cache_key(self.host, "mount-stat")
        body = read_get(key)
        if body is None:
            node = t.node
            mime_type = self.blob_mime(t)
            body = Stat(
                str(req.uri.keeping("at")),
                display(t.parts[-1]),
                mime_type,
                size=node.size,
                text=mime.is_text(mime_type),
                extra={
                    **t.about(),
                    "type": node.kind,
                    "mode": f"{node.mode:06o}",
                    "sha": node.sha,
                },
            ).to_json()
            if node.kind == "symlink":
                target = gitstore.read_blob(t.repo, node.sha)
                body["target"] = target.decode("utf-8", "replace")
            body = read_put(key, body, 600)
        return Content(req.text, vnd("stat"), body, self.file_links(t, "stat"), kind="stat")

    def read_log(self, req: Request, t: Target) -> Content:
        """The ``n`` newest commits that changed the path, each linked at that commit.

        A file's log follows renames and copies as ``git log --follow`` does: an entry made
        under an older path says its ``path``, and the commit that renamed (or copied) the
        file gives ``renamed_from`` — the older path and its address at the commit's first
        parent. A commit at which the path no longer exists links the repository's root there
        and says ``deleted``.
        """
        n = req.facets.n or DEFAULT_LOG
        key = t.cache_key(self.host, "mount-log", n, t.node.kind)
        body = read_get(key)
        if body is None:
            with refusals(self.asked(req.uri, t.served, t.repo)), self.costly(req, t):
                entries = kept.once(
                    ("log", t.repo.path, t.at.commit, t.path, n),
                    lambda: gitstore.log(t.repo, t.at.commit, t.parts, n),
                    lambda found: 100 + 200 * len(found),
                )
            collection = t.node.kind == "tree"
            commits = []
            for entry in entries:
                item: dict[str, Any] = {
                    "commit": entry.commit,
                    "short": entry.short,
                    "author": entry.author_name,
                    "date": entry.date,
                    "subject": entry.subject,
                }
                parts = tuple(entry.path.split("/")) if entry.path else t.parts
                if entry.path and entry.path != t.path:
                    item["path"] = entry.path
                if _exists(t.repo, entry.commit, parts):
                    where = self.path_uri(
                        t.served.name, parts, collection=collection, at=entry.commit
                    )
                else:
                    where = self.repo_root(t.served.name, entry.commit)
                    item["deleted"] = True
                item["uri"] = str(where)
                if entry.renamed_from is not None and entry.parent is not None:
                    older = self.path_uri(
                        t.served.name,
                        tuple(entry.renamed_from.split("/")),
                        collection=False,
                        at=entry.parent,
                    )
                    item["renamed_from"] = {"path": entry.renamed_from, "uri": str(older)}
                commits.append(item)
            body = {
                "uri": str(req.uri.with_params(n=str(n)) if req.facets.n else req.uri),
                **t.about(),
                "n": n,
                "commits": commits,
            }
            body = read_put(key, body, 300 + 400 * len(commits))
        if t.node.kind == "tree":
            links = [*self.up_links(req.uri), self.here(t, None, rel="alternate")]
            links.extend(self.latest(t, collection=True))
        else:
            links = self.file_links(t, "log")
        return Content(req.text, vnd("log"), body, links, kind="log")

    def read_blame(self, req: Request, t: Target) -> Content:
        """The commit of every line of a text file, all of them or those ``lines`` names.

        Raises:
            Binary: the file is not text.
            TooLarge: the file is over ``WHOLE_READ_LIMIT``.
            BadFacet: ``lines`` starts past the last line.
        """
        mime_type = self.blob_mime(t)
        if not mime.is_text(mime_type):
            raise Binary(
                req.text,
                "blame reads text line by line; this file is binary",
                mimeType=mime_type,
                stat=str(req.uri.keeping("at", **{"as": "stat"})),
            )
        if (t.node.size or 0) > WHOLE_READ_LIMIT:  # no part of a blame reads: stat only
            raise too_large(req.uri, t.node.size or 0, (), cap=WHOLE_READ_LIMIT)
        links = self.file_links(t, "blame")
        key = t.cache_key(self.host, "mount-blame")
        body = read_get(key)
        span = req.facets.lines
        if span is not None:
            return self.read_blame_lines(req, t, span, body, links)
        if body is None:
            lines = self.blamed(req, t, None)
            body = self.blame_body(req, t, lines, len(lines))
            body = read_put(key, body, 400 + sum(len(x["text"]) + 160 for x in body["lines"]))
        return Content(req.text, vnd("blame"), body, links, kind="blame")

    def read_blame_lines(
        self,
        req: Request,
        t: Target,
        span: tuple[int, int],
        body: dict[str, Any] | None,
        links: builtins.list[Link],
    ) -> Content:
        """Lines ``first``–``last`` of the blame.

        Cut from the whole one when it is kept, else blamed alone (``git blame -L``), which
        walks only as far as those lines need.
        """
        first, last = span
        total = body["total"] if body is not None else gitstore.line_count(t.repo, t.node.sha)
        if first > total:
            raise BadFacet(
                req.text,
                f"lines={first}-{last} starts past the end: it has {total} lines",
                valid=[f"1-{max(total, 1)}"],
                lines=total,
            )
        if body is not None:
            cut = {**body, "uri": req.text, "lines": body["lines"][first - 1 : last]}
            return Content(req.text, vnd("blame"), cut, links, "blame", part_applied=True)
        whole = kept.peek(("blame", t.repo.path, t.at.commit, t.path), gitstore.Blame.size)
        if whole is not None:
            lines = whole[first - 1 : last]
        else:
            lines = self.blamed(req, t, (first, min(last, total)))
        cut = {**self.blame_body(req, t, lines, total), "uri": req.text}
        return Content(req.text, vnd("blame"), cut, links, "blame", part_applied=True)

    def blamed(self, req: Request, t: Target, span: tuple[int, int] | None) -> gitstore.Blame:
        """The blame of the file (of lines ``span`` alone when given), kept for every worker."""
        what = () if span is None else span
        with refusals(self.asked(req.uri, t.served, t.repo)), self.costly(req, t):
            return kept.once(
                ("blame", t.repo.path, t.at.commit, t.path, *what),
                lambda: gitstore.blame(t.repo, t.at.commit, t.parts, span),
                gitstore.Blame.size,
            )

    def blame_body(
        self, req: Request, t: Target, lines: gitstore.Blame, total: int
    ) -> dict[str, Any]:
        """The blame's answer: the file, the revision, and a record per line."""
        return {
            "uri": str(req.uri.keeping("at", **{"as": "blame"})),
            **t.about(),
            "total": total,
            "lines": [
                {
                    "line": line.line_no,
                    "commit": line.commit,
                    "author": line.author_name,
                    "date": line.date,
                    "text": line.text,
                    **({"path": line.path} if line.path not in ("", t.path) else {}),
                }
                for line in lines
            ],
        }

    def read_submodule(self, req: Request, t: Target) -> Content:
        """A submodule's pin record: its URL, the pinned commit, and ``tm:pins``.

        ``tm:pins`` links the pinned commit in the served repository the URL names, when
        that repository is served and has the commit.
        """
        req.facets.require(req.text, ("as", "at", "pointer"), "a submodule")
        key = t.cache_key(self.host, "mount-submodule")
        body = read_get(key)
        if body is None:
            try:
                url = gitstore.gitmodules(t.repo, t.at.commit).get(t.path)
            except gitstore.GitStoreError:
                url = None
            pins = self.pinned_repository(url, t.node.sha)
            body = {
                "uri": str(req.uri.keeping("at").as_leaf()),
                **t.about(),
                "type": "submodule",
                "pinned": t.node.sha,
                "url": url,
                "pins": str(pins) if pins is not None else None,
            }
            body = read_put(key, body, 800)
        leaf_uri = req.uri.as_leaf()
        links = self.file_links(t, "stat" if req.facets.facet == "stat" else "record")
        if body["pins"] is not None:
            links.append(Link("tm:pins", body["pins"], "exact", title="the pinned commit"))
        return Content(str(leaf_uri), vnd("submodule"), body, links, kind="submodule")

    def pinned_repository(self, url: str | None, pinned: str) -> TmUri | None:
        """The served repository a submodule URL names, at the pinned commit, if it has it."""
        if not url:
            return None
        name = url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
        name = name.removesuffix(".git")
        served = self.repos.get(name)
        if served is None:
            return None
        try:
            if not gitstore.has_commit(served.handle(), pinned):
                return None
        except gitstore.GitError:
            return None
        return self.repo_root(name, pinned)

    # ---- fs ?at= --------------------------------------------------------------------------------

    def read_checkout_at(self, fs_uri: TmUri, at: str) -> Content:
        """An fs file (``fs/<root>/<path>``) as the checkout's repository had it at ``at``.

        The fs mount's ``?at=``: the fs roots and deny-list apply (the shared rules), then the
        ref is checked by shape, resolved (a branch, tag, commit or date) and the file read
        from git. ``?as=raw`` (default) and ``?as=stat`` are offered, and the parts.

        Raises:
            Refusal: as the git mount refuses (``bad-facet`` for a malformed ref,
                ``no-such-ref`` with nearest fs URIs at real refs, ``not-found``…).
        """
        text = str(fs_uri)
        facet = _checkout_facet(fs_uri, text)
        self.check_checkout_path(fs_uri, text)
        served = self.repos.get(self.checkout_repo or "")
        if served is None:
            raise BadFacet(text, "at= needs the checkout's repository, which is not served")
        repo = self.handle(served, fs_uri)
        label = None if at == "HEAD" else at
        with refusals(CheckoutRead(self.host, fs_uri, served.name, repo)):
            if label is not None:
                gitstore.validate_ref(label)
            found = self.resolved(served, label)
            node = gitstore.lookup(repo, found.commit, fs_uri.path)
        if node.kind in _NOT_A_FILE_AT:
            raise NotFound(text, _NOT_A_FILE_AT[node.kind], nearest=[])
        links = self.checkout_at_links(fs_uri, served.name, at, facet)
        mime_type = blob_mime(repo, node.kind, fs_uri.path[-1], node.sha)
        if facet == "stat":
            if fs_uri.param("lines") or fs_uri.param("range"):
                raise BadFacet(text, "a stat has no lines or range", valid=["pointer"])
            stat = Stat(
                str(fs_uri.keeping("at")),
                display(fs_uri.path[-1]),
                mime_type,
                size=node.size,
                text=mime.is_text(mime_type),
                extra={
                    "path": "/".join(display(s) for s in fs_uri.path),
                    "at": at,
                    "commit": found.commit,
                },
            )
            links.append(Link("alternate", str(fs_uri.keeping("at"))))
            return stat.content(text, links)
        t = Target(served, repo, At(found.commit, at, found.is_default), fs_uri.path, node)
        content = self.read_raw(Request(fs_uri, parse_facets(fs_uri)), t)
        content.links = links
        return content

    def check_checkout_path(self, fs_uri: TmUri, text: str) -> None:
        """Refuse an fs path ``?at=`` does not read, by the fs mount's rules, before any lookup.

        Raises:
            BadFacet: the fs mount is not served, or the path is a root or a directory.
            OutOfRoot: a segment that is not a plain name, or an unknown root.
            Denied: a name the deny-list names.
        """
        files = self.checkout_files
        if files is None:
            raise BadFacet(text, "at= reads the fs mount's files, which are not served", valid=[])
        try:
            files.check_plain(fs_uri.path)
            if fs_uri.collection or len(fs_uri.path) < 2:
                raise BadFacet(text, "at= reads files; list directories in the git mount", valid=[])
            files.check_named(fs_uri.path)
        except PathRefused as exc:
            roots = [str(fs_uris.root_uri(self.host, r)) for r in files.names]
            raise path_refusal(exc, text, roots) from None

    def checkout_at_links(
        self, fs_uri: TmUri, repo_name: str, at: str, facet: str | None
    ) -> builtins.list[Link]:
        """The links of an fs file read at ``at``: its directory, git, history, and now."""
        git_uri = self.path_uri(repo_name, fs_uri.path, collection=False, at=at)
        parent = fs_uris.dir_uri(self.host, fs_uri.path[:-1])
        links = [
            Link("up", str(parent)),
            Link("collection", str(parent)),
            Link("alternate", str(git_uri), title="the same file in the repository"),
            Link("version-history", str(git_uri.with_params({"as": "log"}))),
            Link("latest-version", str(fs_uri.identity), title="the file as it is now"),
        ]
        if facet != "stat":
            links.append(Link("describedby", str(fs_uri.keeping("at", **{"as": "stat"}))))
        return links


# ---- helpers ---------------------------------------------------------------------------------


def _found_entries(mount: GitMount, t: Target, progress: object) -> list[TmUri]:
    """The same history with as many commits as the stopped walk had found (none if none).

    That log walks the commits the stopped walk had walked, in the same order, and stops at
    the last it found, so it reads within the budget the whole went past. When it had found
    none, no ``n`` has such a bound: even one walks as far as the whole did.
    """
    if not isinstance(progress, gitstore.Walked) or progress.found < 1:
        return []
    return [mount.here_uri(t, None).with_params({"as": "log", "n": str(progress.found)})]


#: Line ranges a ``too-costly`` blame offers at most.
OFFERED_RUNS = 3


def _blamed_lines(mount: GitMount, t: Target, progress: object) -> list[TmUri]:
    """The longest runs of lines the stopped blame had blamed, in file order.

    Blamed alone (``?lines=``), a run walks only commits the stopped walk had walked before
    blaming it, so it reads within the budget the whole went past. Lines it had not reached
    have no such bound: no read of them is offered, nor the file's history, whose walk
    visits every commit the blame passed over.
    """
    runs = progress if isinstance(progress, tuple) else ()
    longest = sorted(runs, key=lambda run: (run[0] - run[1], run[0]))[:OFFERED_RUNS]
    here = mount.here_uri(t, "blame")
    return [here.with_params(lines=f"{first}-{last}") for first, last in sorted(longest)]


def _shallower(mount: GitMount, t: Target, progress: object) -> list[TmUri]:
    """The directory one level deep: listed directly, not as heavy work, so it is never stopped."""
    return [mount.here_uri(t, "tree")]


#: For each heavy facet, the narrower reads a ``too-costly`` refusal offers, from the facet's
#: target and what the stopped computation had finished (``OverBudget.progress``): only reads
#: known to fit in the budget the whole went past.
NARROWER: dict[str, Callable[[GitMount, Target, object], list[TmUri]]] = {
    "log": _found_entries,
    "blame": _blamed_lines,
    "tree": _shallower,
}

#: The parameters an fs file read at a revision takes.
_CHECKOUT_AT_PARAMS = frozenset({"at", "as", "lines", "range", "pointer"})
#: What an fs path at a revision may be instead of a file, and the sentence refusing it.
_NOT_A_FILE_AT = {
    "tree": "that is a directory at that revision",
    "submodule": "that is a submodule at that revision",
}


def _checkout_facet(fs_uri: TmUri, text: str) -> str | None:
    """The facet of an fs file read at a revision (None: raw), its parameters checked."""
    if {key for key, _ in fs_uri.params} - _CHECKOUT_AT_PARAMS:
        allowed = sorted(_CHECKOUT_AT_PARAMS)
        raise BadFacet(text, f"a file at a revision takes {', '.join(allowed)}", valid=allowed)
    facet = fs_uri.param("as")
    if facet not in (None, "raw", "stat"):
        raise UnknownFacet(text, "a file", facet, ["raw", "stat"])
    return facet


def _exists(repo: gitstore.GitRepo, commit: str, parts: tuple[str, ...]) -> bool:
    try:
        gitstore.lookup(repo, commit, parts)
    except gitstore.GitStoreError:
        return False
    return True


def blob_mime(repo: gitstore.GitRepo, kind: str, name: str, sha: str) -> str:
    """The type of a tree entry as listings and stat show it."""
    if kind == "tree":
        return vnd("tree")
    if kind == "submodule":
        return vnd("submodule")
    if kind == "symlink":
        return mime.TEXT_PLAIN
    known = mime.by_name(name)
    if known is not None:
        return known
    key = (repo.path, "sniffed", sha)
    cached = OBJECTS.get(key)
    if cached is not None:
        return str(cached)
    head = gitstore.read_blob(repo, sha)[: mime.SNIFF_BYTES]
    return str(OBJECTS.put(key, mime.sniff(head), 64))


def _visible(entries: list[gitstore.TreeEntry], base_depth: int) -> list[gitstore.TreeEntry]:
    """Entries minus everything below a denied directory.

    The denied entry itself stays, to be listed redacted.
    """
    out: list[gitstore.TreeEntry] = []
    hidden: str | None = None
    for entry in entries:
        if hidden is not None and entry.path.startswith(hidden):
            continue
        hidden = None
        out.append(entry)
        if entry.kind == "tree" and denied_name(entry.name):
            hidden = entry.path + "/"
    return out


class _TreeEntries(LazyEntries[gitstore.TreeEntry]):
    """A tree's entries, typed (and blobs sniffed) only when a page asks for them."""

    def __init__(
        self, mount: GitMount, t: Target, entries: list[gitstore.TreeEntry], depth: int
    ) -> None:
        super().__init__(entries)
        self.mount = mount
        self.depth = depth
        self.t = t
        self.prefix = t.path + "/" if t.path else ""

    def page(self, index: slice) -> builtins.list[Entry]:
        # A page of a listing at a commit never changes: kept beside gitstore's answers.
        t = self.t
        start, stop, step = index.indices(len(self.items))
        key = t.cache_key(self.mount.host, "mount-page", self.depth, start, stop, step)
        page = read_get(key)
        if page is None:
            page = super().page(index)
            read_put(key, page, 300 + 300 * len(page))
        return builtins.list(page)

    def entry(self, entry: gitstore.TreeEntry) -> Entry:
        t = self.t
        is_dir = entry.kind == "tree"
        uri = self.mount.path_uri(
            t.served.name, entry.path.split("/"), collection=is_dir, at=t.at.label
        )
        shown = display(entry.path[len(self.prefix) :]) + ("/" if is_dir else "")
        if denied_name(entry.name):
            return Entry(str(uri), shown, is_dir, redacted=True)
        extra: dict[str, Any] = {}
        if entry.depth > 1:
            extra["depth"] = entry.depth
        if entry.kind in ("submodule", "symlink"):
            extra[entry.kind] = True
        type_ = blob_mime(t.repo, entry.kind, entry.name, entry.sha)
        return Entry(str(uri), shown, is_dir, type_, entry.size, extra=extra)


# ---- start-up checks ---------------------------------------------------------------------------


@check
def check_git_settings() -> builtins.list[checks.CheckMessage]:
    """``tm.E010``–``tm.E014`` and ``tm.W010``: the git mount's settings, checked at start-up.

    * E010 ``TM_GIT_REPOS`` is not a mapping of names to paths;
    * E011 a repository name is not a plain segment, or clashes with ``TM_CHECKOUT_REPO``;
    * E012 a configured path is not a git repository;
    * E013 ``TM_GIT_DEFAULT_REFS`` names an unserved repository or a ref that does not resolve;
    * E014 the import manifest is invalid or names a repository that is not a served neighbour;
    * W010 ``TM_CHECKOUT`` is not a git repository (the mount serves the neighbours only).
    """
    conf = read_settings()
    out: builtins.list[checks.CheckMessage] = []
    served: dict[str, Path] = {}
    if conf.checkout_problem is not None:
        out.append(conf.checkout_problem)
    elif is_repository(conf.checkout):
        served[str(conf.checkout_name)] = conf.checkout
    else:
        out.append(
            checks.Warning(
                "TM_CHECKOUT is not a git repository: the git mount serves the neighbours only",
                id="tm.W010",
            )
        )
    if conf.repos_problem is not None:
        out.append(conf.repos_problem)
    for entry in conf.entries:
        if entry.problem is not None:
            out.append(entry.problem)
        elif not is_repository(entry.path):
            out.append(
                checks.Error(
                    f"TM_GIT_REPOS: {entry.name!r} is not a git repository",
                    hint="point it at a work tree or a bare repository",
                    id="tm.E012",
                )
            )
        else:
            served[entry.name] = entry.path
    out.extend(_check_default_refs(conf, served))
    out.extend(_check_manifest(conf, served))
    return out


def _check_default_refs(
    conf: GitSettings, served: Mapping[str, Path]
) -> builtins.list[checks.CheckMessage]:
    if conf.default_refs_problem is not None:
        return [conf.default_refs_problem]
    out: builtins.list[checks.CheckMessage] = []
    for name, ref in conf.default_refs.items():
        if name not in served:
            out.append(checks.Error(f"TM_GIT_DEFAULT_REFS: {name!r} is not served", id="tm.E013"))
            continue
        try:
            with gitstore.open_repo(served[name]) as repo:
                gitstore.resolve(repo, None, ref)
        except gitstore.GitStoreError as exc:
            out.append(
                checks.Error(
                    f"TM_GIT_DEFAULT_REFS: {name!r} pins {ref!r}, which does not resolve ({exc})",
                    id="tm.E013",
                )
            )
    return out


def _check_manifest(
    conf: GitSettings, served: Mapping[str, Path]
) -> builtins.list[checks.CheckMessage]:
    if conf.imports_file is None:
        return []
    try:
        manifest = read_manifest(conf.imports_file)
    except ManifestError as exc:
        return [checks.Error(f"the import manifest is invalid: {exc}", id="tm.E014")]
    out: builtins.list[checks.CheckMessage] = []
    for entry in manifest.entries:
        if entry.repo not in served or entry.repo == conf.checkout_name:
            out.append(
                checks.Error(
                    f"the import manifest names {entry.repo!r}, which is not a served "
                    "neighbouring repository",
                    hint="add it to TM_GIT_REPOS",
                    id="tm.E014",
                )
            )
    return out
