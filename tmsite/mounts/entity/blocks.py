"""Assemblers for the entity mount's things: patterns, games, routines and lessons.

An entity body holds ``kind``, ``key``, the record's ``fields`` (corrections applied),
``related`` (per relation its ``total`` and the ``set`` address that pages every member) and
``record`` (where the record holds it). A thing is drawn as a heading naming it, a note for its
description, a kv of its scalar fields (the record followable), a kv per object field (a game's
routine kinds, a lesson's patterns with counts) and one table per relation, read from the
relation's own set so each row is a member in record order and the table says where it came
from (the set's address, its total, and its next page).

Spec: BLOCKS, ENT.
"""

from __future__ import annotations

from typing import Any

from tmsite.blocks import vocabulary as v
from tmsite.blocks.assemble import Context
from tmsite.blocks.generic import href_of, json_blocks, mapping, title_of
from tmsite.blocks.registry import assembles
from tmsite.blocks.vocabulary import Block
from tmsite.core.errors import Refusal
from tmsite.core.types import Content
from tmsite.core.uri import TmUri, parse

#: The title a relation's table has, per (kind of thing, relation).
_TITLES: dict[str, str] = {
    "tm:found-in": "Found in games",
    "tm:instance": "Routines showing it",
    "tm:demonstrated-by": "Demonstrated by lessons",
    "tm:exhibits": "Patterns it exhibits",
    "tm:measured-by": "Measured by lessons",
    "routine": "Routines",
    "tm:instance-of": "Instance of patterns",
    "tm:demonstrates": "Patterns it demonstrates",
    "tm:measures": "Games it measures",
}
_NOTE_FIELDS = ("description", "what", "summary")
_HEADING_FIELDS = ("name", "title")


def _game_uri(source: str, game: str) -> str | None:
    """The game a routine belongs to, at the same revision."""
    try:
        uri = parse(source)
    except Refusal:
        return None
    return str(TmUri(uri.host, "entity", ("game", game)).with_params(at=uri.param("at")))


def _row(member: dict[str, Any]) -> tuple[list[str], list[Any]]:
    """The columns and cells of one set member, by its kind."""
    kind = member.get("kind")
    fields: dict[str, Any] = mapping(member.get("fields"))
    name = v.cell(member.get("key") or member.get("uri"), href_of(member.get("uri")))
    count = v.scalar(member.get("count"))
    if kind == "game":
        return ["game", "name", "count"], [name, v.scalar(fields.get("name")), count]
    if kind == "pattern":
        return (
            ["pattern", "count", "description"],
            [name, count, v.scalar(fields.get("description"))],
        )
    if kind == "lesson":
        return ["lesson", "title", "count"], [name, v.scalar(fields.get("title")), count]
    if kind == "routine":
        patterns = ", ".join(
            str(one.get("pattern")) for one in fields.get("is") or [] if isinstance(one, dict)
        )
        return (
            ["routine", "game", "kind", "bank", "entered", "patterns"],
            [
                name,
                v.scalar(member.get("game")),
                v.scalar(fields.get("kind")),
                v.scalar(fields.get("bank")),
                v.scalar(fields.get("entered")),
                patterns,
            ],
        )
    return ["member", "kind"], [name, v.scalar(kind)]


def relation_table(ctx: Context, rel: str, set_uri: str, total: int | None) -> list[Block]:
    """The members of one relation, from its set's first page (the table comes from the set)."""
    title = _TITLES.get(rel, rel)
    page = ctx.try_read(set_uri)
    if page is None or not isinstance(page.body, dict):
        return [
            v.heading(set_uri, title, 2),
            v.note(set_uri, f"the members of {rel} could not be read", "warning"),
        ]
    body = page.body
    members = [m for m in body.get("members") or [] if isinstance(m, dict)]
    columns: list[str] = ["member", "kind"]
    rows: list[list[Any]] = []
    for member in members:
        columns, row = _row(member)
        rows.append(row)
    if "count" in columns and all(row[columns.index("count")] is None for row in rows):
        at = columns.index("count")
        columns = columns[:at] + columns[at + 1 :]
        rows = [row[:at] + row[at + 1 :] for row in rows]
    size = body.get("total") if isinstance(body.get("total"), int) else total
    next_page = body.get("next") if isinstance(body.get("next"), str) else None
    return [
        v.heading(page.uri, f"{title} ({size})" if size is not None else title, 2),
        v.table(page.uri, columns, rows, total=size, next_page=next_page),
    ]


@assembles(
    kinds=("pattern", "game", "routine", "lesson"), yields=("heading", "note", "kv", "table")
)
def entity(ctx: Context, content: Content) -> list[Block]:
    """One thing of the autopsy: its fields, then each relation as a table of its members."""
    body = mapping(content.body)
    source = content.uri
    fields: dict[str, Any] = mapping(body.get("fields"))
    if not fields:
        return json_blocks(source, body)
    kind = str(body.get("kind") or content.kind)
    key = str(body.get("key") or fields.get("key") or title_of(body, source))
    label = next((str(fields[f]) for f in _HEADING_FIELDS if isinstance(fields.get(f), str)), "")
    title = f"{kind} {key}" + (f" — {label}" if label and label != key else "")
    blocks: list[Block] = [v.heading(source, title)]
    noted = next((f for f in _NOTE_FIELDS if isinstance(fields.get(f), str) and fields[f]), None)
    if noted is not None:
        blocks.append(v.note(source, fields[noted]))
    blocks.append(v.kv(source, _scalar_items(source, body, fields, key, noted)))
    blocks += _object_fields(source, fields)
    related: dict[str, Any] = mapping(body.get("related"))
    for rel, about in related.items():
        if isinstance(about, dict) and isinstance(about.get("set"), str):
            total = about.get("total") if isinstance(about.get("total"), int) else None
            blocks.extend(relation_table(ctx, rel, about["set"], total))
    return blocks + _corrections(source, body)


def _scalar_items(
    source: str, body: dict[str, Any], fields: dict[str, Any], key: str, noted: str | None
) -> list[tuple[str, Any, str | None]]:
    """The kv of a thing: its key, its game, its scalar fields (but the noted one), its record."""
    items: list[tuple[str, Any, str | None]] = [("key", key, None)]
    if isinstance(body.get("game"), str):
        items.append(("game", body["game"], _game_uri(source, body["game"])))
    for name, value in fields.items():
        if name in {noted, "key"} or isinstance(value, dict | list):
            continue
        items.append((name, value, href_of(value)))
    record: dict[str, Any] = mapping(body.get("record"))
    if record:
        where = f"{record.get('file', '')}#{record.get('pointer', '')}"
        items.append(("record", where, href_of(record.get("uri"))))
    return items


def _object_fields(source: str, fields: dict[str, Any]) -> list[Block]:
    """A heading and a kv per object field, a heading and a table per list of objects."""
    blocks: list[Block] = []
    for name, value in fields.items():
        if isinstance(value, dict) and value:
            blocks.append(v.heading(source, name, 2))
            blocks.append(v.kv(source, [(k, val, href_of(val)) for k, val in value.items()]))
        elif isinstance(value, list) and value and all(isinstance(i, dict) for i in value):
            columns = [k for k in value[0] if not isinstance(value[0][k], dict | list)]
            if not columns:
                columns = list(value[0])
            rows = [[v.scalar(item.get(c)) for c in columns] for item in value]
            blocks.append(v.heading(source, name, 2))
            blocks.append(v.table(source, columns, rows, total=len(value)))
    return blocks


def _corrections(source: str, body: dict[str, Any]) -> list[Block]:
    """The maintainers' corrections applied to the record, as a table (none: nothing)."""
    corrections = [c for c in body.get("corrections") or [] if isinstance(c, dict)]
    if not corrections:
        return []
    columns = [k for k in corrections[0] if not isinstance(corrections[0][k], dict | list)]
    return [
        v.heading(source, "Corrections applied", 2),
        v.table(source, columns, [[v.scalar(c.get(k)) for k in columns] for c in corrections]),
    ]
