"""The ``mcp`` mount: the MCP servers the box reads, what they declared, and their index maps.

Grammar (``tm://<host>/mcp/…``)::

    mcp/                               the servers (records in tmsite.servers)
    mcp/<server>/                      the record: what it is, when it was last asked and what
                                       happened, what it declared; lists prompts/ resources/
                                       tools/ (once it has declared) and map
    mcp/<server>/tools/<name>          the tool as the server described it
                                       (application/vnd.tm.tool+json; ?pointer=/inputSchema)
    mcp/<server>/prompts/<name>        a prompt as described (vnd.tm.prompt)
    mcp/<server>/resources/<uri>       a resource, named by its upstream URI: the server's
                                       resources/read answer (text or bytes, typed with its
                                       mimeType, provenance in _meta); ?as=declaration is the
                                       resource as described (vnd.tm.resource). A URI a declared
                                       template yields reads the same way; the template itself
                                       reads as described (vnd.tm.resource-template)
    mcp/<server>/map                   the index map, each entry with its confidence
                                       (application/vnd.tm.map+json)
    mcp/<server>/<map path>            a path the map names, e.g. mcp/elements/element/Fe: runs
                                       the entry's tool; the answer is the thing
                                       (application/vnd.tm.<kind>+json)

Everything but a map-named read and a resource's content comes from the stored declaration:
reading the namespace never starts a peer, except for those two (and completing a map path's
argument when the server offers completion). Upstream names and URIs are data: they are path
segments percent-encoded by :mod:`tmsite.core.uri`, never dereferenced; upstream text was
capped when stored. A server that has never answered has no ``tools/`` (and the others): asking
for them is refused ``gated`` or ``unreachable`` as its record says. Map-named reads: see
:mod:`tmsite.mounts.mcp.map`; resource reads: :mod:`tmsite.mounts.mcp.resources`. Tools the map
does not name are never run.

Spec: MCP.
"""

from __future__ import annotations

import builtins
import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from django.db import DatabaseError
from django.db.models import Max
from typing_extensions import override

from tmsite.core.errors import BadFacet, Gated, NotFound, Refusal, Unreachable
from tmsite.core.links import CONFIDENCES, Confidence, Link
from tmsite.core.parts import dumps
from tmsite.core.types import (
    Content,
    Document,
    Entry,
    JsonValue,
    Listing,
    Request,
    Stat,
    Template,
    vnd,
)
from tmsite.mcpclient import Client, PeerError, ResourceContent
from tmsite.mounts.base import ChangeSource, Mount, Watching, unknown_argument, whole_stat
from tmsite.mounts.mcp import errors as mcp_errors
from tmsite.mounts.mcp import map as mcp_map
from tmsite.mounts.mcp import resources as mcp_resources
from tmsite.mounts.mcp import watch
from tmsite.search.passages import digest, words
from tmsite.servers import grammar, pool, programs
from tmsite.servers.connect import token_for
from tmsite.servers.models import MapEntry, McpServer, ServerDeclaration
from tmsite.servers.notices import PeerNotices

#: The record's collections: segment → (declaration field, key naming an item, kind).
SECTIONS: dict[str, tuple[str, str, str]] = {
    "prompts": ("prompts", "name", "prompt"),
    "resources": ("resources", "uri", "resource"),
    "tools": ("tools", "name", "tool"),
}
_ITEM_PARAMS = ("as", "pointer", "lines", "range")
_RESOURCE_FACETS = ("declaration", "links", "raw", "stat")
_MAX_DETAIL = 1000


class McpMount(Mount):
    """``mcp/``: the server records, their stored declarations and maps, and map-named reads."""

    name = "mcp"
    title = "Other MCP servers"
    what = (
        "The MCP servers this box reads: each record says what it is and whether it answered "
        "when last asked; its tools, resources and prompts as declared; its index map; and the "
        "things the map names, read through their tools."
    )

    # ---- records ----------------------------------------------------------------------------

    def _server(self, req: Request, name: str) -> McpServer:
        record = None
        if grammar.SERVER_NAME.fullmatch(name):
            record = McpServer.objects.filter(name=name).first()
        if record is None:
            raise NotFound(req.text, f"no MCP server named {name[:60]!r}")
        return record

    def _declaration(self, req: Request, record: McpServer) -> ServerDeclaration:
        declared = _kept(record).declared
        if declared is not None:
            return declared
        raise self._never_answered(req, record)

    def _never_answered(self, req: Request, record: McpServer) -> Refusal:
        asked = record.last_asked_at.isoformat() if record.last_asked_at else None
        gate = _gate(record)
        if gate is not None:
            failed, check, detail = gate
            return Gated(req.text, detail, failed=failed, check=check, lastAsked=asked)
        if record.last_outcome == "gated":
            return Gated(
                req.text,
                f"the MCP server {record.name} wants a credential this box does not hold; it "
                "has declared nothing yet",
                tokenSetting=record.token_setting or None,
                lastAsked=asked,
            )
        return Unreachable(
            req.text,
            f"the MCP server {record.name} has not answered"
            + (" when last asked" if asked else ": it has never been asked")
            + "; nothing is declared yet",
            failed=record.last_failure or ("not-asked" if asked is None else "unknown"),
            lastAsked=asked,
        )

    def _record_body(self, record: McpServer, declared: ServerDeclaration | None) -> JsonValue:
        where: dict[str, JsonValue] = {"transport": record.transport}
        if record.transport == "http":
            parts = urlsplit(record.url)
            where["url"] = f"{parts.scheme}://{parts.netloc}{parts.path}"
        else:
            where["program"] = record.program
        body: dict[str, JsonValue] = {
            "name": record.name,
            "description": record.description,
            **where,
            "needsToken": bool(record.token_setting),
            "sources": list(record.sources),
            "licenceBasis": record.licence_basis,
            "lastAsked": record.last_asked_at.isoformat() if record.last_asked_at else None,
            "answered": (record.last_outcome == "answered") if record.last_outcome else None,
            "outcome": record.last_outcome or "never-asked",
            "failure": record.last_failure or None,
            "detail": record.last_detail[:_MAX_DETAIL] or None,
            "lastAnswered": (
                record.last_answered_at.isoformat() if record.last_answered_at else None
            ),
            "declared": None,
        }
        gate = _gate(record)
        if gate is not None:  # the operator's configuration refuses it now, whatever happened
            body.update(outcome="gated", answered=False, failure=gate[0], detail=gate[2])
            body["check"] = gate[1]
        if declared is not None:
            body["declared"] = {
                "at": declared.asked_at.isoformat(),
                "seconds": declared.seconds,
                "protocolVersion": declared.protocol_version,
                "era": declared.era,
                "capabilities": declared.capabilities,
                "serverInfo": declared.server_info,
                "instructions": declared.instructions or None,
                "counts": {
                    "tools": len(declared.tools),
                    "resources": len(declared.resources),
                    "resourceTemplates": len(declared.resource_templates),
                    "prompts": len(declared.prompts),
                },
                "listingErrors": declared.listing_errors,
                "dropped": declared.dropped,
            }
        return body

    def _items(self, declared: ServerDeclaration, section: str) -> builtins.list[tuple[str, Any]]:
        """(segment, item) pairs of one section, in declared order (resources: templates last)."""
        field, key, _ = SECTIONS[section]
        items = [(str(i[key]), i) for i in getattr(declared, field) if isinstance(i, dict)]
        if section == "resources":
            items += [
                (str(t["uriTemplate"]), t)
                for t in declared.resource_templates
                if isinstance(t, dict)
            ]
        return items

    def _item_entry(
        self,
        record: McpServer,
        section: str,
        segment: str,
        item: Mapping[str, Any],
        declared: ServerDeclaration,
    ) -> Entry:
        """One child of a section: a declared item, or (resources) what reading it answers."""
        kind = self._item_kind(section, item)
        mime: str | None = vnd(kind)
        size: int | None = _size(item)
        if kind == "resource":  # reads as the server's content: its declared type and size
            mime = mcp_resources.declared_type(item)
            size = mcp_resources.declared_size(item)
        return Entry(
            str(self.uri(record.name, section, segment)),
            segment,
            False,
            mime,
            size,
            title=_title(item),
            modified=declared.asked_at,
        )

    def _item_kind(self, section: str, item: Mapping[str, Any]) -> str:
        if section == "resources" and "uriTemplate" in item:
            return "resource-template"
        return SECTIONS[section][2]

    # ---- the contract -----------------------------------------------------------------------

    @override
    def list(self, req: Request) -> Listing:
        path = req.uri.path
        if not path:
            declared_at = _declared_at()
            return Listing(
                [
                    Entry(
                        str(self.uri(s.name, collection=True)),
                        f"{s.name}/",
                        True,
                        vnd("server"),
                        title=(s.description.splitlines() or [s.name])[0][:200],
                        modified=declared_at.get(s.pk),
                    )
                    for s in McpServer.objects.all()
                ]
            )
        record = self._server(req, path[0])
        if len(path) == 1:
            declared = record.latest_declaration()
            children = []
            if declared is not None:
                for section in SECTIONS:
                    children.append(
                        Entry(
                            str(self.uri(record.name, section, collection=True)),
                            f"{section}/",
                            True,
                            vnd("listing"),
                            modified=declared.asked_at,
                        )
                    )
            children.append(
                Entry(
                    str(self.uri(record.name, "map")), "map", False, vnd("map"), title="index map"
                )
            )
            links = [Link("describedby", str(self.uri(record.name, "map")), title="index map")]
            return Listing(
                children, {"server": self._record_body(record, declared)}, links, kind="server"
            )
        if len(path) == 2 and path[1] in SECTIONS:
            declared = self._declaration(req, record)
            section = path[1]
            return Listing(
                [
                    self._item_entry(record, section, segment, item, declared)
                    for segment, item in self._items(declared, section)
                ],
                {"server": record.name, "declaredAt": declared.asked_at.isoformat()},
                [Link("collection", str(self.uri(record.name, collection=True)))],
            )
        leaf = req.uri.identity.as_leaf()
        if (len(path) == 2 and path[1] == "map") or mcp_map.match(_kept(record).entries, path[1:]):
            raise NotFound(req.text, "that is a thing, not a collection", nearest=[str(leaf)])
        raise NotFound(req.text, "no such collection")

    @override
    def read(self, req: Request) -> Content:
        uri = req.uri
        if uri.collection or not uri.path:
            req.facets.require_facet(req.text, ("links",), "a collection")
            raise BadFacet(req.text, "a collection reads as its listing", valid=["links"])
        path = uri.path
        record = self._server(req, path[0])
        if len(path) == 1 or (len(path) == 2 and path[1] in SECTIONS):
            raise self.leaf_as_collection(uri)
        if path[1] in SECTIONS:
            if len(path) > 3:
                raise NotFound(req.text, f"a declared {path[1][:-1]} has nothing under it")
            if path[1] == "resources":
                return self._read_resource(req, record, path[2])
            return self._read_item(req, record, path[1], path[2])
        if len(path) == 2 and path[1] == "map":
            return self._read_map(req, record)
        return self._read_thing(req, record)

    @override
    def change_sources(self, watching: Watching) -> builtins.list[ChangeSource]:
        records = watching.stamped(self.name, watch.stamp, watch.SENDERS, accept=watch.described)
        notices = PeerNotices(watching.host, watching.publish)
        return [records, ChangeSource(f"{self.name}-notices", notices, notices.interest)]

    @override
    def documents_stamp(self) -> Hashable:
        return watch.stamp()

    @override
    def documents(self) -> Iterator[Document]:
        """The tools, resources, templates and prompts of each server that answers, as declared.

        Only a server whose last probe answered and that the operator's configuration lets the
        box ask now: a gated or unreachable server offers nothing, whatever it declared before.
        An item is offered by the address that reads its declaration (a resource's
        ``?as=declaration``: reading its content would ask the server), with the words of that
        declaration, stamped by their digest. The peer is never started.
        """
        answered = McpServer.objects.filter(last_outcome="answered").order_by("name")
        for record in answered:
            declared = _kept(record).declared
            if declared is None or _gate(record) is not None:
                continue
            for section in SECTIONS:
                for segment, item in self._items(declared, section):
                    kind = self._item_kind(section, item)
                    me = self.uri(record.name, section, segment)
                    if kind == "resource":
                        me = me.with_params({"as": "declaration"})
                    text = "\n".join(words(item)) + "\n"
                    yield Document(
                        str(me),
                        f"{record.name}: {_title(item) or segment}"[:200],
                        kind,
                        digest(text),
                        vnd(kind),
                        partial(str, text),
                    )

    @override
    def links(self, req: Request) -> builtins.list[Link]:
        path = req.uri.path
        if len(path) == 3 and path[1] == "resources" and not req.uri.collection:
            record = self._server(req, path[0])
            _, found = self._find_resource(req, record, path[2])
            if found.template != path[2]:  # a resource's links, the server not asked
                return self._resource_links(record, path[2], found)
        return super().links(req)

    # ---- declared items and the map -----------------------------------------------------

    def _read_item(
        self, req: Request, record: McpServer, section: str, name: str, checked: bool = False
    ) -> Content:
        req.facets.require(req.text, _ITEM_PARAMS, f"a declared {section[:-1]}")
        if not checked:  # else the caller has checked ``as`` (a template's ?as=declaration)
            req.facets.require_facet(req.text, ("links", "stat"), f"a declared {section[:-1]}")
        declared = self._declaration(req, record)
        item = dict(self._items(declared, section)).get(name)
        if item is None:
            raise NotFound(req.text, f"{record.name} declared no {section[:-1]} {name[:80]!r}")
        kind = self._item_kind(section, item)
        me = self.uri(record.name, section, name)
        links = self.leaf_links(req.uri, me)
        if req.facets.facet == "stat":
            whole_stat(req)
            stat = Stat(
                str(me),
                name,
                vnd(kind),
                size=_size(item),
                extra={"server": record.name, "declaredAt": declared.asked_at.isoformat()},
            )
            return stat.content(req.text, [*links, Link("alternate", str(me))])
        return Content(req.text, vnd(kind), item, links, kind=kind)

    # ---- another server's resources ----------------------------------------------------

    def _find_resource(
        self, req: Request, record: McpServer, upstream: str
    ) -> tuple[ServerDeclaration, mcp_resources.Found]:
        """The declaration ``upstream`` comes from, or the refusal (the server never asked)."""
        mcp_resources.check_uri(req.text, upstream)
        declared = self._declaration(req, record)
        found = mcp_resources.find(
            req.text,
            upstream,
            [r for r in declared.resources if isinstance(r, dict)],
            [t for t in declared.resource_templates if isinstance(t, dict)],
        )
        if found is None:
            raise NotFound(
                req.text,
                f"{record.name} declared no resource {upstream[:80]!r} and no template that "
                "yields it; the server was not asked",
                nearest=[str(self.uri(record.name, "resources", collection=True))],
            )
        return declared, found

    def _resource_links(
        self, record: McpServer, upstream: str, found: mcp_resources.Found
    ) -> builtins.list[Link]:
        """A resource's links: its collection, the declaration it comes from, its stat."""
        me = self.uri(record.name, "resources", upstream)
        parent = str(self.uri(record.name, "resources", collection=True))
        if found.template is None:
            declaration = str(me.with_params({"as": "declaration"}))
            title = "the resource as its server declared it"
        else:
            declaration = str(self.uri(record.name, "resources", found.template))
            title = f"the template {found.template[:120]} it comes from"
        return [
            Link("up", parent),
            Link("collection", parent),
            Link("describedby", declaration, title=title, type=vnd(found.kind)),
            Link("describedby", str(me.with_params({"as": "stat"})), type=vnd("stat")),
        ]

    def _read_resource(self, req: Request, record: McpServer, upstream: str) -> Content:
        req.facets.require(req.text, _ITEM_PARAMS, "a resource")
        req.facets.require_facet(req.text, _RESOURCE_FACETS, "a resource")
        declared, found = self._find_resource(req, record, upstream)
        facet = req.facets.facet
        if found.template == upstream:  # the template itself: only its declaration is read
            if facet == "raw":
                raise BadFacet(
                    req.text,
                    "a resource template has no content; read a URI it yields",
                    valid=["declaration", "stat"],
                )
            return self._read_item(req, record, "resources", upstream, facet == "declaration")
        links = self._resource_links(record, upstream, found)
        me = self.uri(record.name, "resources", upstream)
        if facet == "declaration":
            if req.facets.part is not None and req.facets.part != "pointer":
                raise BadFacet(req.text, "a declaration reads whole or by pointer", valid=[])
            return Content(
                req.text,
                vnd(found.kind),
                dict(found.item),
                [*links, Link("alternate", str(me), title="the resource's content")],
                kind=found.kind,
            )
        if facet == "stat":
            whole_stat(req)
            mime = mcp_resources.declared_type(found.item)
            extra: dict[str, JsonValue] = {
                "server": record.name,
                "upstreamUri": upstream,
                "declaredAt": declared.asked_at.isoformat(),
            }
            if found.template is not None:
                extra["template"] = found.template
            stat = Stat(
                str(me),
                upstream,
                mime or "application/octet-stream",
                size=mcp_resources.declared_size(found.item) if found.template is None else None,
                text=mcp_resources.is_text(mime),
                extra=extra,
            )
            return stat.content(req.text, [*links[:3], Link("alternate", str(me))])
        return self._read_content(req, record, upstream, found, links)

    def _read_content(
        self,
        req: Request,
        record: McpServer,
        upstream: str,
        found: mcp_resources.Found,
        links: builtins.list[Link],
    ) -> Content:
        """What the server's ``resources/read`` answers for ``upstream``."""
        _ready(req, record)
        declaration = links[2].href

        def read(client: Client) -> builtins.list[ResourceContent]:
            return client.read_contents(upstream)

        with mcp_errors.translated(req.text, record):
            try:
                contents = pool.run(record, read)
            except PeerError as exc:
                if exc.code not in mcp_resources.NOT_FOUND_CODES:
                    raise
                raise NotFound(
                    req.text,
                    f"the MCP server {record.name} has no such resource (its words are in "
                    "peerError)",
                    nearest=[declaration],
                    peerError=exc.message[:_MAX_DETAIL],
                    code=exc.code,
                ) from None
        item = mcp_resources.chosen(upstream, contents)
        if item is None:
            raise NotFound(
                req.text,
                f"the MCP server {record.name} answered no contents for this resource",
                nearest=[declaration],
            )
        body, mime = mcp_resources.body_and_type(item, found.item)
        prov = mcp_resources.provenance(
            server=record.name,
            server_uri=str(self.uri(record.name, collection=True)),
            upstream=upstream,
            found=found,
            declaration_uri=declaration,
            item=item,
            count=len(contents),
            sources=record.sources,
            licence_basis=record.licence_basis,
        )
        upstream_meta = mcp_resources.upstream_meta(item)
        if upstream_meta is not None:
            prov["upstreamMeta"] = upstream_meta
        return Content(
            req.text, mime, body, links, kind="peer-resource", meta={mcp_map.PROVENANCE: prov}
        )

    def _read_map(self, req: Request, record: McpServer) -> Content:
        req.facets.require(req.text, _ITEM_PARAMS, "a map")
        req.facets.require_facet(req.text, ("links", "stat"), "a map")
        me = self.uri(record.name, "map")
        server_uri = str(self.uri(record.name, collection=True))
        links = self.leaf_links(req.uri, me)
        entries = _kept(record).entries
        if req.facets.facet == "stat":
            whole_stat(req)
            stat = Stat(
                str(me),
                "map",
                vnd("map"),
                extra={"entries": len(entries), "server": record.name},
            )
            return stat.content(req.text, [*links, Link("alternate", str(me))])
        body_entries: builtins.list[JsonValue] = []
        for entry in entries:
            tool_uri = str(self.uri(record.name, "tools", entry.tool))
            body_entries.append(
                {
                    "path": entry.path_template,
                    "uriTemplate": f"{server_uri}{entry.path_template}",
                    "tool": entry.tool,
                    "toolUri": tool_uri,
                    "arguments": entry.arguments,
                    "kind": entry.kind,
                    "mimeType": vnd(entry.kind),
                    "confidence": entry.confidence,
                    "origin": entry.origin,
                    "corrected": entry.touched,
                    "notes": entry.notes or None,
                    "derivedBecause": entry.derived_reason or None,
                    "updatedAt": entry.updated_at.isoformat(),
                }
            )
            links.append(
                Link(
                    "tm:read-with",
                    tool_uri,
                    _confidence(entry.confidence),
                    title=f"{entry.path_template} runs {entry.tool}",
                )
            )
        body: dict[str, JsonValue] = {
            "uri": str(me),
            "server": record.name,
            "entries": body_entries,
            "note": "Only the tools named here are ever run. Derived entries are inferred or "
            "low; an entry a maintainer confirmed is exact.",
        }
        return Content(req.text, vnd("map"), body, links, kind="map")

    # ---- map-named reads ----------------------------------------------------------------

    def _thing_uri(self, record: McpServer, entry: MapEntry, bindings: dict[str, str]) -> str:
        segments = [
            bindings.get(s.variable, "") if s.variable else s.text
            for s in grammar.parse_template(entry.path_template)
        ]
        return str(self.uri(record.name, *segments))

    def _read_thing(self, req: Request, record: McpServer) -> Content:
        entries = _kept(record).entries
        found = mcp_map.match(entries, req.uri.path[1:])
        if found is None:
            raise NotFound(
                req.text, f"neither a declared item nor a path {record.name}'s map names"
            )
        req.facets.require(req.text, _ITEM_PARAMS, "a map-named thing")
        req.facets.require_facet(req.text, ("links",), "a map-named thing")
        entry = found.entry
        map_uri = str(self.uri(record.name, "map"))
        server_uri = str(self.uri(record.name, collection=True))
        tool_uri = str(self.uri(record.name, "tools", entry.tool))
        _ready(req, record)
        declared = self._declaration(req, record)
        tool = declared.tool(entry.tool)
        if tool is None:
            raise NotFound(
                req.text,
                f"the map names the tool {entry.tool!r}, which {record.name} does not declare",
                nearest=[map_uri],
            )
        args = mcp_map.arguments(req.text, found, tool)
        refused: builtins.list[str] = []

        def call(client: Client) -> Any:
            before = len(client.refused_requests)
            result = client.call_tool(entry.tool, args)
            refused.extend(client.refused_requests[before:])
            return result

        with mcp_errors.translated(req.text, record):
            result = pool.run(record, call)
        if result.is_error:
            raise mcp_map.tool_error(req.text, result, [map_uri])
        prov = mcp_map.provenance(record, entry, args, server_uri, tool_uri)
        if refused:
            prov["refusedRequests"] = refused
        body = mcp_map.body_of(result, prov)
        me = str(req.uri.identity)
        confidence = _confidence(entry.confidence)
        links = [
            Link("up", server_uri),
            Link("collection", server_uri),
            Link("describedby", map_uri, title="the index map that names this path"),
            Link("tm:read-with", tool_uri, confidence, title=f"read with {entry.tool}"),
        ]
        field_confidence: Confidence = "low" if confidence == "low" else "inferred"
        for other, href in mcp_map.field_targets(
            entries, body, lambda e, b: self._thing_uri(record, e, b)
        ):
            if href != me:
                links.append(
                    Link("tm:read-with", href, field_confidence, title=f"a {other.kind} it names")
                )
        return Content(req.text, vnd(entry.kind), body, links, kind=entry.kind)

    # ---- completion, templates, the map of collections ------------------------------------

    @override
    def complete(self, argument: str, value: str, context: Mapping[str, str]) -> builtins.list[str]:
        if argument == "server":
            names = McpServer.objects.filter(name__startswith=value).values_list("name", flat=True)
            return [str(n) for n in names[:100]]
        if argument not in ("tool", "path", "uri"):
            raise unknown_argument(argument, ["server", "tool", "path", "uri"])
        record = McpServer.objects.filter(name=context.get("server", "")).first()
        if record is None:
            return []
        if argument in ("tool", "uri"):
            declared = record.latest_declaration()
            if declared is None:
                return []
            section = "tools" if argument == "tool" else "resources"
            return [n for n, _ in self._items(declared, section) if n.startswith(value)][:100]
        return self._complete_path(record, value)

    def _complete_path(self, record: McpServer, value: str) -> builtins.list[str]:
        parts = value.split("/")
        out: builtins.list[str] = []
        for entry in _kept(record).entries:
            try:
                segments = grammar.parse_template(entry.path_template)
            except grammar.GrammarError:
                continue
            if len(parts) > len(segments):
                continue
            bindings: dict[str, str] = {}
            if any(
                (s.variable is None and s.text != p)
                or (s.variable is not None and bindings.setdefault(s.variable, p) is None)
                for s, p in zip(segments, parts[:-1], strict=False)
            ):
                continue
            here = segments[len(parts) - 1]
            prefix = "".join(p + "/" for p in parts[:-1])
            tail = "/" if len(parts) < len(segments) else ""
            if here.variable is None:
                if here.text.startswith(parts[-1]):
                    out.append(f"{prefix}{here.text}{tail}")
                continue
            for found in self._ask_completion(record, entry, here.variable, parts[-1], bindings):
                out.append(f"{prefix}{found}{tail}")
        return builtins.list(dict.fromkeys(out))[:100]

    def _ask_completion(
        self, record: McpServer, entry: MapEntry, variable: str, value: str, bound: dict[str, str]
    ) -> builtins.list[str]:
        """Values the server itself completes for ``variable``, when it offers completion."""
        declared = record.latest_declaration()
        if declared is None or "completions" not in declared.capabilities:
            return []
        names = [k for k, v in entry.arguments.items() if grammar.reference(v) == variable]
        argument = names[0] if names else variable
        ref: dict[str, str] | None = None
        for template in declared.resource_templates:
            text = template.get("uriTemplate") if isinstance(template, dict) else None
            if isinstance(text, str) and "{" + argument + "}" in text:
                ref = {"type": "ref/resource", "uri": text}
                break
        if ref is None:
            for prompt in declared.prompts:
                declared_args = prompt.get("arguments") if isinstance(prompt, dict) else None
                if isinstance(declared_args, builtins.list) and any(
                    isinstance(a, dict) and a.get("name") == argument for a in declared_args
                ):
                    ref = {"type": "ref/prompt", "name": str(prompt.get("name"))}
                    break
        if ref is None:
            return []
        asked = ref
        try:
            completion = pool.run(
                record, lambda c: c.complete(asked, {"name": argument, "value": value})
            )
        except mcp_errors.FOREIGN:
            return []
        return [
            v
            for v in completion.values
            if 0 < len(v) <= 256 and "/" not in v and not mcp_map._CONTROL.search(v)
        ]

    @override
    def templates(self) -> builtins.list[Template]:
        base = f"tm://{self.host}/mcp"
        return [
            Template(
                "mcp-server",
                f"{base}/{{server}}/",
                "An MCP server the box reads",
                "Its record: what it is, whether it answered when last asked and when, what it "
                "declared (capabilities, serverInfo, instructions). Lists tools/, resources/, "
                "prompts/ (once it has answered) and map. mcp/ lists the servers.",
                ("server",),
                vnd("server"),
            ),
            Template(
                "mcp-tool",
                f"{base}/{{server}}/tools/{{tool}}",
                "A tool as its server described it",
                "The declaration, never run from here; ?pointer=/inputSchema reads its schema. "
                "Tools run only through paths the server's map names.",
                ("server", "tool"),
                vnd("tool"),
            ),
            Template(
                "mcp-resource",
                f"{base}/{{server}}/resources/{{uri}}",
                "A resource of a server the box reads",
                "The uri is the server's own, percent-encoded as one segment, and must be one it "
                "declared or one its declared templates yield (else not-found, the server not "
                "asked). The read is the server's resources/read answer, text or bytes typed "
                "with its mimeType, capped like every read; _meta carries the provenance; "
                "?as=declaration is the declaration it comes from. Traversal in a template's "
                "values, control characters and URIs past 2048 characters are bad-argument.",
                ("server", "uri"),
            ),
            Template(
                "mcp-map",
                f"{base}/{{server}}/map",
                "A server's index map",
                "Which paths name things and which tool reads each, with a confidence: derived "
                "entries are inferred or low, a maintainer-confirmed one is exact.",
                ("server",),
                vnd("map"),
            ),
            Template(
                "mcp-path",
                f"{base}/{{server}}/{{+path}}",
                "A thing a server's map names",
                "A path from the map (e.g. element/Fe) runs the entry's tool with the path's "
                "segments as arguments; the answer is typed by the entry's kind, links "
                "tm:read-with to the tool, and carries the server's sources and licence basis "
                "in _meta. A tool error is not-found; a server that needs a missing token is "
                "gated; one that does not answer is unreachable or timeout.",
                ("server", "path"),
            ),
        ]

    @override
    def collections(self, limit: int = 10_000) -> Iterator[Entry]:
        yield from super().collections(limit)
        try:
            servers = builtins.list(McpServer.objects.all()[:limit])
            declared_at = _declared_at()
        except DatabaseError:
            return
        for server in servers:
            when = declared_at.get(server.pk)
            yield Entry(
                str(self.uri(server.name, collection=True)),
                f"mcp/{server.name}/",
                True,
                vnd("server"),
                modified=when,
            )
            if when is not None:
                for section in SECTIONS:
                    yield Entry(
                        str(self.uri(server.name, section, collection=True)),
                        f"mcp/{server.name}/{section}/",
                        True,
                        vnd("listing"),
                        modified=when,
                    )


def _ready(req: Request, record: McpServer) -> None:
    """Refuse a read the peer cannot answer before it is asked: no token, a program not let run."""
    with mcp_errors.translated(req.text, record):
        token_for(record)
        if record.transport == "stdio":
            record.launch()


def _declared_at() -> dict[int, datetime]:
    """When each server's latest declaration was asked for, by server id (one query)."""
    rows = ServerDeclaration.objects.values("server_id").annotate(at=Max("asked_at"))
    return {row["server_id"]: row["at"] for row in rows}


def _size(item: JsonValue) -> int:
    """The bytes a declared item reads as: its compact JSON, as every JSON body is sent."""
    return len(dumps(item).encode())


def _confidence(value: str) -> Confidence:
    return next((c for c in CONFIDENCES if c == value), "low")


def _title(item: Mapping[str, Any]) -> str | None:
    for key in ("title", "name"):
        value = item.get(key)
        if isinstance(value, str) and value:
            return value[:200]
    return None


@dataclass(frozen=True, slots=True)
class _Kept:
    """A server's map entries and latest declaration as read at one ``map_version``."""

    version: tuple[int, Any]
    entries: builtins.list[MapEntry]
    declared: ServerDeclaration | None


#: Per process, by server id: the map and declaration last read. The record itself is read
#: on every request (one query); its ``map_version``, kept in the database and bumped by every
#: save or delete of an entry or a declaration, says whether what is kept here still holds, so
#: a maintainer's correction is seen by the next read in every worker.
_KEPT: OrderedDict[int, _Kept] = OrderedDict()
_KEPT_LOCK = threading.Lock()
_KEPT_SIZE = 256


def _kept(record: McpServer) -> _Kept:
    """The server's map entries (by template) and latest declaration, memoised.

    Read again only when the record's ``map_version`` moved on since they were kept.
    """
    with _KEPT_LOCK:
        kept = _KEPT.get(record.pk)
        if kept is not None and kept.version == _version(record):
            _KEPT.move_to_end(record.pk)
            return kept
    # Read after the record: what is read is at least as new as the version it is kept under.
    entries = list(MapEntry.objects.filter(server=record).order_by("path_template"))
    kept = _Kept(_version(record), entries, record.latest_declaration())
    with _KEPT_LOCK:
        _KEPT[record.pk] = kept
        while len(_KEPT) > _KEPT_SIZE:
            _KEPT.popitem(last=False)
    return kept


def _version(record: McpServer) -> tuple[int, Any]:
    """The stamp: ``map_version``, and when the record was made.

    A new record under a reused id starts again from version 0.
    """
    return (record.map_version, record.created_at)


def _gate(record: McpServer) -> tuple[str, str, str] | None:
    """(failed, check id, why) when the operator's configuration refuses the record now."""
    if record.transport == "stdio":
        try:
            record.launch()
        except programs.ProgramNotAllowed as exc:
            return "program-not-allowed", exc.check_id, str(exc)
        return None
    refusal = programs.url_refusal(record.url)
    if refusal is not None:
        return f"refused-{refusal.what}", programs.URL_REFUSED, str(refusal)
    return None
