"""The namespace: the hosts, the root, the mounts, and what every read gets on its way out.

``Namespace.read`` is the one path every read takes, whatever surface asked: parse, dispatch
to the mount, fill ``nearest``, ``?as=links``, parts, the read cap, link order and link cap. A
plain read a mount vouches for (``Mount.stamp``) is kept and given again while its stamp is the
same (the memo at the end of this module), for MCP, REST and the tools alike.

Spec: NS1, NS6, NS7, LK4, T7, FS.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from functools import lru_cache
from typing import Any

from tmsite.core import cursor as cursors
from tmsite.core import tracing
from tmsite.core.errors import BadArgument, NotFound, Refusal
from tmsite.core.facets import Facets, UnknownFacet, parse_facets
from tmsite.core.links import Link, cap, filtered, order
from tmsite.core.nearest import rank
from tmsite.core.parts import apply_part, enforce_cap, wire_size
from tmsite.core.types import (
    Content,
    Emphasis,
    Entry,
    FacetAssembler,
    Request,
    Template,
    vnd,
)
from tmsite.core.uri import TmUri, parse
from tmsite.kinds import counter as kind_counter
from tmsite.mounts.base import PAGE_SIZE, Mount

#: Entries per ``resources/list`` page.
MAP_PAGE_SIZE = 100
#: The document a client should read first.
HELP_PATH = ("fs", "docs", "mcp.md")
_LINK_FILTERS = ("as", "rel", "min", "cursor")
#: Who the two starting points are for and how much they matter (MCP ``audience`` and
#: ``priority``): the root, where every walk starts, and the document to read first.
EMPHASIS = {
    "root": Emphasis(("user", "assistant"), 1.0),
    "help": Emphasis(("user", "assistant"), 0.9),
}


@dataclass(frozen=True)
class MapPage:
    """One page of the ``resources/list`` map, and the cursor to the next (None on the last)."""

    entries: list[Entry]
    next_cursor: str | None


class Namespace:
    """Every mount of one host, and the reads that cross them.

    ``assemblers`` are the facets answered for any address, whatever its mount (``as`` value →
    assembler; the registry wires ``?as=blocks`` and ``?as=search`` in); those in ``unlisted``
    take parameters of their own (``search`` its ``q``) and are not named among the facets a
    refusal offers. The reads an assembler makes to build its answer are not counted as
    served; its answer is.
    """

    def __init__(
        self,
        host: str,
        mounts: Mapping[str, Mount],
        assemblers: Mapping[str, FacetAssembler] | None = None,
        unlisted: frozenset[str] = frozenset(),
    ) -> None:
        self.host = host
        self.mounts = dict(sorted(mounts.items()))
        self.assemblers = dict(assemblers or {})
        self.unlisted = unlisted
        for mount in self.mounts.values():
            mount.attach(self)
        #: The mounts that may vouch for a read (:meth:`Mount.stamp`), and those whose links
        #: into others' things may change by a write here (:meth:`Mount.links_stamp`).
        self.stamped = frozenset(
            name for name, mount in self.mounts.items() if type(mount).stamp is not Mount.stamp
        )
        self._linking = tuple(
            mount
            for mount in self.mounts.values()
            if type(mount).links_stamp is not Mount.links_stamp
        )
        #: The plain reads kept while their stamp vouches for them.
        self.memo = ReadMemo()

    # ---- addresses ----------------------------------------------------------------------

    @property
    def root(self) -> TmUri:
        """The host's root, ``tm://<host>/``: it lists the mounts."""
        return TmUri(self.host, collection=True)

    def help_uri(self) -> str | None:
        """The document a client should read first (``HELP_PATH``): the root links it ``help``.

        None when the checkout served has no such document (another repository than this
        project's): nothing then names an address that would be refused.
        """
        entry = self._help_entry()
        return entry.uri if entry is not None else None

    def present(self) -> Iterator[Mount]:
        """The mounts that have something in the served checkout (:meth:`Mount.absent`)."""
        return (mount for mount in self.mounts.values() if mount.absent() is None)

    # ---- reading ------------------------------------------------------------------------

    def read(self, text: object) -> Content:
        """Read one tm:// URI: the content with its links ordered and capped.

        A plain address of a mount that stamps is given kept while its stamp vouches for it.

        Raises:
            Refusal: the one rejection tree; nothing else escapes.
        """
        uri = plain(text, self.host, self.stamped) if isinstance(text, str) else None
        stamp = None if uri is None else self.stamp(uri)
        if uri is None or stamp is None:
            return self._read(text)
        assert isinstance(text, str)
        kept = self.memo.get(text, stamp, lambda: tuple(self.links_into(uri)))
        if kept is not None:
            kind_counter.record(kept.content)
            return kept.given()
        links = tuple(self.links_into(uri))  # taken before the read, as the stamp
        content = self._read(text)
        self.memo.put(text, Kept(stamp, links, content))
        return content

    def keeps(self, text: str) -> bool:
        """Whether a read of ``text`` may be kept: a plain address of a mount that stamps."""
        return plain(text, self.host, self.stamped) is not None

    def kept(self, text: str, *, wait: bool = True) -> Kept | None:
        """The read kept for ``text`` while its stamp vouches for it; None when a read builds it.

        ``wait`` False: None too when the links others give it are due to be compared (which
        may ask the database), for a caller that may not wait.
        """
        uri = plain(text, self.host, self.stamped)
        if uri is None:
            return None
        links = (lambda: tuple(self.links_into(uri))) if wait else None
        return self.memo.get(text, self.stamp(uri), links)

    def stamp_of(self, text: str) -> Hashable | None:
        """The stamp of a plain read of ``text`` (:meth:`stamp`), None when it is not kept."""
        uri = plain(text, self.host, self.stamped)
        return None if uri is None else self.stamp(uri)

    def _read(self, text: object) -> Content:
        uri = parse(text)
        facet = uri.param("as")
        assembler = self.assemblers.get(facet) if facet is not None else None
        if assembler is not None:  # any address as blocks: its facets are its own
            with kind_counter.quiet():
                content = assembler(self, uri)
            return self._finish(content, Request(uri, Facets()))
        facets = parse_facets(uri)
        req = Request(uri, facets)
        if uri.is_hosts:
            return self._finish(self._hosts(req), req)
        if uri.host != self.host:
            raise NotFound(
                str(uri),
                f"this server answers the host {self.host!r} only",
                nearest=[str(self.root)],
            )
        if uri.is_root:
            return self._finish(self._root(req), req)
        mount = self.mount_for(uri)
        try:
            with tracing.span(f"read {uri.mount}", {}):
                if facets.facet == "links":
                    content = self._links(mount, req)
                else:
                    content = mount.resolve(req)
                    content.links.extend(self.links_into(req.uri))
        except NotFound as refusal:
            mount.fill_nearest(refusal, uri)
            raise
        except UnknownFacet as refusal:
            raise refusal.offering(self.facets_everywhere()) from None
        return self._finish(content, req)

    def facets_everywhere(self) -> list[str]:
        """The ``as`` values answered here for any address under a mount, whatever it is.

        ``links`` (the namespace pages every thing's links) and each listed assembler's
        (``blocks``); a refused ``as`` names them after the mount's own, so ``valid`` lists all
        that work as they are.
        """
        return ["links", *(facet for facet in self.assemblers if facet not in self.unlisted)]

    def links_into(self, uri: TmUri) -> list[Link]:
        """Links other mounts hold about ``uri`` (a page's markdown, a file's repository)."""
        return [link for mount in self.mounts.values() for link in mount.links_into(uri)]

    def stamp(self, uri: TmUri) -> Hashable | None:
        """What vouches that a plain read of ``uri`` reads as it did; None when nothing does.

        Its mount's stamp, and the links stamp of every mount whose links into others' things
        a write here may change.
        """
        mount = self.mounts.get(uri.mount) if uri.mount is not None else None
        found = None if mount is None else mount.stamp(uri)
        if found is None:
            return None
        return found, tuple([linking.links_stamp() for linking in self._linking])

    def mount_for(self, uri: TmUri) -> Mount:
        """The mount ``uri`` names (``uri`` is below the root).

        Raises:
            NotFound: no mount has that name; ``nearest`` holds the closest mount roots.
        """
        assert uri.mount is not None
        mount = self.mounts.get(uri.mount)
        if mount is None:
            candidates = [(name, str(m.root)) for name, m in self.mounts.items()]
            raise NotFound(
                str(uri),
                f"no mount named {uri.mount!r}",
                nearest=rank(uri.mount, candidates, exclude=str(uri)),
            )
        return mount

    def _finish(self, content: Content, req: Request) -> Content:
        content = apply_part(content, req.uri, req.facets)
        enforce_cap(content, req.uri)
        links = order(content.links)
        links_uri = req.uri.keeping("at", **{"as": "links"})
        content.links = cap(links, str(links_uri))
        kind_counter.record(content)  # the kind served, counted in memory, flushed in batches
        return content

    def _hosts(self, req: Request) -> Content:
        req.facets.require(req.text, (), "tm://")
        child = Entry(str(self.root), self.host, True, vnd("mounts"), title=f"the box {self.host}")
        body = {"uri": "tm://", "children": [child.to_json()]}
        return Content("tm://", vnd("hosts"), body, [Link("item", str(self.root))], kind="hosts")

    def _root(self, req: Request) -> Content:
        req.facets.require(req.text, (), "the root")
        children = []
        help_uri = self.help_uri()
        links = [Link("up", "tm://")]
        if help_uri is not None:
            links.append(Link("help", help_uri))
        for mount in self.present():
            entry = mount.collections().__next__()
            children.append(
                Entry(
                    entry.uri,
                    entry.name,
                    entry.collection,
                    entry.mime_type,
                    title=mount.title,
                    extra={"what": mount.what},
                ).to_json()
            )
            links.append(Link("item", entry.uri, title=mount.title))
        body: dict[str, Any] = {"uri": str(self.root), "host": self.host}
        if help_uri is not None:
            body["help"] = help_uri
        body["children"] = children
        return Content(str(self.root), vnd("mounts"), body, links, kind="mounts")

    def _links(self, mount: Mount, req: Request) -> Content:
        facets: Facets = req.facets
        target = req.uri.with_params({name: None for name in _LINK_FILTERS})
        try:
            own = mount.links(Request(target, parse_facets(target)))
            all_links = order([*own, *self.links_into(target)])
        except Refusal as refusal:
            refusal.uri = req.text  # echo the URI the client sent, not the target's
            raise
        if facets.rel is not None or facets.minimum is not None:
            chosen = filtered(all_links, facets.rel, facets.minimum)
        else:
            chosen = all_links
        scope_uri = req.uri.with_params(cursor=None)
        scope = str(scope_uri)
        offset = cursors.redeem(facets.cursor, scope, req.text) if facets.cursor is not None else 0
        page = chosen[offset : offset + PAGE_SIZE]
        body: dict[str, object] = {
            "uri": scope,
            "target": str(target),
            "total": len(chosen),
            "links": [link.to_json() for link in page],
        }
        if facets.rel is not None:
            body["rel"] = facets.rel
        if facets.minimum is not None:
            body["min"] = facets.minimum
        if offset + PAGE_SIZE < len(chosen):
            token = cursors.issue(scope, offset + PAGE_SIZE)
            body["nextCursor"] = token
            body["next"] = str(scope_uri.with_params(cursor=token))
        own = [Link("alternate", str(target), title="the thing these links belong to")]
        # A part in the URI names the target (a record part has links of its own); the
        # links body is not cut again.
        return Content(scope, vnd("links"), body, own, kind="links", part_applied=True)

    # ---- the map, templates, completion ------------------------------------------------------

    def resource_map(self, cursor: str | None) -> MapPage:
        """The ``resources/list`` map: the root, the help document, mounts and collections.

        The help document is the map's one leaf; every other leaf is found by listing.
        """
        scope = f"tm-map:{self.host}"
        offset = cursors.redeem(cursor, scope) if cursor is not None else 0
        entries: list[Entry] = []
        for index, entry in enumerate(self._map_entries()):
            if index < offset:
                continue
            if len(entries) == MAP_PAGE_SIZE:
                return MapPage(entries, cursors.issue(scope, offset + MAP_PAGE_SIZE))
            entries.append(entry)
        return MapPage(entries, None)

    def _map_entries(self) -> Iterator[Entry]:
        yield Entry(
            str(self.root),
            self.host,
            True,
            vnd("mounts"),
            title=f"The box {self.host}",
            emphasis=EMPHASIS["root"],
        )
        help_entry = self._help_entry()
        if help_entry is not None:
            yield help_entry
        for mount in self.present():
            yield from mount.collections()

    def _help_entry(self) -> Entry | None:
        """The document to read first, the map's one leaf: typed, sized and dated by its stat.

        None when its mount does not serve it.
        """
        name, *path = HELP_PATH
        mount = self.mounts.get(name)
        if mount is None:
            return None
        uri = TmUri(self.host, name, tuple(path)).with_params({"as": "stat"})
        try:
            stat = mount.resolve(Request(uri, parse_facets(uri))).body
        except Refusal:
            return None
        if not isinstance(stat, dict):
            return None
        modified = stat.get("modified")
        return Entry(
            str(TmUri(self.host, name, tuple(path))),
            "/".join(HELP_PATH),
            False,
            stat["mimeType"],
            stat.get("size"),
            title="How to use this server: the document to read first",
            modified=datetime.fromisoformat(modified) if modified else None,
            emphasis=EMPHASIS["help"],
        )

    def templates(self) -> list[Template]:
        """Every published template: the hosts, the root, then each mount's, in mount order."""
        host_template = Template(
            "hosts",
            "tm://",
            "The hosts",
            "The hosts this server answers: one.",
            (),
            vnd("hosts"),
        )
        root_template = Template(
            "root",
            str(self.root),
            "The mounts",
            "Start here. Reading it lists the mounts; any URI ending in / lists its children "
            "with a cursor; every read carries typed links in _meta; a failed read names the "
            "nearest URIs that resolve.",
            (),
            vnd("mounts"),
        )
        out = [host_template, root_template]
        for mount in self.mounts.values():
            out.extend(mount.templates())
        return out

    def complete(
        self, template: str, argument: str, value: str, context: Mapping[str, str]
    ) -> list[str]:
        """Live values for one argument of one published template.

        Raises:
            BadArgument: unknown template or argument.
        """
        for mount in self.mounts.values():
            for candidate in mount.templates():
                if candidate.uri_template == template:
                    if argument not in candidate.arguments:
                        raise BadArgument(
                            template,
                            f"the template has no argument {argument!r}",
                            valid=list(candidate.arguments),
                        )
                    return mount.complete(argument, value, context)
        known = [t.uri_template for t in self.templates()]
        raise BadArgument(template, "no template with that uriTemplate", valid=known)


# ---- the reads kept (the memo of Namespace.read) --------------------------------------
#
# Plain reads given again while what they show is unchanged, whatever surface asked.
#
# ``Namespace.read`` keeps the read of a plain address (``tm://<host>/<mount>/<path>``, no query,
# no trailing ``/``) of a mount that vouches for its reads (``Mount.stamp``) and gives it again
# while its stamp, taken before the read (``Namespace.stamp``: the mount's, and each mount's
# ``links_stamp``: a link approved, a trail saved or corrected), is the same. The rest of the
# links other mounts give it (``Namespace.links_into``) are compared again once
# ``LINKS_RECHECK_SECONDS`` old: a trail file, an import manifest or a page edited on disk
# reaches a kept read up to a second later, as a commit reaches a built one (the git mount
# trusts a ref as long).
#
# A surface keeps the answers it made of a kept read beside it (``Kept.answers``: the MCP
# endpoint's serialised answer per protocol version); they go with it. A namespace keeps at most
# ``MAX_ENTRIES`` reads and ``MAX_BYTES`` of their bodies and answers, the oldest kept forgotten
# first (one read is under ``READ_CAP``, 256 KiB).

#: The most reads one namespace keeps (its memo, below).
MAX_ENTRIES = 1024
#: The most bytes of kept bodies and the answers made of them, per namespace.
MAX_BYTES = 32 * 1024 * 1024
#: Seconds the links of a kept read are trusted before they are compared again.
LINKS_RECHECK_SECONDS = 1.0
#: The longest address kept.
MAX_ADDRESS = 1024


class Kept:
    """One kept read: its stamp, the links others gave it, the read, and the answers made of it.

    Compared by identity: a new read of the same address is a new ``Kept``.
    """

    __slots__ = ("answers", "checked", "content", "links", "size", "stamp")

    def __init__(self, stamp: Hashable, links: tuple[Link, ...], content: Content) -> None:
        self.stamp, self.links, self.checked = stamp, links, time.monotonic()
        self.content = replace(content, links=list(content.links))
        self.size = wire_size(content)  # the bytes held: the body's, then each answer's too
        self.answers: dict[Hashable, Any] = {}

    def given(self) -> Content:
        """The kept read as a read returns it (its own list of links, which callers may extend)."""
        return replace(self.content, links=list(self.content.links))


def plain(text: str, host: str, stamped: frozenset[str]) -> TmUri | None:
    """``text`` parsed, when it is a plain address of ``host`` in a ``stamped`` mount."""
    prefix = f"tm://{host}/"
    if not text.startswith(prefix) or text.endswith("/") or "?" in text or "#" in text:
        return None
    mount, slash, _ = text[len(prefix) :].partition("/")
    if not slash or mount not in stamped or len(text) > MAX_ADDRESS:
        return None
    return _parsed(text)


@lru_cache(maxsize=MAX_ENTRIES)
def _parsed(text: str) -> TmUri | None:
    try:
        uri = parse(text)
    except Refusal:
        return None
    return None if uri.mount is None or uri.params or uri.collection else uri


class ReadMemo:
    """The kept reads of one namespace, by address as asked."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, Kept] = OrderedDict()
        self._bytes = 0

    def get(
        self, text: str, stamp: Hashable | None, links: Callable[[], tuple[Link, ...]] | None
    ) -> Kept | None:
        """The read kept for ``text`` while ``stamp`` is its stamp and its links are as they were.

        ``links`` gives the links others give the thing now; None: the links are not to be
        compared now (the caller may not wait), and a read whose links are due is None.
        """
        kept = self._entries.get(text) if stamp is not None else None
        if kept is None or kept.stamp != stamp:
            return None
        if time.monotonic() - kept.checked < LINKS_RECHECK_SECONDS:
            return kept
        if links is None or links() != kept.links:
            return None
        kept.checked = time.monotonic()
        return kept

    def put(self, text: str, kept: Kept) -> None:
        """Keep ``kept`` for ``text``, in place of what was."""
        with self._lock:
            old = self._entries.pop(text, None)
            self._entries[text] = kept
            self._trim(kept.size - (0 if old is None else old.size))

    def answered(self, text: str, kept: Kept, key: Hashable, answer: Any, size: int) -> None:
        """Keep ``answer`` (``size`` bytes), made of ``kept``, beside it while it is kept."""
        with self._lock:
            if self._entries.get(text) is kept and key not in kept.answers:
                kept.answers[key] = answer
                kept.size += size
                self._trim(size)

    def _trim(self, added: int) -> None:
        self._bytes += added
        while len(self._entries) > MAX_ENTRIES or self._bytes > MAX_BYTES:
            self._bytes -= self._entries.popitem(last=False)[1].size
