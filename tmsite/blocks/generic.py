"""The fallback assemblers: any JSON, any text, any bytes — and files by their media type.

A JSON object reads as a heading (its title, name or key), a note (what it is), a kv of its
scalar fields, and a list or table per list field; text reads as code of its own media type
(a viewer draws markdown, HTML or plain text with the renderer for that type); bytes read as
media whose bytes are at ``?as=raw``.

Spec: BLOCKS.
"""

from __future__ import annotations

import json
from typing import Any

from tmsite.blocks import vocabulary as v
from tmsite.blocks.assemble import Context
from tmsite.blocks.registry import GENERIC, assembles, base_type
from tmsite.blocks.vocabulary import Block
from tmsite.core.errors import Refusal
from tmsite.core.parts import to_text
from tmsite.core.types import Content
from tmsite.core.uri import parse

_TITLE_KEYS = ("title", "name", "key", "kind")
_NOTE_KEYS = ("what", "description", "why", "note", "summary")
_MAX_ROWS = 200
_MAX_COLUMNS = 6

#: A language name for a code block, by media type (a viewer may highlight it).
LANGUAGES: dict[str, str] = {
    "text/markdown": "markdown",
    "application/json": "json",
    "text/x-python": "python",
    "text/html": "html",
    "text/css": "css",
    "text/javascript": "javascript",
    "application/javascript": "javascript",
    "application/toml": "toml",
    "text/x-toml": "toml",
    "application/yaml": "yaml",
    "text/yaml": "yaml",
    "text/x-shellscript": "shell",
}


def title_of(body: dict[str, Any], uri: str) -> str:
    """What a JSON object is called: its title, name, key or kind, else its address's name."""
    for key in _TITLE_KEYS:
        value = body.get(key)
        if isinstance(value, str) and value:
            return value
    try:
        parsed = parse(uri)
    except Refusal:
        return uri
    return parsed.name or parsed.host or "tm://"


def mapping(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def href_of(value: Any) -> str | None:
    """``value`` if it is a ``tm://`` address a block may link, else None."""
    return value if isinstance(value, str) and value.startswith("tm://") else None


def json_code(source: str, value: Any, cap: int | None = None) -> Block:
    """A JSON value as a code block (sorted keys, indented; cut to ``cap`` characters)."""
    text = json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)
    return v.code(source, text[:cap], "application/json", "json")


def json_blocks(source: str, body: Any, *, title: str | None = None) -> list[Block]:
    """Blocks of any JSON value."""
    if not isinstance(body, dict):
        if isinstance(body, list):
            return list_blocks(source, "items", body)
        return [v.kv(source, [("value", body, href_of(body))])]
    blocks: list[Block] = [v.heading(source, title or title_of(body, source))]
    for key in _NOTE_KEYS:
        if isinstance(body.get(key), str) and body[key]:
            blocks.append(v.note(source, body[key]))
            break
    noted = {key for key in _NOTE_KEYS if isinstance(body.get(key), str)}
    scalars = [
        (key, value, href_of(value))
        for key, value in body.items()
        if not isinstance(value, dict | list) and key not in noted
    ]
    if scalars:
        blocks.append(v.kv(source, scalars))
    for key, value in body.items():
        if isinstance(value, dict) and value:
            blocks.extend(_section_blocks(source, key, value))
        elif isinstance(value, list) and value:
            blocks.extend(list_blocks(source, key, value))
    return blocks


def _section_blocks(source: str, key: str, value: dict[str, Any]) -> list[Block]:
    """An object field: a level-2 heading, a kv of its scalars, a list block per nested value."""
    blocks: list[Block] = [v.heading(source, key, 2)]
    inner = [(k, val, href_of(val)) for k, val in value.items() if not isinstance(val, dict | list)]
    nested = {k: val for k, val in value.items() if isinstance(val, dict | list)}
    if inner:
        blocks.append(v.kv(source, inner))
    for name, val in nested.items():
        blocks.extend(list_blocks(source, f"{key} · {name}", val))
    return blocks


def list_blocks(source: str, name: str, value: Any) -> list[Block]:
    """A list of scalars as a list; a list of objects as a table; anything else as a kv."""
    if isinstance(value, dict):
        return [
            v.heading(source, name, 2),
            v.kv(source, [(k, val, href_of(val)) for k, val in value.items()]),
        ]
    if not isinstance(value, list):
        return [v.kv(source, [(name, value, href_of(value))])]
    blocks = [v.heading(source, name, 2)]
    if all(isinstance(item, dict) for item in value):
        columns: list[str] = []
        for item in value:
            for key, cell in item.items():
                if key not in columns and not isinstance(cell, dict | list) and key != "uri":
                    columns.append(key)
        columns = columns[:_MAX_COLUMNS]
        has_uri = any(isinstance(item.get("uri"), str) for item in value)
        rows = []
        for item in value[:_MAX_ROWS]:
            row = []
            for index, key in enumerate(columns):
                href = (
                    href_of(item.get("uri")) if has_uri and index == 0 else href_of(item.get(key))
                )
                row.append(v.cell(item.get(key), href) if href else v.scalar(item.get(key)))
            if not columns:
                row = [v.cell(item.get("uri"), href_of(item.get("uri")))]
            rows.append(row)
        blocks.append(v.table(source, columns or ["uri"], rows, total=len(value)))
        return blocks
    items = [v.bullet(str(v.scalar(item)), href_of(item)) for item in value[:_MAX_ROWS]]
    blocks.append(v.listing(source, items))
    return blocks


@assembles(kinds=(GENERIC,), yields=("heading", "note", "kv", "list", "table", "code", "media"))
def generic(ctx: Context, content: Content) -> list[Block]:
    """Anything without its own assembler: JSON, text or bytes."""
    if isinstance(content.body, bytes):
        return binary(ctx, content)
    if content.is_json:
        return json_blocks(content.uri, content.body)
    return text(ctx, content)


@assembles(types=("text/*", "text/markdown", "text/html"), yields=("code",))
def text(ctx: Context, content: Content) -> list[Block]:
    """Text as code of its own media type, numbered from the part it is (``lines=``)."""
    media = base_type(content.mime_type)
    first = 1
    lines = parse(content.uri).param("lines")
    if lines:
        first = int(lines.split("-")[0])
    return [
        v.code(
            content.uri,
            to_text(content.body),
            media,
            LANGUAGES.get(media),
            first_line=first,
        )
    ]


@assembles(types=("application/json",), yields=("heading", "note", "kv", "list", "table"))
def json_file(ctx: Context, content: Content) -> list[Block]:
    """A JSON file (or a ``pointer=`` into one) as its structure."""
    body = content.body
    if not content.is_json:
        try:
            body = json.loads(to_text(body))
        except ValueError:
            return text(ctx, content)
    return json_blocks(content.uri, body)


@assembles(types=("image/*", "audio/*", "video/*", "application/octet-stream"), yields=("media",))
def binary(ctx: Context, content: Content) -> list[Block]:
    """Bytes as media: a viewer fetches them from ``?as=raw``."""
    uri = parse(content.uri)
    raw = uri.keeping("at", "range", **{"as": "raw"})
    size = content.size
    if size is None and isinstance(content.body, bytes):
        size = len(content.body)
    return [v.media(content.uri, base_type(content.mime_type), str(raw), size, uri.name or None)]
