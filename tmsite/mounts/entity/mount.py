"""The ``entity`` mount: the autopsy records as things — patterns, games, routines, lessons.

Grammar (``tm://<host>/entity/…``)::

    entity/                                   the kinds: pattern/, game/, lesson/
    entity/pattern/   entity/game/   entity/lesson/          their keys, 500 a page
    entity/pattern/<key>                      e.g. pad-poll
    entity/game/<key>                         12 hex digits, e.g. 72f469219b30
    entity/game/<key>/                        lists routine/
    entity/game/<key>/routine/                the routines a rule named, 500 a page
    entity/game/<key>/routine/b<bank>-<ADDR>  e.g. b0-8E5C
    entity/lesson/<key>                       e.g. jump

A thing reads as ``application/vnd.tm.<kind>+json``: the record's fields (maintainers'
corrections applied), the size of each relation, and where the record holds it. Links, both
ways, all ``exact`` (the record states every one of them):

========  =====================  ==========================================  ===============
from      rel                    to                                          inverse on
========  =====================  ==========================================  ===============
pattern   ``tm:found-in``        game (``count``: routines showing it)       game
pattern   ``tm:instance``        routine                                     routine
pattern   ``tm:demonstrated-by`` lesson (``count``)                          lesson
game      ``tm:exhibits``        pattern (``count``)                         pattern
game      ``tm:measured-by``     lesson                                      lesson
game      ``tm:renders-as``      its page ``http/<site>/autopsy/games/<key>``  (``tm:source``)
routine   ``tm:instance-of``     pattern                                     pattern
lesson    ``tm:demonstrates``    pattern (``count``)                         pattern
lesson    ``tm:measures``        game                                        game
lesson    ``tm:cartridge``       its source tree ``git/<repo>/<tree>``       (one way)
any       ``tm:data``            ``fs/data/<record>.json?pointer=<where>``   ``tm:read-by``
========  =====================  ==========================================  ===============

The ``tm:read-by`` back from a record part, and the ``tm:source`` back from a game's page, are
given by :meth:`EntityMount.links_into`, so the fs and http mounts need not know entities. A
pattern in thousands of routines carries thousands of ``tm:instance`` links: the namespace caps
the read at 100 and pages the rest under ``?as=links``.

Facets: ``?as=stat`` (metadata); ``?as=set&rel=<rel>`` (every member of one relation, whole, 500
a page with a signed cursor; ``rel`` is one of the relations above, with or without ``tm:``,
plus ``routine`` on a game); ``?at=<ref or date>`` (the entity as its record stood then: the
record files read from the checkout's repository at that commit, parsed by the same loader;
``at`` stays on every address the read emits); ``?pointer=`` into the JSON.

Listed things and stats are dated (``lastModified``, ``modified``): the later of the thing's
latest correction and when the record files its read is made from last changed, as the load
found them (:func:`tmsite.entities.kinds.sources`); at ``?at=``, by the commits that last changed
those files then. A listing page is dated in two queries, whatever its size.

Keys are checked against the ASCII shapes of :mod:`tmsite.entities.records` before any query.
A key of the wrong shape names nothing: it is refused ``not-found`` (never ``bad-uri``: the
URI itself is well formed) with ``expected`` saying the shape and ``nearest`` the real keys
nearest to it. Every read costs a constant number of SQL queries, whatever the record's size.

Spec: ENT, LK2, NS3.
"""

from __future__ import annotations

import builtins
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, TypeVar, overload

from django.conf import settings
from django.db import DatabaseError
from django.db.models import QuerySet
from typing_extensions import override

from tmsite import gitstore
from tmsite.core import cursor as cursors
from tmsite.core.errors import BadFacet, GitError, NoSuchRef, NotFound
from tmsite.core.facets import parse_facets
from tmsite.core.links import Link
from tmsite.core.nearest import MAX_CANDIDATES
from tmsite.core.types import (
    Content,
    Document,
    Entry,
    JsonValue,
    LazyEntries,
    Listing,
    Request,
    Stat,
    Template,
    vnd,
)
from tmsite.core.uri import TmUri
from tmsite.entities import kinds as K
from tmsite.entities import records as R
from tmsite.entities.record_files import RecordError, file_path, parse_records
from tmsite.mounts.base import ChangeSource, Mount, Watching, unknown_argument
from tmsite.mounts.entity import watch
from tmsite.mounts.fs import uris as fs_uris
from tmsite.mounts.git import uris as git_uris
from tmsite.mounts.http import uris as http_uris
from tmsite.search.passages import digest, words

#: Rows read per query while the index walks a kind.
DOCUMENT_CHUNK = 500
#: Members per ``?as=set`` page.
SET_PAGE_SIZE = 500


def link_rels(kind: str) -> tuple[tuple[str, str], ...]:
    """((link rel, records relation), …): the relations a read of ``kind`` links, in order."""
    return tuple((d.side.link, d.name) for d in K.directions(kind) if d.side.link)


def child_rels(kind: str) -> tuple[str, ...]:
    """The relations to the things that live under ``kind``: a listing and a set each."""
    return tuple(d.name for d in K.directions(kind) if d.child)


def set_rels(kind: str) -> dict[str, str]:
    """{set rel: records relation}: what ``?as=set&rel=`` accepts on ``kind``."""
    return dict(link_rels(kind)) | {name: name for name in child_rels(kind)}


def _record_files() -> tuple[str, ...]:
    return tuple(dict.fromkeys(file_path(kind.source) for kind in K.KINDS.values()))


_SNAPSHOTS_KEPT = 16
T = TypeVar("T")
_AT_SHAPES = [
    "a branch or tag name",
    "a commit id (4 to 40 hex digits)",
    "YYYY-MM-DD",
    "YYYY-MM-DDTHH:MM[:SS][Z|+HH:MM]",
]


@dataclass(frozen=True)
class Target:
    """What an entity URI names: a collection (``listing``) or a thing (``ref``)."""

    listing: str | None = None  # "root", "kinds:<kind>", "children", "under:<child kind>"
    ref: R.Ref | None = None


@dataclass(frozen=True)
class _Revision:
    """Where entities are read from: the tables (now), or a snapshot of the records then.

    ``changed``: at a revision, when each record file had last changed by then (by source).
    """

    snapshot: R.Snapshot | None = None
    commit: str | None = None
    at: str | None = None
    changed: Mapping[str, datetime] = field(default_factory=dict)

    @property
    def now(self) -> bool:
        return self.snapshot is None

    def get(self, ref: R.Ref) -> R.Entity | None:
        if self.snapshot is None:
            return R.get(ref)
        found = self.snapshot.get(ref)
        if found is None:
            return None
        return replace(found, modified=K.data_modified(ref.kind, self.changed))

    def exists(self, ref: R.Ref) -> bool:
        if self.snapshot is not None:
            return self.snapshot.exists(ref)
        return _owner_id(ref) is not None

    def members(self, ref: R.Ref, rels: Sequence[str]) -> dict[str, list[R.Member]]:
        """Every member of each relation: one query for the owner, one per relation."""
        if self.snapshot is not None:
            return {rel: self.snapshot.members(ref, rel) for rel in rels}
        owner = _owner_id(ref)
        if owner is None:
            return {}
        return {rel: R.light_members(ref, rel, owner) for rel in rels}

    def keys(self, kind: str, game: str | None = None) -> Sequence[str]:
        if self.snapshot is not None:
            return self.snapshot.keys(kind, game)
        return _DbKeys(kind, game)

    def dated(
        self, kind: str, game: str | None, keys: Sequence[str], index: slice
    ) -> builtins.list[tuple[str, datetime | None]]:
        """The keys ``index`` selects, each with when it last changed (see the docs' table).

        Now: two queries (the keys with their rows' dates, their latest corrections). At a
        revision: the records' time then, the same for every key of the kind.
        """
        if self.snapshot is None:
            start, stop, _ = index.indices(len(keys))
            return R.dated_keys(kind, game, start, stop) if start < stop else []
        when = K.data_modified(kind, self.changed)
        return [(key, when) for key in keys[index]]


def _snapshot_at(repo: gitstore.GitRepo, commit: str) -> R.Snapshot | RecordError:
    """The records at ``commit``, or why they do not parse."""
    contents = [
        gitstore.read_blob(repo, gitstore.lookup(repo, commit, name).sha)
        for name in _record_files()
    ]
    try:
        return R.Snapshot(parse_records(*contents))
    except RecordError as exc:
        return exc


def _changed_at(repo: gitstore.GitRepo, commit: str) -> dict[str, datetime]:
    """When each record file had last changed as of ``commit``, by source.

    The commit time of the newest commit at or before ``commit`` that changed the file.
    """
    out = {}
    for source in dict.fromkeys(kind.source for kind in K.KINDS.values()):
        changes = gitstore.log(repo, commit, file_path(source), n=1)
        if changes:
            seconds = repo.commit(changes[0].commit).commit_time
            out[source] = datetime.fromtimestamp(seconds, UTC)
    return out


def _owner_id(ref: R.Ref) -> int | None:
    row = R.owner(ref)
    return None if row is None else int(row.id)


class _DbKeys(Sequence[str]):
    """The keys of one kind in record order: one query for the size, one per slice."""

    def __init__(self, kind: str, game: str | None) -> None:
        self.kind = kind
        self.game = game
        self._len: int | None = None

    def _qs(self) -> QuerySet[Any]:
        return R.keys(self.kind, self.game)

    def __len__(self) -> int:
        if self._len is None:
            self._len = self._qs().count()
        return self._len

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, int):
            return self[index : index + 1][0] if index >= 0 else list(self)[index]
        if index.step not in (None, 1):
            return list(self)[index]
        start = index.start or 0
        stop = index.stop
        qs = self._qs()
        rows = list(qs[start:stop] if stop is not None else qs[start:])
        kind = K.KINDS[self.kind]
        return [kind.key_of(values)[0] for values in rows]

    def __iter__(self) -> Iterator[str]:
        return iter(self[0:])


class _Entries(LazyEntries[str]):
    """Listing entries made lazily from a sequence of keys.

    A page's entries are dated (``lastModified``) in a constant number of queries through
    ``dated``; an entry made alone (the nearest's ranking makes them for their address only)
    is not dated, so a refusal costs no more queries than it did.
    """

    def __init__(
        self,
        keys: Sequence[str],
        make: Callable[[str, datetime | None], Entry],
        dated: Callable[[slice], builtins.list[tuple[str, datetime | None]]],
    ) -> None:
        super().__init__(keys)
        self.make = make
        self.dated = dated
        self._names: builtins.list[str] | None = None

    def entry(self, item: str) -> Entry:
        return self.make(item, None)

    @override
    def page(self, index: slice) -> builtins.list[Entry]:
        if index.step not in (None, 1):
            return super().page(index)
        return [self.make(key, when) for key, when in self.dated(index)]

    def names(self) -> builtins.list[str]:
        """The first names, for ranking the nearest (one query; entries built from them)."""
        if self._names is None:
            self._names = builtins.list(self.items[:MAX_CANDIDATES])
        return self._names

    def item(self, index: int) -> str:
        if self._names is not None and 0 <= index < len(self._names):
            return self._names[index]
        return self.items[index]


class EntityMount(Mount):
    """``entity/``: the records' things by kind and key, now or at a revision of the records."""

    name = "entity"
    title = "The autopsy's things"
    what = (
        "Patterns found in games, the routines rules named, and the lessons that measure a "
        "game: the records in data/autopsy.json and data/lessons.json, linked both ways."
    )
    listing_params = ("at",)
    sticky_params = ("at",)
    set_page_size = SET_PAGE_SIZE

    def __init__(
        self,
        host: str,
        checkout: Path | None = None,
        repo_name: str = "tmsite",
        site: str = "tinymachines.ai",
    ) -> None:
        super().__init__(host)
        self.checkout = checkout
        self.repo_name = repo_name
        self.site = site
        self._snapshots: OrderedDict[tuple[str, str], R.Snapshot | RecordError] = OrderedDict()
        self._changes: OrderedDict[tuple[str, str], Mapping[str, datetime]] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, host: str) -> EntityMount:
        """The mount over the served checkout, its repository's name and the site it serves."""
        return cls(
            host,
            Path(settings.TM_CHECKOUT),
            getattr(settings, "TM_CHECKOUT_REPO", "tmsite"),
            getattr(settings, "TM_SITE", "tinymachines.ai"),
        )

    # ---- addresses ----------------------------------------------------------------------

    def entity_uri(
        self, kind: str, key: str, game: str | None = None, at: str | None = None
    ) -> TmUri:
        """The address of one thing (``game`` for a kind that lives under a game)."""
        parent = K.KINDS[kind].parent
        path = (parent, str(game), kind, key) if parent else (kind, key)
        params = (("at", at),) if at is not None else ()
        return TmUri(self.host, self.name, path, False, params)

    def member_uri(self, member: R.Member, at: str | None) -> TmUri:
        """The address of a relation's member, at the revision the read is at."""
        return self.entity_uri(member.kind, member.key, member.game, at)

    def record_uri(self, file: str, pointer: str, at: str | None) -> TmUri:
        """The fs address of the part of a record file that holds a thing (``tm:data``)."""
        return fs_uris.checkout_file_uri(self.host, file, at=at, pointer=pointer)

    def page_uri(self, game: str) -> TmUri:
        """The http address of a game's page on the site (``tm:renders-as``)."""
        return http_uris.page_uri(self.host, self.site, f"/autopsy/games/{game}")

    def cartridge_uri(self, tree: str, at: str | None) -> TmUri:
        """The git address of a lesson's source tree in the checkout's repository."""
        parts = tuple(p for p in tree.split("/") if p)
        return git_uris.path_uri(self.host, self.repo_name, parts, collection=True, at=at)

    # ---- what a URI names -----------------------------------------------------------------

    def target(self, uri: TmUri) -> Target:
        """What ``uri`` names; keys checked by shape before any query.

        Raises:
            NotFound: no such kind or shape, or a key of the wrong shape (``expected``).
        """
        path = uri.path
        if not path:
            return Target(listing="root")
        kind = path[0]
        if kind not in K.top_kinds():
            top = ", ".join(K.top_kinds())
            raise NotFound(str(uri), f"no kind {kind!r}; the kinds are {top}")
        if len(path) == 1:
            return Target(listing=f"kinds:{kind}")
        key = self._key(uri, kind, path[1])
        if len(path) == 2:
            if not uri.collection:
                return Target(ref=R.Ref(kind, key))
            if not K.children(kind):
                raise self._not_a_collection(uri, kind)
            return Target(listing="children", ref=R.Ref(kind, key))
        return self._child_target(uri, kind, key)

    def _child_target(self, uri: TmUri, kind: str, key: str) -> Target:
        """``<kind>/<key>/<child>/`` and ``<kind>/<key>/<child>/<key>``."""
        path = uri.path
        child = path[2]
        if child not in K.children(kind):
            raise NotFound(str(uri), f"nothing named {child!r} under a {kind}")
        if len(path) == 3:
            return Target(listing=f"under:{child}", ref=R.Ref(kind, key))
        if len(path) > 4:
            raise NotFound(str(uri), f"a {child} has nothing under it")
        found = self._key(uri, child, path[3])
        if uri.collection:
            raise self._not_a_collection(uri, child)
        return Target(ref=R.Ref(child, found, key))

    def _not_a_collection(self, uri: TmUri, kind: str) -> NotFound:
        return NotFound(
            str(uri),
            f"a {kind} is not a collection: its URI has no trailing /",
            nearest=[str(uri.as_leaf().keeping(*self.sticky_params))],
        )

    def _key(self, uri: TmUri, kind: str, key: str) -> str:
        try:
            return R.check_key(kind, key)
        except R.InvalidKey as exc:
            raise NotFound(
                str(uri), f"no {kind} has this key: a {kind} key {exc.reason}", expected=exc.reason
            ) from None

    # ---- revisions (?at=) ---------------------------------------------------------------

    def revision(self, req: Request) -> _Revision:
        """The tables, or the records as they stood at ``?at=``.

        Raises:
            BadFacet: a malformed ref. NoSuchRef: a ref that does not resolve (``nearest``).
            NotFound: the records did not exist then. GitError: the repository cannot be read.
        """
        at = req.facets.at
        if at is None:
            return _Revision()
        if self.checkout is None:
            raise BadFacet(req.text, "this box reads entities now only: it has no repository")
        try:
            gitstore.validate_ref(at)
            with gitstore.open_repo(self.checkout) as repo:
                resolved = gitstore.resolve(repo, at)
                snapshot = self._snapshot(repo, resolved.commit)
                changed = self._changed(repo, resolved.commit)
        except gitstore.BadRef as exc:
            raise BadFacet(
                req.text, f"at= is not a ref or date: {exc.why}", valid=_AT_SHAPES
            ) from None
        except gitstore.AmbiguousRef as exc:
            raise NoSuchRef(
                req.text,
                f"at={at} could mean several commits",
                nearest=[str(req.uri.with_params(at=c)) for c in exc.candidates],
            ) from None
        except gitstore.NoSuchRef as exc:
            before = f": its history starts at {exc.starts}" if exc.starts else ""
            raise NoSuchRef(
                req.text,
                f"at={at} names no commit of the checkout's repository{before}",
                nearest=[str(req.uri.with_params(at=name)) for name in exc.nearest],
                starts=exc.starts,
            ) from None
        except (gitstore.PathNotFound, gitstore.NotABlob):
            raise NotFound(
                req.text,
                f"the records did not exist at {at}",
                nearest=[str(req.uri.with_params(at=None))],
            ) from None
        except gitstore.GitStoreError as exc:
            raise GitError(req.text, f"the checkout's repository cannot be read: {exc}") from None
        if isinstance(snapshot, RecordError):
            raise NotFound(
                req.text,
                f"the records at {at} do not parse: {snapshot}",
                nearest=[str(req.uri.with_params(at=None))],
            )
        return _Revision(snapshot, resolved.commit, at, changed)

    def _snapshot(self, repo: gitstore.GitRepo, commit: str) -> R.Snapshot | RecordError:
        """The records at ``commit`` (immutable, so kept), or why they do not parse."""
        return self._kept(self._snapshots, commit, partial(_snapshot_at, repo, commit))

    def _changed(self, repo: gitstore.GitRepo, commit: str) -> Mapping[str, datetime]:
        """When each record file had last changed as of ``commit`` (immutable, so kept).

        Only a read at a revision asks: the snapshots a refusal's ``since`` walks do not.
        """
        return self._kept(self._changes, commit, partial(_changed_at, repo, commit))

    def _kept(self, kept: OrderedDict[tuple[str, str], T], commit: str, make: Callable[[], T]) -> T:
        """What ``make`` finds at ``commit``, kept among the ``_SNAPSHOTS_KEPT`` newest asked."""
        key = (str(self.checkout), commit)
        with self._lock:
            if key in kept:
                kept.move_to_end(key)
                return kept[key]
        found = make()
        with self._lock:
            kept[key] = found
            while len(kept) > _SNAPSHOTS_KEPT:
                kept.popitem(last=False)
        return found

    def _since(self, ref: R.Ref) -> dict[str, str] | None:
        """The oldest commit whose records hold ``ref`` (within the last 100 changes)."""
        if self.checkout is None:
            return None
        file = file_path(K.KINDS[ref.kind].source)
        try:
            with gitstore.open_repo(self.checkout) as repo:
                head = gitstore.resolve(repo, None).commit
                for entry in reversed(gitstore.log(repo, head, file, n=100)):
                    snap = self._snapshot(repo, entry.commit)
                    if isinstance(snap, R.Snapshot) and snap.exists(ref):
                        return {"commit": entry.commit, "date": entry.date}
        except gitstore.GitStoreError:
            return None
        return None

    def _unloaded(self) -> str | None:
        """Why no entity is served, when none of any kind is loaded (the records are optional)."""
        if any(R.keys(kind).exists() for kind in K.top_kinds()):
            return None
        files = " or ".join(_record_files())
        return f"no records are loaded: the served checkout has no {files} (tm_load_records)"

    # ---- the contract -------------------------------------------------------------------

    @override
    def list(self, req: Request) -> Listing:
        target = self.target(req.uri)
        if target.listing is None:
            raise NotFound(
                req.text,
                "that is a thing, not a collection: its URI has no trailing /",
                nearest=[str(req.uri.as_leaf().keeping(*self.sticky_params))],
            )
        revision = self.revision(req)
        at = revision.at
        base = req.uri.identity
        if target.listing == "root":
            children = [
                Entry(
                    str(base.child(k, collection=True).with_params(at=at)),
                    f"{k}/",
                    True,
                    vnd("listing"),
                    title=f"the {k}s",
                )
                for k in K.top_kinds()
            ]
            why = None if at is not None else self._unloaded()
            return Listing(children, extra={"absent": why} if why else {})
        if target.listing.startswith("kinds:"):
            return self._keys_listing(target.listing.removeprefix("kinds:"), None, revision)
        ref = target.ref
        assert ref is not None
        if not revision.exists(ref):
            raise NotFound(req.text, f"no {ref.kind} {ref.key}{_then(at)}")
        if target.listing == "children":
            return self._children(ref, at)
        return self._keys_listing(target.listing.removeprefix("under:"), ref, revision)

    def _children(self, ref: R.Ref, at: str | None) -> Listing:
        """``<kind>/<key>/``: the collections of the things that live under it."""
        entries = [
            Entry(
                str(self.uri(ref.kind, ref.key, child, collection=True).with_params(at=at)),
                f"{child}/",
                True,
                vnd("listing"),
                title=f"its {child}s",
            )
            for child in K.children(ref.kind)
        ]
        me = self.entity_uri(ref.kind, ref.key, at=at)
        return Listing(entries, links=[Link("item", str(me), title=f"the {ref.kind}")])

    def _keys_listing(self, kind: str, parent: R.Ref | None, revision: _Revision) -> Listing:
        """The keys of ``kind`` (under ``parent``), 500 a page."""
        at = revision.at
        game = parent.key if parent else None
        extra: dict[str, JsonValue] = {"kind": kind}
        if parent is not None:
            extra[parent.kind] = parent.key
        keys = revision.keys(kind, game)
        return Listing(
            _Entries(
                keys,
                lambda key, when: Entry(
                    str(self.entity_uri(kind, key, game, at)),
                    key,
                    False,
                    vnd(kind),
                    modified=when,
                ),
                lambda index: revision.dated(kind, game, keys, index),
            ),
            extra=extra,
        )

    @override
    def read(self, req: Request) -> Content:
        target = self.target(req.uri)
        if target.listing is not None:
            if not req.uri.collection:
                raise self.leaf_as_collection(req.uri)
            req.facets.require_facet(req.text, ("links",), "a collection")
            raise BadFacet(req.text, "a collection reads as its listing", valid=["links"])
        assert target.ref is not None
        facet = req.facets.facet
        req.facets.require_facet(req.text, ("links", "set", "stat"), f"a {target.ref.kind}")
        if facet == "set":
            req.facets.require(req.text, ("as", "at", "rel", "cursor"), "a set")
        elif facet == "stat":
            req.facets.require(req.text, ("as", "at"), "a stat")
        else:
            req.facets.require(req.text, ("as", "at", "pointer"), f"a {target.ref.kind}")
        revision = self.revision(req)
        ref = target.ref
        if facet == "set":
            return self._set(req, ref, revision)
        entity = revision.get(ref)
        if entity is None:
            raise self._missing(req, ref, revision)
        if facet == "stat":
            return self._stat(req, entity, revision)
        return self._read(req, entity, revision)

    def _missing(self, req: Request, ref: R.Ref, revision: _Revision) -> NotFound:
        what = f"{ref.kind} {ref.key}" + (f" of game {ref.game}" if ref.game else "")
        if revision.now:
            return NotFound(req.text, f"no {what}")
        parent = K.KINDS[ref.kind].parent
        if parent and not revision.exists(R.Ref(parent, str(ref.game))):
            return NotFound(req.text, f"no {parent} {ref.game}{_then(revision.at)}")
        since = self._since(ref) if _owner_id(ref) is not None else None
        if since is None:
            return NotFound(req.text, f"no {what}{_then(revision.at)}")
        later = str(req.uri.with_params(at=since["commit"]))
        return NotFound(
            req.text,
            f"the {what} did not exist{_then(revision.at)}: it exists since commit "
            f"{since['commit'][:12]} of {since['date']}",
            nearest=[later, str(req.uri.with_params(at=None))],
            since=since,
        )

    # ---- reads --------------------------------------------------------------------------

    def _common_links(self, req: Request, entity: R.Entity, at: str | None) -> builtins.list[Link]:
        parent = req.uri.identity.parent()
        assert parent is not None
        me = self.entity_uri(entity.kind, entity.key, entity.game, at)
        return [
            *self.up_links(req.uri),
            Link("collection", str(parent.with_params(at=at))),
            Link("describedby", str(me.with_params({"as": "stat"}))),
        ]

    def _read(self, req: Request, entity: R.Entity, revision: _Revision) -> Content:
        at = revision.at
        ref = R.Ref(entity.kind, entity.key, entity.game)
        me = self.entity_uri(entity.kind, entity.key, entity.game, at)
        record = self.record_uri(entity.file, entity.pointer, at)
        links = self._common_links(req, entity, at)
        pairs = link_rels(entity.kind)
        members = revision.members(ref, [rel for _, rel in pairs])
        related: dict[str, JsonValue] = {}
        for link_rel, rel in pairs:
            found = members.get(rel, [])
            related[link_rel] = {
                "total": len(found),
                "set": str(me.with_params({"as": "set", "rel": link_rel})),
            }
            for member in found:
                links.append(
                    Link(
                        link_rel,
                        str(self.member_uri(member, at)),
                        "exact",
                        count=member.count,
                        type=vnd(member.kind),
                    )
                )
        links.append(
            Link(
                "tm:data",
                str(record),
                "exact",
                title="the record it is read from",
                type="application/json",
            )
        )
        for child in child_rels(entity.kind):
            listing = self.uri(entity.kind, entity.key, child, collection=True).with_params(at=at)
            links.append(Link("item", str(listing), title=f"its {child}s"))
            related[child] = {
                "total": entity.related[child].total,
                "set": str(me.with_params({"as": "set", "rel": child})),
                "listing": str(listing),
            }
        outward = _OUTWARD.get(entity.kind)
        if outward is not None:
            links.extend(outward(self, entity, revision))
        body: dict[str, JsonValue] = {
            "uri": str(me),
            "kind": entity.kind,
            "key": entity.key,
        }
        if entity.game:
            body["game"] = entity.game
        if not revision.now:
            body["at"] = {"ref": at, "commit": revision.commit}
        body["fields"] = entity.fields
        body["related"] = related
        body["record"] = {"file": entity.file, "pointer": entity.pointer, "uri": str(record)}
        if revision.now:
            body["corrections"] = list(entity.corrections)
        return Content(str(req.uri), vnd(entity.kind), body, links, kind=entity.kind)

    def _stat(self, req: Request, entity: R.Entity, revision: _Revision) -> Content:
        at = revision.at
        me = self.entity_uri(entity.kind, entity.key, entity.game, at)
        own: dict[str, JsonValue] = {
            "kind": entity.kind,
            "key": entity.key,
            "record": {"file": entity.file, "pointer": entity.pointer},
            "counts": entity.counts,
            "corrections": len(entity.corrections),
        }
        if entity.game:
            own["game"] = entity.game
        if not revision.now:
            own["at"] = {"ref": at, "commit": revision.commit}
        links = [*self._common_links(req, entity, at), Link("alternate", str(me))]
        stat = Stat(str(me), entity.key, vnd(entity.kind), modified=entity.modified, extra=own)
        return stat.content(str(req.uri), links)

    def _set(self, req: Request, ref: R.Ref, revision: _Revision) -> Content:
        sets = set_rels(ref.kind)
        valid = builtins.list(sets)
        asked = req.facets.rel
        if asked is None:
            raise BadFacet(req.text, f"?as=set needs rel=, one of {', '.join(valid)}", valid=valid)
        rel_name = asked if asked in sets else f"tm:{asked}"
        if rel_name not in sets:
            raise BadFacet(req.text, f"a {ref.kind} has no relation {asked!r}", valid=valid)
        rel = sets[rel_name]
        scope_uri = req.uri.with_params(cursor=None)
        scope = str(scope_uri)
        offset = 0
        if req.facets.cursor is not None:
            offset = cursors.redeem(req.facets.cursor, scope, req.text)
        at = revision.at
        if revision.snapshot is not None:
            snapshot = revision.snapshot
            if not snapshot.exists(ref):
                raise self._missing(req, ref, revision)
            all_members = snapshot.members(ref, rel)
            total = len(all_members)
            page = all_members[offset : offset + self.set_page_size]
            wholes = []
            for member in page:
                found = snapshot.get(R.Ref(member.kind, member.key, member.game))
                wholes.append(found.fields if found is not None else {})
            items = list(zip(page, wholes, strict=True))
        else:
            owner = _owner_id(ref)
            if owner is None:
                raise self._missing(req, ref, revision)
            total, items = R.set_page(ref, rel, owner, offset, self.set_page_size)
        me = self.entity_uri(ref.kind, ref.key, ref.game, at)
        members = []
        for member, fields in items:
            one: dict[str, JsonValue] = {
                "uri": str(self.member_uri(member, at)),
                **member.as_json(),
            }
            one["fields"] = fields
            members.append(one)
        body: dict[str, JsonValue] = {
            "uri": scope,
            "target": str(me),
            "rel": rel_name,
            "total": total,
            "offset": offset,
            "members": members,
        }
        if offset + self.set_page_size < total:
            token = cursors.issue(scope, offset + self.set_page_size)
            body["nextCursor"] = token
            body["next"] = str(scope_uri.with_params(cursor=token))
        links = [Link("alternate", str(me), title="the thing these members belong to")]
        return Content(scope, vnd("set"), body, links, kind="set")

    # ---- links held about other mounts' things --------------------------------------------

    @override
    def links_into(self, uri: TmUri) -> builtins.list[Link]:
        if uri.mount == "fs" and "/".join(uri.path) in _record_files():
            pointer = uri.param("pointer")
            if pointer is None:
                return []
            return self._read_by(uri, "/".join(uri.path), pointer)
        if (
            uri.mount == "http"
            and not uri.collection
            and len(uri.path) == 4
            and uri.path[:3] == (self.site, "autopsy", "games")
        ):
            key = uri.path[3]
            try:
                ref = R.Ref.of("game", key)
                exists = _owner_id(ref) is not None
            except (R.InvalidKey, DatabaseError):
                return []
            if exists:
                return [
                    Link(
                        "tm:source",
                        str(self.entity_uri("game", key)),
                        "exact",
                        title="the game this page shows",
                        type=vnd("game"),
                    )
                ]
        return []

    def _read_by(self, uri: TmUri, file: str, pointer: str) -> builtins.list[Link]:
        """``tm:read-by`` from a record part to the entity it holds (the ``tm:data`` back)."""
        at = uri.param("at")
        tokens = pointer.split("/")[1:]
        ref = None
        try:
            if at is not None:
                root = self.root.with_params(at=at)
                revision = self.revision(Request(root, parse_facets(root)))
                assert revision.snapshot is not None
                ref = revision.snapshot.at_pointer(file, tokens)
            else:
                ref = R.places_in_tables(file, tokens)
        except Exception:  # a refused ref or an unreadable record: the fs read stands alone
            return []
        if ref is None:
            return []
        href = self.entity_uri(ref.kind, ref.key, ref.game, at)
        return [
            Link(
                "tm:read-by",
                str(href),
                "exact",
                title=f"the {ref.kind} this part holds",
                type=vnd(ref.kind),
            )
        ]

    # ---- completion, templates, the map ---------------------------------------------------

    @override
    def change_sources(self, watching: Watching) -> builtins.list[ChangeSource]:
        return [watching.stamped(self.name, watch.stamp, watch.SENDERS)]

    @override
    def documents_stamp(self) -> Hashable:
        return watch.stamp()

    @override
    def stamp(self, uri: TmUri) -> Hashable | None:
        """The records' stamp (:func:`watch.stamp`): a plain read is made from the tables alone.

        The address is checked by its shape first (no query): one the read refuses so is None.
        """
        try:
            self.target(uri)
        except NotFound:
            return None
        return watch.stamp()

    @override
    def documents(self) -> Iterator[Document]:
        """Each thing as it reads now: its fields' words (corrections applied), by their digest.

        Rows are read a chunk at a time with the rows their fields list, so a walk costs a few
        queries per ``DOCUMENT_CHUNK`` things, whatever their number. Each field is a passage:
        a hit names the field it matched, ``?pointer=/fields/<name>``, which reads that field.
        """
        for kind in K.KINDS.values():
            rows = kind.model._default_manager.order_by(*kind.order, "pk")
            rows = rows.select_related(*kind.select, *((kind.parent,) if kind.parent else ()))
            for start in range(0, rows.count(), DOCUMENT_CHUNK):
                chunk = list(rows[start : start + DOCUMENT_CHUNK])
                attached = R._attached(kind, [row.pk for row in chunk])
                for row in chunk:
                    key, game = kind.row_key(row)
                    fields = kind.fields(row, attached.get(row.pk, []))
                    text = "\n".join(words(fields)) + "\n"
                    title = next((str(fields[f]) for f in ("name", "title") if fields.get(f)), key)
                    parts = [
                        (f"/fields/{_escape(name)}", "\n".join(words(value)))
                        for name, value in fields.items()
                    ]
                    yield Document(
                        str(self.entity_uri(kind.name, key, game)),
                        title[:200],
                        kind.name,
                        digest(text),
                        vnd(kind.name),
                        partial(str, text),
                        parts=partial(list, parts),
                    )

    @override
    def complete(self, argument: str, value: str, context: Mapping[str, str]) -> builtins.list[str]:
        completer = _COMPLETERS.get(argument)
        if completer is None:
            raise unknown_argument(argument, list(_COMPLETERS))
        return completer(self, value, context)

    def _complete_key(self, kind: str, value: str) -> builtins.list[str]:
        """The keys of the top kind ``kind`` that start with ``value`` (100 at most)."""
        if kind not in K.top_kinds() or not value.isascii() or len(value) > 64:
            return []
        model = K.KINDS[kind].model
        qs = model._default_manager.filter(key__startswith=value).order_by("key")
        return builtins.list(qs.values_list("key", flat=True)[:100])

    def _complete_child(self, kind: str, value: str, parent: str) -> builtins.list[str]:
        """The keys of ``kind`` under ``parent`` that start with ``value`` (100 at most)."""
        try:
            R.check_key(str(K.KINDS[kind].parent), parent)
        except R.InvalidKey:
            return []
        declared = K.KINDS[kind]
        return _prefixed(R.keys(kind, parent), value, lambda row: declared.key_of(row)[0])

    @override
    def templates(self) -> builtins.list[Template]:
        return [
            Template(
                "entity",
                f"tm://{self.host}/entity/{{kind}}/{{key}}",
                "A pattern, game or lesson of the autopsy",
                "kind is pattern, game or lesson; key is its record key (a pattern name such "
                "as pad-poll, a game's 12 hex digits, a lesson name). Reads as JSON with the "
                "record's fields; links tm:found-in/tm:exhibits, tm:instance, "
                "tm:demonstrated-by/tm:demonstrates, tm:measures/tm:measured-by both ways with "
                "count, and tm:data into the record with ?pointer=. ?as=stat for metadata, "
                "?as=set&rel=<rel> for every member of one relation (500 a page), ?at=<ref or "
                "date> for the entity as its record stood then. entity/<kind>/ lists the keys.",
                ("kind", "key", "as", "rel"),
                None,
            ),
            Template(
                "entity-routine",
                f"tm://{self.host}/entity/game/{{game}}/routine/{{routine}}",
                "A routine a rule named in a game",
                "game is the game's 12 hex digits; routine is b<bank>-<ADDR> (e.g. b0-8E5C, "
                "the address in 4 uppercase hex digits). Only routines a rule named have "
                "addresses; entity/game/<game>/routine/ lists them. Links tm:instance-of to "
                "its patterns.",
                ("game", "routine", "as"),
                vnd("routine"),
            ),
        ]

    @override
    def collections(self, limit: int = 10_000) -> Iterator[Entry]:
        yield from super().collections(limit)
        for kind in K.top_kinds():
            yield Entry(str(self.uri(kind, collection=True)), f"{kind}/", True, vnd("listing"))
        for kind in K.top_kinds():
            if K.children(kind):
                yield from self._child_collections(kind, limit)

    def _child_collections(self, kind: str, limit: int) -> Iterator[Entry]:
        try:
            keys = builtins.list(_DbKeys(kind, None)[:limit])
        except DatabaseError:
            return
        for key in keys:
            yield Entry(
                str(self.uri(kind, key, collection=True)), f"{kind}/{key}/", True, vnd("listing")
            )
            for child in K.children(kind):
                yield Entry(
                    str(self.uri(kind, key, child, collection=True)),
                    f"{kind}/{key}/{child}/",
                    True,
                    vnd("listing"),
                )


# --- helpers ------------------------------------------------------------------------------------


def _escape(token: str) -> str:
    """A JSON pointer token (RFC 6901)."""
    return token.replace("~", "~0").replace("/", "~1")


def _then(at: str | None) -> str:
    return f" at {at}" if at else ""


def _prefixed(qs: QuerySet[Any], value: str, key: Callable[[Any], str]) -> builtins.list[str]:
    out = []
    for row in qs.iterator(chunk_size=2000):
        name = key(row)
        if name.startswith(value):
            out.append(name)
            if len(out) >= 100:
                break
    return out


def _complete_rel(mount: EntityMount, value: str, context: Mapping[str, str]) -> builtins.list[str]:
    """The ``rel`` values of the context's kind (of every kind when it names no such kind)."""
    kind = context.get("kind", "")
    every = {r: r for k in K.KINDS for r in set_rels(k)}
    rels = (set_rels(kind) if kind in K.KINDS else {}) or every
    return sorted(r for r in rels if r.startswith(value))[:100]


#: Template argument → how it is completed, in the order ``bad-argument`` lists them.
_COMPLETERS: dict[str, Callable[[EntityMount, str, Mapping[str, str]], builtins.list[str]]] = {
    "kind": lambda mount, value, context: [k for k in K.top_kinds() if k.startswith(value)],
    "key": lambda mount, value, context: mount._complete_key(context.get("kind", "pattern"), value),
    "game": lambda mount, value, context: mount._complete_key("game", value),
    "routine": lambda mount, value, context: mount._complete_child(
        "routine", value, context.get("game", "")
    ),
    "as": lambda mount, value, context: [
        f for f in ("links", "set", "stat") if f.startswith(value)
    ],
    "rel": _complete_rel,
}


def _renders_as(mount: EntityMount, entity: R.Entity, revision: _Revision) -> builtins.list[Link]:
    if not revision.now:
        return []
    return [
        Link(
            "tm:renders-as",
            str(mount.page_uri(entity.key)),
            "exact",
            title="its page on the site",
            type="text/html",
        )
    ]


def _cartridge(mount: EntityMount, entity: R.Entity, revision: _Revision) -> builtins.list[Link]:
    return [
        Link(
            "tm:cartridge",
            str(mount.cartridge_uri(entity.fields["tree"], revision.at)),
            "exact",
            title="its source tree in git",
        )
    ]


#: kind → the links a read of it gives into other mounts (beyond ``tm:data``).
_OUTWARD: dict[str, Callable[[EntityMount, R.Entity, _Revision], builtins.list[Link]]] = {
    "game": _renders_as,
    "lesson": _cartridge,
}
