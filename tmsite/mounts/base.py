"""The mount contract: three abstract methods, the rest written once here.

A mount is one module in ``tmsite/mounts/``, one line in ``registry.MOUNTS`` and one world in
the shared mount suite. It says what it is with class attributes and implements:

* ``list(req)`` — the children of a collection (all of them, in order; a ``Sequence`` that
  may materialise entries lazily, so a page of a huge directory costs a page);
* ``read(req)`` — everything that is not a plain listing: leaves, and facets of collections;
* ``complete(argument, value, context)`` — live values for its template arguments.

Optional: ``documents()``, what it offers to the search index (by default nothing), with
``documents_under(uri)``, ``reindexes(changed)`` and ``documents_stamp()`` so an index follows
one change without a walk of everything; ``change_sources(watching)``, what tells the bus of
its changes (by default nothing); ``stamp(uri)``, what vouches that a read is as it was (by
default nothing: every read is built), with ``links_stamp()`` for the links it gives others.

Written once here: paging a listing with signed cursors, ``nearest`` from the deepest existing
ancestor, ``links`` of a target (for ``?as=links``), ``exists``, and the ``up`` link.

Spec: NS2, NS6, NS8.
"""

from __future__ import annotations

import builtins
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from tmsite.core import cursor as cursors
from tmsite.core import work
from tmsite.core.errors import BadArgument, BadFacet, NotFound, Refusal
from tmsite.core.facets import parse_facets
from tmsite.core.links import Link
from tmsite.core.nearest import MAX_CANDIDATES, MAX_NEAREST, rank_names
from tmsite.core.types import (
    Content,
    Document,
    Entry,
    Listing,
    Reader,
    Request,
    Template,
    vnd,
)
from tmsite.core.uri import TmUri, parse

#: Children per listing page.
PAGE_SIZE = 500


class NamespaceView(Reader, Protocol):
    """What a mount sees of the namespace that serves it: the read path and its mounts."""

    @property
    def mounts(self) -> Mapping[str, Mount]:
        """The namespace's mounts by name, the one asking among them."""
        ...


@dataclass(frozen=True)
class Watching:
    """What a mount's change sources are given (by ``tmsite.subscriptions.sources``).

    Attributes:
        host: the host whose addresses are watched.
        publish: tells the bus that the thing at an address changed.
        read: reads an address for its fingerprint (never counted as served).
        mounts: the mounts served now (the namespace's; a source looks its mount up each time,
            so one rebuilt from changed settings is followed).
        stamped: a polling source over a stamp: ``stamped(mount, stamp, senders, interval=…,
            accept=…)`` reads ``stamp()`` every ``interval`` seconds while the mount's
            addresses are listened to, reads those again when it moved and publishes the ones
            whose reading changed; ``senders`` (model labels) wake it when saved or deleted.
        setting: a number from settings, ``setting(NAME, default)``.
    """

    host: str
    publish: Callable[[str], None]
    read: Callable[[str], Content]
    mounts: Callable[[], Mapping[str, Mount]]
    stamped: Callable[..., ChangeSource]
    setting: Callable[[str, float], float]


@dataclass(frozen=True)
class ChangeSource:
    """One change source of a mount, as the bus wires it.

    Attributes:
        name: its name among the installed sources (the mount's, or ``<mount>-<what>``).
        source: the object (tests and health look at it).
        interest: told when an address gains its first listener or loses its last.
        arm: returns once everything listened to now is watched (or at its deadline).
        senders: models (``app.Model``) whose saves and deletes wake ``source.wake``.
        start: starts it; returns what stops it.
    """

    name: str
    source: Any
    interest: Callable[[str, bool], None] | None = None
    arm: Callable[[float], bool] | None = None
    senders: tuple[str, ...] = ()
    start: Callable[[], Callable[[], None]] | None = None


class Mount(ABC):
    """One backend under ``tm://<host>/<name>/``.

    Class attributes:
        name: The first path segment.
        title: A few words for listings.
        what: One sentence for the root listing: what it holds.
        listing_params: Parameters a plain listing honours (besides ``cursor``).
        listing_facets: ``as`` values that mean "the plain listing" on a collection.
    """

    name: ClassVar[str]
    title: ClassVar[str]
    #: An instance may say it from its settings (fs names its roots).
    what: str
    listing_params: ClassVar[tuple[str, ...]] = ()
    listing_facets: ClassVar[tuple[str | None, ...]] = (None,)
    #: Parameters that stay on URIs a read emits (``at`` keeps a read at its revision).
    sticky_params: ClassVar[tuple[str, ...]] = ()
    page_size: int = PAGE_SIZE

    def __init__(self, host: str) -> None:
        self.host = host

    # ---- the contract ---------------------------------------------------------------------

    @abstractmethod
    def list(self, req: Request) -> Listing:
        """The children of the collection ``req.uri`` names.

        Raises:
            Refusal: ``NotFound`` (``nearest`` may be left for the base to fill), or any other.
        """

    @abstractmethod
    def read(self, req: Request) -> Content:
        """Read a leaf, or a collection under a facet that is not the plain listing."""

    @abstractmethod
    def complete(self, argument: str, value: str, context: Mapping[str, str]) -> builtins.list[str]:
        """Values for template ``argument`` starting with ``value`` (``context``: the others).

        Raises:
            BadArgument: the argument is not one of this mount's templates.
        """

    def templates(self) -> builtins.list[Template]:
        """The resource templates that teach this mount's grammar."""
        return []

    def links_into(self, uri: TmUri) -> builtins.list[Link]:
        """Links this mount holds about a thing of any mount (``uri`` keeps ``at``).

        A mount that links into another mount's things supplies those links here, so the
        other mount need not know it: the http mount gives an fs markdown file its
        ``tm:renders-as``, the git mount gives a checkout file its ``tm:repository``. Called
        on every read: answer cheaply, and only for URIs you know.
        """
        return []

    def admits(self, uri: TmUri) -> None:
        """Refuse ``uri`` as a read would for its form alone, reading nothing it names.

        Asked before an address is held for later (a subscription, a listen): what a read would
        refuse by the address's shape — a path leaving its root, a name the deny-list hides —
        is refused then too. A thing that does not exist yet is admitted. By default every
        address is.

        Raises:
            Refusal: the read's own refusal of that form.
        """
        return

    def documents(self) -> Iterator[Document]:
        """The things this mount offers to a search index, each with its text and stamp.

        Only what a read would serve: nothing denied, redacted, gated or outside what the
        mount serves; each ``uri`` reads (and, with ``lines``, reads the lines asked). A thing
        too large or not text is offered with an empty body, to be found by its name. By
        default a mount offers nothing.
        """
        return iter(())

    def documents_under(self, uri: TmUri) -> Iterator[Document]:
        """The documents at ``uri`` or, for a collection, below it (an index's one change).

        By default those of :meth:`documents` there; a mount with many documents narrows the
        walk to the address (fs walks one directory, or stats one file).
        """
        at = str(uri.identity)
        for document in self.documents():
            if document.uri == at or (uri.collection and document.uri.startswith(at)):
                yield document

    def reindexes(self, changed: TmUri) -> builtins.list[TmUri]:
        """The addresses of this mount whose documents a change of ``changed`` may alter.

        By default ``changed`` itself when it is this mount's; a mount whose documents are made
        from another mount's things names its own (http: the page a markdown file makes).
        """
        if changed.mount == self.name and changed.host == self.host:
            return [changed.identity]
        return []

    def documents_stamp(self) -> Hashable | None:
        """A cheap stamp of everything :meth:`documents` offers: it moves when any of them does.

        An index asks it every round and walks the documents only when it moved. None (the
        default): the mount has none, and its change sources name each changed address.
        """
        return None

    def stamp(self, uri: TmUri) -> Hashable | None:
        """A cheap value that is the same while a plain read of ``uri`` would read the same.

        Taken before the read is built; a read answered again while its stamp (and the links
        others give the thing) is unchanged must be the one the read would build. None (the
        default): this mount cannot vouch for ``uri``, and its read is built every time.
        Called before every plain read of this mount's things: answer without reading them.
        """
        return None

    def links_stamp(self) -> Hashable | None:
        """A value that moves when the links this mount gives others' things change here.

        What :meth:`links_into` gives may change by a write in this process (a correction,
        an approved link); a stamped read compares this at once, and the links themselves
        only now and then. None (the default): nothing here changes them that way.
        """
        return None

    def change_sources(self, watching: Watching) -> builtins.list[ChangeSource]:
        """What tells the bus of this mount's changes, wired once a process (none by default)."""
        return []

    def absent(self) -> str | None:
        """Why this mount has nothing in the served checkout, or None when it serves.

        The records a mount reads are this project's own and optional: the root and the
        ``resources/list`` map leave out a mount that has nothing, and its own root reads as an
        empty listing whose ``absent`` says why. By default a mount always serves.
        """
        return None

    def attach(self, namespace: NamespaceView) -> None:
        """Called once by the namespace that serves this mount."""
        self.namespace = namespace

    # ---- derived ----------------------------------------------------------------------------

    @property
    def root(self) -> TmUri:
        """This mount's root collection, ``tm://<host>/<name>/``."""
        return TmUri(self.host, self.name, (), True)

    def uri(self, *path: str, collection: bool = False, **params: str | None) -> TmUri:
        """A URI under this mount."""
        return TmUri(self.host, self.name, tuple(path), collection).with_params(params)

    def resolve(self, req: Request) -> Content:
        """Answer ``req``: a listing page for a plain collection read, else ``read``."""
        if req.uri.collection and req.facets.facet in self.listing_facets:
            return self.listing(req)
        return self.read(req)

    def listing(self, req: Request) -> Content:
        """One page of the children of ``req.uri``, with a signed cursor to the next."""
        req.facets.require(req.text, ("cursor", "as", *self.listing_params), "a listing")
        listing = self.list(req)
        scope_uri = req.uri.with_params(cursor=None)
        scope = str(scope_uri)
        offset = 0
        if req.facets.cursor is not None:
            offset = cursors.redeem(req.facets.cursor, scope, req.text)
        children = listing.children
        page = children[offset : offset + self.page_size]
        work.spend("listed", len(page))
        body: dict[str, object] = {"uri": scope, **listing.extra}
        body["children"] = [entry.to_json() for entry in page]
        if offset + self.page_size < len(children):
            token = cursors.issue(scope, offset + self.page_size)
            body["nextCursor"] = token
            body["next"] = str(scope_uri.with_params(cursor=token))
        links = [*self.up_links(req.uri), *listing.links]
        return Content(scope, vnd(listing.kind), body, links, kind=listing.kind)

    def up_links(self, uri: TmUri) -> builtins.list[Link]:
        """``up`` to the parent collection (keeping the sticky parameters)."""
        parent = uri.identity.parent()
        if parent is None:
            return []
        parent = parent.with_params({k: uri.param(k) for k in self.sticky_params})
        return [Link("up", str(parent))]

    def links(self, req: Request) -> builtins.list[Link]:
        """Every link of the target (for ``?as=links``): by default, those of its read."""
        return self.resolve(req).links

    def exists(self, uri: TmUri) -> bool:
        """Whether ``uri`` resolves on this mount: any refusal means it does not."""
        try:
            self.resolve(Request(uri, parse_facets(uri)))
        except Refusal:
            return False
        return True

    def walk(self, uri: TmUri | None = None, limit: int = 10_000) -> Iterator[Entry]:
        """Every entry below ``uri`` (default the mount root), breadth first, at most ``limit``."""
        queue = [uri or self.root]
        seen = 0
        while queue and seen < limit:
            current = queue.pop(0)
            try:
                listing = self.list(Request(current, parse_facets(current)))
            except Refusal:
                continue
            for entry in listing.children:
                seen += 1
                yield entry
                if entry.collection and not entry.redacted:
                    queue.append(parse(entry.uri))
                if seen >= limit:
                    return

    def collections(self, limit: int = 10_000) -> Iterator[Entry]:
        """The collections of this mount, for the ``resources/list`` map (no leaves)."""
        yield Entry(str(self.root), f"{self.name}/", True, vnd("listing"), title=self.title)

    def nearest(self, uri: TmUri) -> builtins.list[str]:
        """Up to five URIs near ``uri``, from the deepest ancestor that lists."""
        refused = str(uri)
        wanted = uri.name
        sticky = {k: uri.param(k) for k in self.sticky_params}
        parent = uri.identity.parent()
        while parent is not None and parent.mount == self.name:
            ask = parent.with_params(sticky)
            try:
                children: Sequence[Entry] = self.list(Request(ask, parse_facets(ask))).children
            except Refusal:
                wanted, parent = parent.name, parent.parent()
                continue
            return _nearest_children(children, wanted, refused, sticky)
        return [str(self.root)] if str(self.root) != refused else []

    def fill_nearest(self, refusal: NotFound, uri: TmUri) -> None:
        """Complete a ``NotFound`` raised without ``nearest``; never suggest the refused URI."""
        if not refusal.nearest_given:
            refusal.helpers["nearest"] = self.nearest(uri)
        refused = refusal.uri
        refusal.helpers["nearest"] = [n for n in refusal.helpers["nearest"] if n != refused][:5]

    # ---- helpers for mounts -------------------------------------------------------------

    def flat_leaf(self, req: Request, what: str) -> str:
        """The name a read addresses on a mount that holds one level of leaves.

        The root reads only as its listing (``links``); a leaf, ``what``, takes ``as`` and
        ``pointer`` and the ``links`` and ``stat`` facets, and has nothing under it.
        """
        uri = req.uri
        if uri.collection or not uri.path:
            req.facets.require_facet(req.text, ("links",), "a collection")
            raise BadFacet(req.text, "a collection reads as its listing", valid=["links"])
        req.facets.require(req.text, ("as", "pointer"), what)
        req.facets.require_facet(req.text, ("links", "stat"), what)
        if len(uri.path) > 1:
            raise NotFound(req.text, f"{what} has nothing under it")
        return uri.path[0]

    def complete_flat_leaf(
        self, argument: str, value: str, names: Callable[[], Iterable[str]]
    ) -> builtins.list[str]:
        """Completion on a mount that holds one level of leaves: ``as``, or a leaf's ``name``.

        ``names`` is called only when a name is asked for; the first 100 that fit are offered.
        """
        if argument == "as":
            return [f for f in ("links", "stat") if f.startswith(value)]
        if argument != "name":
            raise unknown_argument(argument, ["name", "as"])
        return [name for name in names() if name.startswith(value)][:100]

    def leaf_links(self, uri: TmUri, me: TmUri) -> builtins.list[Link]:
        """A leaf's links: ``up`` to the collection it is in, that ``collection``, its stat."""
        (up,) = self.up_links(uri)
        return [
            up,
            Link("collection", up.href),
            Link("describedby", str(me.with_params({"as": "stat"}))),
        ]

    def leaf_as_collection(self, uri: TmUri) -> NotFound:
        """The refusal for a collection asked as a leaf: it points at the ``/`` form."""
        target = str(uri.as_collection().keeping(*self.sticky_params))
        return NotFound(str(uri), "that is a collection: its URI ends with /", nearest=[target])


def _nearest_children(
    children: Sequence[Entry], wanted: str, refused: str, sticky: Mapping[str, str | None]
) -> list[str]:
    """Rank children by name, then build only the best few (a huge directory stays cheap).

    A redacted entry does not resolve, so it is never offered.
    """
    names_of = getattr(children, "names", None)
    if callable(names_of):
        names: Sequence[str] = names_of()  # ranked on its first MAX_RANKED
    else:
        names = [entry.name for entry in children[:MAX_CANDIDATES]]
    out: list[str] = []
    for index in rank_names(wanted, names, limit=20):
        entry = children[index]
        href = _with(entry.uri, sticky)
        if entry.redacted or href == refused:
            continue
        out.append(href)
        if len(out) == MAX_NEAREST:
            break
    return out


def _with(uri_text: str, sticky: Mapping[str, str | None]) -> str:
    if not any(sticky.values()):
        return uri_text
    return str(parse(uri_text).with_params(sticky))


def unknown_argument(argument: str, valid: list[str]) -> BadArgument:
    """The refusal of a completion asked for an argument no template of the mount has."""
    return BadArgument(None, f"no template argument named {argument!r}", valid=valid)


def whole_stat(req: Request) -> None:
    """Refuse a part (``lines``, ``range``, ``pointer``) of a stat, which is read whole."""
    if req.facets.part is not None:
        raise BadFacet(req.text, "a stat has no parts", valid=[])


def require_no_part(req: Request, what: str) -> None:
    """Refuse a part parameter on a target that has no parts."""
    if req.facets.part is not None:
        raise BadFacet(req.text, f"{what} has no parts to cut", valid=[])
