"""The ``manifest``: the namespace's visual language as data, so every viewer draws alike.

``tm://<host>/manifest`` is the whole of it; ``manifest/`` lists its sections, each readable
alone (``manifest/relations``):

* ``mounts`` — a shape per mount (and its title and what it holds);
* ``relations`` — a colour family per link relation (IANA and ``tm:``, every relation
  :mod:`tmsite.core.links` knows), with its inverse; ``confidences`` — a line style each;
* ``kinds`` — the handles of each kind of thing: the facets it may offer and the blocks its
  assembler yields (from the assembler registry);
* ``blocks`` — the block vocabulary and its JSON Schema (``manifest?pointer=/blocks/schema``);
* ``renderers`` — per media type, the module that draws it and its SHA-256.

The explorer page reads this and nothing else to know how to draw.

Spec: MANIFEST.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Mapping
from typing import Any

from typing_extensions import override

from tmsite.blocks.registry import ASSEMBLERS
from tmsite.blocks.schema import SCHEMA
from tmsite.blocks.vocabulary import BLOCK_KINDS
from tmsite.core.errors import NotFound
from tmsite.core.links import CONFIDENCES, IANA_RELS, INVERSE, TM_RELS, Link
from tmsite.core.types import Content, Entry, Listing, Request, Stat, Template, vnd
from tmsite.core.uri import TmUri
from tmsite.mounts.base import Mount, require_no_part, unknown_argument
from tmsite.mounts.renderers.catalogue import catalogue

#: The shapes a viewer draws a mount's things with (a closed set).
SHAPES = (
    "circle",
    "cloud",
    "cylinder",
    "diamond",
    "document",
    "globe",
    "hexagon",
    "square",
    "star",
    "triangle",
)
#: mount → shape. A mount not named here is drawn as a circle.
MOUNT_SHAPES: dict[str, str] = {
    "entity": "hexagon",
    "fs": "document",
    "git": "cylinder",
    "http": "globe",
    "kinds": "circle",
    "manifest": "square",
    "mcp": "diamond",
    "offbox": "cloud",
    "renderers": "triangle",
    "trail": "star",
}

#: Colour families: a name, and a colour for light and for dark backgrounds.
FAMILIES: dict[str, dict[str, str]] = {
    "structure": {"light": "#5c6166", "dark": "#a0a6ad", "what": "where a thing sits"},
    "description": {"light": "#00796b", "dark": "#4db6ac", "what": "other views of it"},
    "versions": {"light": "#6a3fa0", "dark": "#c3a6ff", "what": "its history"},
    "provenance": {"light": "#b5451b", "dark": "#ff9f6e", "what": "what makes it, what it makes"},
    "data": {"light": "#0b5cad", "dark": "#7ab7ff", "what": "what it reads, who reads it"},
    "walk": {"light": "#2e7d32", "dark": "#81c784", "what": "trails and long link lists"},
    "knowledge": {"light": "#ad1457", "dark": "#f48fb1", "what": "what the records relate"},
}
_FAMILY_OF: dict[str, str] = {
    "up": "structure",
    "collection": "structure",
    "item": "structure",
    "next": "structure",
    "help": "structure",
    "alternate": "description",
    "describedby": "description",
    "version-history": "versions",
    "latest-version": "versions",
    "tm:source": "provenance",
    "tm:renders-as": "provenance",
    "tm:generated-by": "provenance",
    "tm:generates": "provenance",
    "tm:repository": "provenance",
    "tm:working-copy": "provenance",
    "tm:pins": "provenance",
    "tm:cartridge": "provenance",
    "tm:input": "provenance",
    "tm:input-of": "provenance",
    "tm:changed-by": "provenance",
    "tm:changes": "provenance",
    "tm:data": "data",
    "tm:read-by": "data",
    "tm:read-with": "data",
    "tm:step": "walk",
    "tm:step-of": "walk",
    "tm:links": "walk",
    "tm:found-in": "knowledge",
    "tm:exhibits": "knowledge",
    "tm:instance": "knowledge",
    "tm:instance-of": "knowledge",
    "tm:demonstrated-by": "knowledge",
    "tm:demonstrates": "knowledge",
    "tm:measures": "knowledge",
    "tm:measured-by": "knowledge",
}
_UNKNOWN = sorted((IANA_RELS | TM_RELS) - set(_FAMILY_OF))
assert not _UNKNOWN, f"relations without a colour family: {_UNKNOWN}"
LINE_STYLES: dict[str, str] = {"exact": "solid", "inferred": "dashed", "low": "dotted"}
assert tuple(LINE_STYLES) == CONFIDENCES

#: kind → the facets (``as`` values) a thing of that kind may offer. What one address offers
#: is in its blocks read (``facets``), asked of its mount.
KIND_FACETS: dict[str, tuple[str, ...]] = {
    "blame": ("raw", "stat", "log"),
    "file": ("raw", "stat", "log", "blame", "links", "blocks"),
    "game": ("stat", "set", "links", "blocks"),
    "hosts": ("blocks",),
    "kind": ("stat", "links", "blocks"),
    "lesson": ("stat", "set", "links", "blocks"),
    "links": ("blocks",),
    "listing": ("tree", "log", "stat", "links", "blocks"),
    "log": ("raw", "stat", "blame", "blocks"),
    "manifest": ("stat", "links", "blocks"),
    "map": ("stat", "links", "blocks"),
    "mounts": ("blocks",),
    "offbox": ("stat", "links", "blocks"),
    "page": ("text", "rendered", "stat", "links", "blocks"),
    "pattern": ("stat", "set", "links", "blocks"),
    "prompt": ("stat", "links", "blocks"),
    "renderer": ("stat", "links", "blocks"),
    "resource": ("stat", "links", "blocks"),
    "resource-template": ("stat", "links", "blocks"),
    "routine": ("stat", "set", "links", "blocks"),
    "server": ("stat", "links", "blocks"),
    "set": ("blocks",),
    "stat": ("raw", "links", "blocks"),
    "submodule": ("stat", "log", "links", "blocks"),
    "tool": ("stat", "links", "blocks"),
    "trail": ("stat", "links", "blocks"),
    "tree": ("log", "stat", "links", "blocks"),
}

SECTIONS = ("blocks", "kinds", "mounts", "relations", "renderers")


def relations() -> dict[str, dict[str, Any]]:
    """Every link relation by name: its colour family and colour, IANA or not, its inverse."""
    out: dict[str, dict[str, Any]] = {}
    for rel in sorted(IANA_RELS | TM_RELS):
        family = _FAMILY_OF[rel]
        entry: dict[str, Any] = {
            "family": family,
            "colour": FAMILIES[family],
            "iana": rel in IANA_RELS,
        }
        if rel in INVERSE:
            entry["inverse"] = INVERSE[rel]
        out[rel] = entry
    return out


def kind_handles() -> dict[str, dict[str, Any]]:
    """The handles of each kind: the facets it may offer, the blocks it yields, by whom.

    Keyed by kind, by media type, and by ``mount:<name>`` for the kinds a mount takes from
    data; a kind without an assembler of its own is drawn by the generic one.
    """
    out: dict[str, dict[str, Any]] = {}
    generic = ASSEMBLERS["kind:generic"].yields
    for kind in sorted(set(KIND_FACETS) | {k[5:] for k in ASSEMBLERS if k.startswith("kind:")}):
        assembler = ASSEMBLERS.get(f"kind:{kind}")
        out[kind] = {
            "facets": list(KIND_FACETS.get(kind, ("blocks",))),
            "blocks": list(assembler.yields if assembler is not None else generic),
            "assembler": assembler.module if assembler is not None else "generic",
        }
    for key, assembler in sorted(ASSEMBLERS.items()):
        if key.startswith("mount:"):
            # What a mount serves under kinds it declares as data (an MCP map's kinds).
            out[key] = {
                "facets": ["links", "blocks"],
                "blocks": list(assembler.yields),
                "assembler": assembler.module,
            }
        if key.startswith("type:"):
            out[key[5:]] = {
                "facets": [],
                "blocks": list(assembler.yields),
                "assembler": assembler.module,
            }
    return out


class ManifestMount(Mount):
    """The manifest, built on each read from the namespace it is served in."""

    name = "manifest"
    title = "The manifest"
    what = "The visual language as data: shapes, colours, handles, blocks and renderers."

    def mounts(self) -> dict[str, dict[str, Any]]:
        """Each served mount (and this one) by name: its shape, title and what it holds."""
        served = getattr(getattr(self, "namespace", None), "mounts", {})
        names = sorted(set(served) | {self.name})
        out = {}
        for name in names:
            mount = served.get(name)
            out[name] = {
                "shape": MOUNT_SHAPES.get(name, "circle"),
                "title": mount.title if mount is not None else self.title,
                "what": mount.what if mount is not None else self.what,
            }
        return out

    def document(self) -> dict[str, Any]:
        """The whole manifest, as ``tm://<host>/manifest`` reads."""
        return {
            "mounts": self.mounts(),
            "shapes": list(SHAPES),
            "relations": relations(),
            "families": FAMILIES,
            "confidences": LINE_STYLES,
            "kinds": kind_handles(),
            "blocks": {"vocabulary": list(BLOCK_KINDS), "schema": SCHEMA},
            "renderers": catalogue(self.host),
        }

    def section(self, name: str) -> Any:
        """One section of the manifest (one of ``SECTIONS``), with what it needs to be drawn.

        ``relations`` comes with the families and line styles, ``mounts`` with the shapes.
        """
        document = self.document()
        if name == "relations":
            return {
                "relations": document["relations"],
                "families": document["families"],
                "confidences": document["confidences"],
            }
        if name == "mounts":
            return {"mounts": document["mounts"], "shapes": document["shapes"]}
        return {name: document[name]}

    @override
    def list(self, req: Request) -> Listing:
        if req.uri.path:
            raise NotFound(req.text, "the manifest's sections have nothing under them")
        return Listing(
            [Entry(str(self.uri(s)), s, False, vnd("manifest")) for s in SECTIONS],
            links=[Link("alternate", str(self.uri()), title="the whole manifest")],
        )

    @override
    def read(self, req: Request) -> Content:
        uri = req.uri
        if uri.collection:
            req.facets.require_facet(req.text, (), "the manifest's sections")
        req.facets.require(req.text, ("as", "pointer"), "the manifest")
        req.facets.require_facet(req.text, ("stat",), "the manifest")
        if len(uri.path) > 1:
            raise NotFound(req.text, "a section of the manifest has nothing under it")
        name = uri.path[0] if uri.path else None
        if name is not None and name not in SECTIONS:
            raise NotFound(req.text, f"the manifest has no section {name!r}")
        me = self.uri(*uri.path)
        links = [Link("describedby", str(me.with_params({"as": "stat"})))]
        if name is None:
            links.append(Link("up", str(TmUri(self.host, collection=True))))
            links.extend(Link("item", str(self.uri(s))) for s in SECTIONS)
        else:
            links.extend(
                [
                    *self.up_links(uri),
                    Link("collection", str(self.root)),
                    Link("alternate", str(self.uri()), title="the whole manifest"),
                ]
            )
        if req.facets.facet == "stat":
            require_no_part(req, "a stat")
            stat = Stat(
                str(me),
                name or "manifest",
                vnd("manifest"),
                extra={"sections": [name] if name else list(SECTIONS)},
            )
            return stat.content(req.text, [*links, Link("alternate", str(me))])
        body: dict[str, Any] = {"uri": str(me)}
        if name is None:
            body.update(self.document())
        else:
            body["section"] = name
            body.update(self.section(name))
        return Content(req.text, vnd("manifest"), body, links, kind="manifest")

    @override
    def complete(self, argument: str, value: str, context: Mapping[str, str]) -> builtins.list[str]:
        if argument != "section":
            raise unknown_argument(argument, ["section"])
        return [s for s in SECTIONS if s.startswith(value)]

    @override
    def templates(self) -> builtins.list[Template]:
        return [
            Template(
                "manifest",
                f"tm://{self.host}/manifest/{{section}}",
                "A section of the manifest",
                "tm://<host>/manifest is the visual language as data: a shape per mount, a "
                "colour family per link relation, the handles of each kind (facets, blocks), "
                "the block vocabulary and its JSON Schema (?pointer=/blocks/schema), and the "
                "renderers. manifest/<section> reads one section: blocks, kinds, mounts, "
                "relations or renderers.",
                ("section",),
                vnd("manifest"),
            )
        ]

    def collections(self, limit: int = 10_000) -> Iterator[Entry]:
        """The single address first (the root lists it), then the list of its sections."""
        yield Entry(str(self.uri()), "manifest", False, vnd("manifest"), title=self.title)
        yield from super().collections(limit)
