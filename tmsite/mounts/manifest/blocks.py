"""Assemblers for what describes the namespace itself: the manifest, the kinds, the renderers.

* The manifest (and each of its sections) reads as tables: the mounts with their shapes, the
  link relations with their colour families, the handles of each kind (facets, blocks, the
  assembler), the renderers; the block vocabulary as a list and its JSON Schema as JSON code.
  A ``?pointer=`` into it (``manifest?pointer=/blocks/schema``) reads as that JSON, as code.
* A kind (``kinds/<kind>``) reads as its counters: a kv of how often and when, a table per
  media type and per link relation it was served with, and its handles in the manifest.
* A renderer (``renderers/<type>/<subtype>``) reads as the module that draws that media type:
  its URL, media type and SHA-256.

Spec: BLOCKS.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from tmsite.blocks import vocabulary as v
from tmsite.blocks.assemble import Context
from tmsite.blocks.generic import json_blocks, json_code, mapping, title_of
from tmsite.blocks.registry import assembles
from tmsite.blocks.vocabulary import Block
from tmsite.core.errors import Refusal
from tmsite.core.types import Content
from tmsite.core.uri import TmUri, parse

_KIND = re.compile(r"[a-z][a-z0-9-]{0,63}", re.ASCII)


def _uri(source: str) -> TmUri | None:
    try:
        return parse(source)
    except Refusal:
        return None


def _counts(source: str, title: str, column: str, counts: Any) -> list[Block]:
    if not isinstance(counts, dict) or not counts:
        return []
    rows = [
        [key, v.scalar(value)]
        for key, value in sorted(counts.items(), key=lambda kv: (-_number(kv[1]), kv[0]))
    ]
    return _section(source, title, [column, "count"], rows)


def _section(
    source: str, title: str, columns: list[str], rows: Sequence[Sequence[Any]]
) -> list[Block]:
    """A part of the page: its heading, and its table of every row."""
    return [v.heading(source, title, 2), v.table(source, columns, rows, len(rows))]


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


# ---- the manifest ------------------------------------------------------------------------


def _mounts(source: str, host: str, body: dict[str, Any]) -> list[Block]:
    mounts = body.get("mounts")
    if not isinstance(mounts, dict):
        return []
    rows = []
    for name, about in mounts.items():
        about = about if isinstance(about, dict) else {}
        href = str(TmUri(host, name, (), name != "manifest")) if host else None
        rows.append(
            [v.cell(name, href), v.scalar(about.get("shape")), v.scalar(about.get("title"))]
        )
    blocks = _section(source, "Mounts", ["mount", "shape", "title"], rows)
    if isinstance(body.get("shapes"), list):
        items = [v.bullet(str(shape)) for shape in body["shapes"]]
        blocks += [v.heading(source, "Shapes", 3), v.listing(source, items)]
    return blocks


def _relations(source: str, body: dict[str, Any]) -> list[Block]:
    blocks: list[Block] = []
    relations = body.get("relations")
    if isinstance(relations, dict):
        rows = []
        for rel, entry in relations.items():
            entry = entry if isinstance(entry, dict) else {}
            colour = mapping(entry.get("colour"))
            rows.append(
                [
                    rel,
                    v.scalar(entry.get("family")),
                    v.scalar(colour.get("light")),
                    v.scalar(colour.get("dark")),
                    v.scalar(entry.get("iana")),
                    v.scalar(entry.get("inverse")),
                ]
            )
        blocks += _section(
            source, "Link relations", ["rel", "family", "light", "dark", "iana", "inverse"], rows
        )
    families = body.get("families")
    if isinstance(families, dict):
        rows = [
            [name, v.scalar(f.get("what")), v.scalar(f.get("light")), v.scalar(f.get("dark"))]
            for name, f in families.items()
            if isinstance(f, dict)
        ]
        blocks += _section(source, "Colour families", ["family", "what", "light", "dark"], rows)
    confidences = body.get("confidences")
    if isinstance(confidences, dict):
        blocks += [
            v.heading(source, "Confidences", 2),
            v.kv(source, list(confidences.items())),
        ]
    return blocks


def _kinds(source: str, body: dict[str, Any]) -> list[Block]:
    kinds = body.get("kinds")
    if not isinstance(kinds, dict):
        return []
    rows = []
    for kind, handles in kinds.items():
        handles = handles if isinstance(handles, dict) else {}
        rows.append(
            [
                kind,
                ", ".join(str(f) for f in handles.get("facets") or []),
                ", ".join(str(b) for b in handles.get("blocks") or []),
                v.scalar(handles.get("assembler")),
            ]
        )
    return _section(source, "Handles of each kind", ["kind", "facets", "blocks", "assembler"], rows)


def _blocks(source: str, host: str, body: dict[str, Any]) -> list[Block]:
    about = body.get("blocks")
    if not isinstance(about, dict):
        return []
    out: list[Block] = [v.heading(source, "Blocks", 2)]
    vocabulary = [str(kind) for kind in about.get("vocabulary") or []]
    if vocabulary:
        out.append(v.listing(source, [v.bullet(kind) for kind in vocabulary]))
    if "schema" in about:
        from tmsite.blocks.assemble import SCHEMA_POINTER

        where = str(TmUri(host, "manifest").with_params(pointer=SCHEMA_POINTER)) if host else None
        out.append(v.kv(source, [("schema", where or "manifest?pointer=/blocks/schema", where)]))
        out.append(json_code(source, about["schema"]))
    return out


def _renderers(source: str, body: dict[str, Any]) -> list[Block]:
    renderers = body.get("renderers")
    if not isinstance(renderers, list):
        return []
    rows = []
    for one in renderers:
        if isinstance(one, dict):
            href = one.get("uri") if isinstance(one.get("uri"), str) else None
            rows.append(
                [
                    v.cell(one.get("mediaType"), href),
                    v.scalar(one.get("module")),
                    v.scalar(one.get("sha256")),
                ]
            )
    return _section(source, "Renderers", ["mediaType", "module", "sha256"], rows)


@assembles(kinds=("manifest",), yields=("heading", "note", "kv", "list", "table", "code"))
def manifest(ctx: Context, content: Content) -> list[Block]:
    """The visual language as data, each part as a table (a pointer into it, as JSON code)."""
    source = content.uri
    uri = _uri(source)
    host = uri.host if uri is not None else ""
    pointer = uri.param("pointer") if uri is not None else None
    if pointer is not None:
        return [v.heading(source, f"manifest {pointer}"), json_code(source, content.body)]
    body = mapping(content.body)
    section = body.get("section")
    title = f"Manifest: {section}" if isinstance(section, str) else "Manifest"
    blocks: list[Block] = [v.heading(source, title)]
    if section is None:
        blocks.append(
            v.note(
                source,
                "The visual language as data: a shape per mount, a colour family per link "
                "relation, the handles of each kind, the block vocabulary and the renderers.",
            )
        )
    blocks += _mounts(source, host, body)
    blocks += _relations(source, body)
    blocks += _kinds(source, body)
    blocks += _blocks(source, host, body)
    blocks += _renderers(source, body)
    if len(blocks) == 1 + (section is None):
        return json_blocks(source, body, title=title)
    return blocks


# ---- kinds and renderers -----------------------------------------------------------------


@assembles(kinds=("kind",), yields=("heading", "kv", "table"))
def kind(ctx: Context, content: Content) -> list[Block]:
    """How often a kind was served, as what, with which links, first and last."""
    source = content.uri
    body = mapping(content.body)
    uri = _uri(source)
    if uri is None or uri.param("pointer") is not None or "count" not in body:
        return json_blocks(source, body)
    name = str(body.get("kind") or title_of(body, source))
    handles = None
    if _KIND.fullmatch(name):
        handles = str(TmUri(uri.host, "manifest", ("kinds",)).with_params(pointer=f"/kinds/{name}"))
    blocks: list[Block] = [
        v.heading(source, f"Kind {name}"),
        v.kv(
            source,
            [
                ("kind", name, handles),
                ("served", body.get("count")),
                ("first served", body.get("firstServed")),
                ("last served", body.get("lastServed")),
            ],
        ),
    ]
    blocks += _counts(source, "Media types", "mediaType", body.get("mediaTypes"))
    blocks += _counts(source, "Link relations", "rel", body.get("rels"))
    return blocks


@assembles(kinds=("renderer",), yields=("heading", "note", "kv"))
def renderer(ctx: Context, content: Content) -> list[Block]:
    """The browser module that draws one media type: where it is and what it hashes to."""
    source = content.uri
    body = mapping(content.body)
    uri = _uri(source)
    if uri is None or uri.param("pointer") is not None or "mediaType" not in body:
        return json_blocks(source, body)
    media = str(body["mediaType"])
    return [
        v.heading(source, f"Renderer for {media}", media_type=media),
        v.note(
            source,
            f"The explorer draws {media} with this module; its SHA-256 is of the file the "
            "site serves.",
        ),
        v.kv(
            source,
            [
                (key, body.get(key))
                for key in ("mediaType", "module", "moduleType", "size", "sha256")
                if key in body
            ],
        ),
    ]
