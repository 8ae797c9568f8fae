"""The offbox assembler: a node kept off the box, drawn as what it is and why it is not here.

An offbox body holds ``name``, ``what``, ``why``, ``exposed`` (always false), ``reason``,
``generatedBy`` and ``inputOf`` (the scripts in git that make and read it) and ``record``
(where data/lineage.json holds it). It reads as a heading naming it, a note of what it is, a
warning note of why it is not served, a kv of its fields (the record followable) and a table of
the scripts, each followable, with what it does to the node.

Spec: BLOCKS.
"""

from __future__ import annotations

from typing import Any

from tmsite.blocks import vocabulary as v
from tmsite.blocks.assemble import Context
from tmsite.blocks.generic import json_blocks, mapping, title_of
from tmsite.blocks.registry import assembles
from tmsite.blocks.vocabulary import Block
from tmsite.core.errors import Refusal
from tmsite.core.types import Content
from tmsite.core.uri import parse
from tmsite.mounts.fs import uris as fs_uris

#: Body field → what the script does to the node.
_SCRIPTS = (("generatedBy", "makes it"), ("inputOf", "reads it"))


def record_uri(source: str, record: dict[str, Any]) -> str | None:
    """The record part a node is read from: ``fs/<file>?pointer=<pointer>``."""
    file, pointer = record.get("file"), record.get("pointer")
    if not isinstance(file, str) or not isinstance(pointer, str):
        return None
    try:
        uri = parse(source)
    except Refusal:
        return None
    return str(fs_uris.checkout_file_uri(uri.host, file, pointer=pointer))


@assembles(kinds=("offbox",), yields=("heading", "note", "kv", "table"))
def offbox(ctx: Context, content: Content) -> list[Block]:
    """An offbox node: what it is, why it is not served (a warning), its record, its scripts.

    A body without a ``name`` (a stat, a part) is drawn as the JSON it is.
    """
    body = mapping(content.body)
    source = content.uri
    if "name" not in body:
        return json_blocks(source, body)
    name = title_of(body, source)
    blocks: list[Block] = [v.heading(source, f"{name} (kept off the box)")]
    if isinstance(body.get("what"), str) and body["what"]:
        blocks.append(v.note(source, body["what"]))
    if isinstance(body.get("why"), str) and body["why"]:
        blocks.append(v.note(source, f"Not served here: {body['why']}", "warning"))
    record: dict[str, Any] = mapping(body.get("record"))
    items: list[tuple[str, Any, str | None]] = [
        ("name", name, None),
        ("exposed", body.get("exposed", False), None),
        ("reason", body.get("reason"), None),
    ]
    if record:
        where = f"{record.get('file', '')}#{record.get('pointer', '')}"
        items.append(("record", where, record_uri(source, record)))
    blocks.append(v.kv(source, items))
    rows = []
    for field, does in _SCRIPTS:
        for href in body.get(field) or []:
            if isinstance(href, str):
                label = href.split("?", 1)[0].rsplit("/", 1)[-1]
                link = href if href.startswith("tm://") else None
                rows.append([v.cell(label, link), does])
    blocks.append(v.heading(source, "Scripts", 2))
    blocks.append(v.table(source, ["script", "what it does"], rows, total=len(rows)))
    return blocks
