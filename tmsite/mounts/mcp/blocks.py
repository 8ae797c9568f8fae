"""Assemblers for the mcp mount: server records, what they declared, index maps, mapped things.

* A server (``mcp/<server>/``) is its record: a heading, its description as a note, a kv of
  how it is reached and when it last answered, a kv of what it declared (counts), a note of its
  instructions, and a table of its collections and map.
* A declared tool, prompt, resource or resource template is a heading naming it, its
  description as a note, a kv of its scalar fields, its JSON schemas (``inputSchema``,
  ``outputSchema``) as JSON code, a prompt's arguments as a table.
* A map (``mcp/<server>/map``) is a table of its entries: the path template (followable to
  the tool that runs it), the tool, the kind it yields, its confidence and where it came from.
* A resource read from its server (``mcp/<server>/resources/<uri>``) is its content drawn by
  its media type (text as code, JSON as its structure, bytes as media), then where it came
  from: the server, the upstream URI and the declaration (followable).
* A thing a map names (any kind the map declares, so it is registered for the mount, not a
  kind) is the tool's answer drawn as JSON, then how it was read: the server, the tool (both
  followable), the map entry and its confidence, and the arguments.

Neither says when it was read or called (the read's own ``_meta`` provenance does): a drawing
is of what the thing is, so two reads of a thing that did not change draw the same blocks, and
a viewer that compares them (the explorer, on each listen) tells no change that was not one.

Spec: BLOCKS, MCP.
"""

from __future__ import annotations

from typing import Any

from tmsite.blocks import vocabulary as v
from tmsite.blocks.assemble import Context
from tmsite.blocks.generic import (
    binary,
    href_of,
    json_blocks,
    json_code,
    json_file,
    mapping,
    text,
    title_of,
)
from tmsite.blocks.registry import assembles
from tmsite.blocks.vocabulary import Block
from tmsite.core.parts import is_text_type
from tmsite.core.types import Content
from tmsite.mounts.mcp.map import PROVENANCE

#: Fields of a declared item that are JSON Schemas, drawn as code.
_SCHEMAS = ("inputSchema", "outputSchema")
_SCHEMA_TEXT_CAP = 32 * 1024


@assembles(kinds=("server",), yields=("heading", "note", "kv", "table"))
def server(ctx: Context, content: Content) -> list[Block]:
    """A server's record, what it declared, and what it lists."""
    body = mapping(content.body)
    source = content.uri
    record: dict[str, Any] = mapping(body.get("server"))
    name = str(record.get("name") or title_of(body, source))
    blocks: list[Block] = [v.heading(source, f"MCP server {name}")]
    if isinstance(record.get("description"), str) and record["description"]:
        blocks.append(v.note(source, record["description"]))
    outcome = record.get("outcome")
    if outcome not in (None, "answered"):
        why = record.get("failure") or record.get("detail") or outcome
        blocks.append(v.note(source, f"when last asked: {outcome} ({why})", "warning"))
    blocks.append(v.kv(source, _record_facts(record)))
    declared = record.get("declared")
    if isinstance(declared, dict):
        blocks += _declared_blocks(source, declared)
    children = [c for c in body.get("children") or [] if isinstance(c, dict)]
    if children:
        rows = [
            [
                v.cell(child.get("name") or child.get("uri"), href_of(child.get("uri"))),
                v.scalar(child.get("title")),
                v.scalar(child.get("mimeType")),
            ]
            for child in children
        ]
        blocks.append(v.table(source, ["name", "title", "mimeType"], rows))
    return blocks


def _record_facts(record: dict[str, Any]) -> list[tuple[str, Any, str | None]]:
    """The record's scalar fields (followable when they are addresses), then its lists joined."""
    facts = [
        (key, value, href_of(value))
        for key, value in record.items()
        if key not in {"name", "description", "declared"} and not isinstance(value, dict | list)
    ]
    if isinstance(record.get("sources"), list) and record["sources"]:
        facts.append(("sources", ", ".join(str(s) for s in record["sources"]), None))
    return facts


def _declared_blocks(source: str, declared: dict[str, Any]) -> list[Block]:
    """What the server declared when last asked: when, who it is, counts, its instructions."""
    blocks: list[Block] = [v.heading(source, "Declared", 2)]
    items: list[tuple[str, Any, str | None]] = [
        (key, declared.get(key), None)
        for key in ("at", "seconds", "protocolVersion", "era")
        if key in declared
    ]
    info = declared.get("serverInfo")
    if isinstance(info, dict):
        items += [(f"serverInfo.{k}", val, None) for k, val in info.items()]
    counts = declared.get("counts")
    if isinstance(counts, dict):
        items += [(k, val, None) for k, val in counts.items()]
    blocks.append(v.kv(source, items))
    if isinstance(declared.get("instructions"), str) and declared["instructions"]:
        blocks.append(v.note(source, declared["instructions"]))
    for key in ("listingErrors", "dropped"):
        if declared.get(key):
            blocks.append(v.note(source, f"{key}: {v.scalar(declared[key])}", "warning"))
    return blocks


@assembles(
    kinds=("tool", "prompt", "resource", "resource-template"),
    yields=("heading", "note", "kv", "table", "code"),
)
def declared(ctx: Context, content: Content) -> list[Block]:
    """A tool, prompt or resource as its server declared it; schemas as JSON code."""
    body = mapping(content.body)
    source = content.uri
    if content.is_json and not isinstance(content.body, dict):
        return json_blocks(source, content.body)
    what = content.kind.replace("-", " ")
    name = str(body.get("name") or body.get("uriTemplate") or title_of(body, source))
    label = body.get("title")
    if isinstance(label, str) and label and label != name:
        name = f"{name} — {label}"
    blocks: list[Block] = [v.heading(source, f"{what} {name}")]
    if isinstance(body.get("description"), str) and body["description"]:
        blocks.append(v.note(source, body["description"]))
    facts = [
        (key, value, None)
        for key, value in body.items()
        if key != "description" and not isinstance(value, dict | list)
    ]
    if facts:
        blocks.append(v.kv(source, facts))
    annotations = body.get("annotations")
    if isinstance(annotations, dict) and annotations:
        blocks.append(v.heading(source, "annotations", 2))
        blocks.append(v.kv(source, list(annotations.items())))
    arguments = [a for a in body.get("arguments") or [] if isinstance(a, dict)]
    if arguments:
        blocks.append(v.heading(source, "arguments", 2))
        rows = [
            [
                v.scalar(a.get("name")),
                bool(a.get("required", False)),
                v.scalar(a.get("description")),
            ]
            for a in arguments
        ]
        blocks.append(v.table(source, ["name", "required", "description"], rows))
    for key in _SCHEMAS:
        if key in body:
            blocks.append(v.heading(source, key, 2))
            blocks.append(json_code(source, body[key], _SCHEMA_TEXT_CAP))
    return blocks


def _server_of(source: str) -> str | None:
    """The server record a map belongs to (``mcp/<server>/``)."""
    head, _, last = source.partition("?")[0].rpartition("/")
    return f"{head}/" if last == "map" else None


@assembles(kinds=("map",), yields=("heading", "note", "kv", "table"))
def index_map(ctx: Context, content: Content) -> list[Block]:
    """An index map: each path template, the tool it runs, what it yields, how sure it is."""
    body = mapping(content.body)
    source = content.uri
    entries = [e for e in body.get("entries") or [] if isinstance(e, dict)]
    name = str(body.get("server") or "")
    blocks: list[Block] = [v.heading(source, f"Index map of {name}" if name else "Index map")]
    if isinstance(body.get("note"), str) and body["note"]:
        blocks.append(v.note(source, body["note"]))
    confidences: dict[str, int] = {}
    for entry in entries:
        level = str(entry.get("confidence"))
        confidences[level] = confidences.get(level, 0) + 1
    facts: list[tuple[str, Any, str | None]] = [("entries", len(entries), None)]
    if name:
        facts.insert(0, ("server", name, href_of(_server_of(source))))
    facts += [(level, count, None) for level, count in sorted(confidences.items())]
    blocks.append(v.kv(source, facts))
    rows = []
    for entry in entries:
        tool_uri = href_of(entry.get("toolUri"))
        rows.append(
            [
                v.scalar(entry.get("path")),
                v.cell(entry.get("tool"), tool_uri),
                v.scalar(entry.get("kind")),
                v.scalar(entry.get("confidence")),
                v.scalar(entry.get("origin")),
                v.scalar(entry.get("arguments")),
                v.scalar(entry.get("notes") or entry.get("derivedBecause")),
            ]
        )
    blocks.append(
        v.table(
            source,
            ["path", "tool", "kind", "confidence", "origin", "arguments", "why"],
            rows,
            total=len(entries),
        )
    )
    if not entries:
        blocks.append(v.note(source, "This map names nothing yet: no tool is ever run."))
    return blocks


@assembles(mounts=("mcp",), yields=("heading", "note", "kv", "list", "table"))
def mapped(ctx: Context, content: Content) -> list[Block]:
    """A thing a map names: the tool's answer, then where and how it was read."""
    body = mapping(content.body)
    source = content.uri
    meta: dict[str, Any] = mapping(body.get("_meta"))
    prov: dict[str, Any] = mapping(meta.get(PROVENANCE))
    answer = {key: value for key, value in body.items() if key != "_meta"}
    title = title_of(answer, source)
    blocks = json_blocks(source, answer, title=f"{content.kind} {title}")
    if not prov:
        return blocks
    server_uri = href_of(prov.get("serverUri"))
    map_uri = f"{server_uri}map" if server_uri and server_uri.endswith("/") else None
    blocks.append(v.heading(source, "Read with", 2))
    items: list[tuple[str, Any, str | None]] = [
        ("server", prov.get("server"), server_uri),
        ("tool", prov.get("tool"), href_of(prov.get("toolUri"))),
        ("map entry", prov.get("mapEntry"), map_uri),
        ("confidence", prov.get("confidence"), None),
        ("arguments", prov.get("arguments"), None),
        ("licence basis", prov.get("licenceBasis"), None),
    ]
    if prov.get("sources"):
        items.append(("sources", ", ".join(str(s) for s in prov["sources"]), None))
    blocks.append(v.kv(source, [i for i in items if i[1] is not None]))
    if prov.get("refusedRequests"):
        blocks.append(
            v.note(source, f"the server asked for: {v.scalar(prov['refusedRequests'])}", "warning")
        )
    return blocks


@assembles(
    kinds=("peer-resource",), yields=("heading", "note", "kv", "list", "table", "code", "media")
)
def peer_resource(ctx: Context, content: Content) -> list[Block]:
    """A resource another server answered: its content by media type, then where it came from."""
    source = content.uri
    prov: dict[str, Any] = mapping((content.meta or {}).get(PROVENANCE))
    name = str(prov.get("upstreamUri") or title_of({}, source))
    blocks: list[Block] = [v.heading(source, f"resource {name}")]
    media = content.mime_type.split(";")[0].strip().lower()
    if isinstance(content.body, bytes) and not is_text_type(media):
        blocks += binary(ctx, content)
    elif media == "application/json" or media.endswith("+json"):
        blocks += json_file(ctx, content)
    else:
        blocks += text(ctx, content)
    if not prov:
        return blocks
    blocks.append(v.heading(source, "Read from", 2))
    items: list[tuple[str, Any, str | None]] = [
        ("server", prov.get("server"), href_of(prov.get("serverUri"))),
        ("upstream URI", prov.get("upstreamUri"), None),
        (
            "declared by",
            prov.get("template") or prov.get("upstreamUri"),
            href_of(prov.get("declaration")),
        ),
        ("licence basis", prov.get("licenceBasis"), None),
    ]
    if prov.get("sources"):
        items.append(("sources", ", ".join(str(s) for s in prov["sources"]), None))
    blocks.append(v.kv(source, [i for i in items if i[1] is not None]))
    return blocks
