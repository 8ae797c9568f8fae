"""Assemblers for what the namespace core and every mount serve: listings, stats, links.

A listing (and a tree, the hosts, the mounts) is a table whose first column follows each
child, with ``next`` when there is another page; a stat is a kv; ``?as=links`` is a table of
links with its own ``next``.

Spec: BLOCKS.
"""

from __future__ import annotations

from typing import Any

from tmsite.blocks import vocabulary as v
from tmsite.blocks.assemble import Context
from tmsite.blocks.generic import json_blocks, mapping, title_of
from tmsite.blocks.registry import assembles
from tmsite.blocks.vocabulary import Block
from tmsite.core.types import Content

_LISTING_COLUMNS = ("name", "mimeType", "size", "title")


@assembles(kinds=("listing", "tree", "hosts", "mounts"), yields=("heading", "note", "kv", "table"))
def listing(ctx: Context, content: Content) -> list[Block]:
    """A collection: its children as a table, paged by ``next``."""
    body = mapping(content.body)
    source = content.uri
    blocks: list[Block] = [v.heading(source, title_of(body, source))]
    children = body.get("children")
    if not isinstance(children, list):
        return json_blocks(source, body)
    extra = [
        (key, value, value if isinstance(value, str) and value.startswith("tm://") else None)
        for key, value in body.items()
        if key not in {"uri", "children", "next", "nextCursor"}
        and not isinstance(value, dict | list)
    ]
    if extra:
        blocks.append(v.kv(source, extra))
    columns = ["name", "what"] if any("what" in c for c in children) else list(_LISTING_COLUMNS)
    rows = []
    for child in children:
        row: list[Any] = [v.cell(child.get("name") or child.get("uri"), child.get("uri"))]
        for column in columns[1:]:
            value = child.get(column)
            if column == "mimeType" and child.get("redacted"):
                value = "redacted"
            row.append(v.scalar(value))
        rows.append(row)
    next_page = body.get("next") if isinstance(body.get("next"), str) else None
    blocks.append(v.table(source, columns, rows, next_page=next_page))
    if not children:
        blocks.append(v.note(source, "This collection is empty."))
    return blocks


@assembles(kinds=("stat",), yields=("heading", "kv"))
def stat(ctx: Context, content: Content) -> list[Block]:
    """Metadata as a kv (addresses followable)."""
    body = mapping(content.body)
    source = content.uri
    return json_blocks(source, body, title=f"{title_of(body, source)} — metadata")


@assembles(kinds=("links", "set"), yields=("heading", "table"))
def link_page(ctx: Context, content: Content) -> list[Block]:
    """A page of ``?as=links`` or of an entity set: a table, paged by ``next``."""
    body = mapping(content.body)
    source = content.uri
    next_page = body.get("next") if isinstance(body.get("next"), str) else None
    total = body.get("total") if isinstance(body.get("total"), int) else None
    if content.kind == "links":
        rows = [
            [
                link.get("rel", ""),
                v.cell(link.get("title") or link.get("href"), link.get("href")),
                v.scalar(link.get("confidence")),
                v.scalar(link.get("count")),
            ]
            for link in body.get("links", [])
        ]
        columns = ["rel", "target", "confidence", "count"]
        heading = f"Links of {body.get('target', source)}"
    else:
        rows = [
            [
                v.cell(member.get("key") or member.get("uri"), member.get("uri")),
                v.scalar(member.get("kind")),
                v.scalar(member.get("game")),
            ]
            for member in body.get("members", [])
        ]
        columns = ["member", "kind", "game"]
        heading = f"{body.get('rel', 'members')} of {body.get('target', source)}"
    return [v.heading(source, heading), v.table(source, columns, rows, total, next_page)]
