"""The JSON Schema (draft 2020-12) of a blocks body, published in the manifest.

Its address is ``tm://<host>/manifest?pointer=/blocks/schema``: the manifest holds it, so a
viewer that reads the manifest has the schema too. Every ``?as=blocks`` read validates against
it (the tests check every kind the namespace serves).

Spec: BLOCKS.
"""

from __future__ import annotations

from typing import Any

from tmsite.blocks.vocabulary import BLOCK_KINDS

SCHEMA_ID = "https://tinymachines.ai/schemas/tm-blocks.json"

_TM = {"type": "string", "pattern": "^tm://"}
_SCALAR = {"type": ["string", "number", "boolean", "null"]}
_TEXT = {"type": "string"}


def _closed(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """An object of exactly ``properties``, ``required`` among them."""
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _array_of(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "array", "items": _closed(properties, required)}


def _block(kind: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    own = {"kind": {"const": kind}, "from": {"$ref": "#/$defs/address"}}
    return _closed({**own, **properties}, ["kind", "from", *required])


_DEFS: dict[str, Any] = {
    "address": {**_TM, "description": "A complete tm:// URI."},
    "heading": _block(
        "heading",
        {
            "text": _TEXT,
            "level": {"type": "integer", "minimum": 1, "maximum": 3},
            "mediaType": _TEXT,
        },
        ["text", "level"],
    ),
    "note": _block(
        "note", {"text": _TEXT, "tone": {"enum": ["info", "warning"]}}, ["text", "tone"]
    ),
    "kv": _block(
        "kv",
        {"items": _array_of({"key": _TEXT, "value": _SCALAR, "href": _TM}, ["key", "value"])},
        ["items"],
    ),
    "list": _block(
        "list",
        {
            "items": _array_of({"text": _TEXT, "href": _TM, "type": _TEXT}, ["text"]),
            "ordered": {"type": "boolean"},
        },
        ["items", "ordered"],
    ),
    "cell": {
        "oneOf": [
            _SCALAR,
            _closed({"text": _TEXT, "href": _TM}, ["text", "href"]),
        ]
    },
    "table": _block(
        "table",
        {
            "columns": {"type": "array", "items": _TEXT, "minItems": 1},
            "rows": {
                "type": "array",
                "items": {"type": "array", "items": {"$ref": "#/$defs/cell"}},
            },
            "total": {"type": "integer", "minimum": 0},
            "next": _TM,
        },
        ["columns", "rows"],
    ),
    "timeline": _block(
        "timeline",
        {
            "events": _array_of(
                {
                    "when": _TEXT,
                    "title": _TEXT,
                    "href": _TM,
                    "who": _TEXT,
                    "detail": _TEXT,
                },
                ["when", "title"],
            )
        },
        ["events"],
    ),
    "diff": _block(
        "diff",
        {
            "old": _TM,
            "new": _TM,
            "lines": _array_of(
                {"op": {"enum": [" ", "+", "-", "@"]}, "text": _TEXT}, ["op", "text"]
            ),
        },
        ["old", "new", "lines"],
    ),
    "code": _block(
        "code",
        {
            "text": _TEXT,
            "mediaType": _TEXT,
            "language": _TEXT,
            "firstLine": {"type": "integer", "minimum": 1},
            "annotations": _array_of(
                {
                    "line": {"type": "integer", "minimum": 1},
                    "text": _TEXT,
                    "href": _TM,
                },
                ["line", "text"],
            ),
        },
        ["text", "mediaType", "firstLine"],
    ),
    "media": _block(
        "media",
        {
            "mediaType": _TEXT,
            "href": _TM,
            "size": {"type": "integer", "minimum": 0},
            "title": _TEXT,
        },
        ["mediaType", "href"],
    ),
    "question": _block(
        "question",
        {
            "prompt": _TEXT,
            "options": _array_of({"label": _TEXT, "href": _TM}, ["label", "href"]),
        },
        ["prompt", "options"],
    ),
    "finding": _block(
        "finding",
        {
            "reason": _TEXT,
            "message": _TEXT,
            "data": {"type": "object", "properties": {"reason": _TEXT}, "required": ["reason"]},
            "target": _TEXT,
        },
        ["reason", "message", "data", "target"],
    ),
    "trail": _block(
        "trail",
        {
            "title": _TEXT,
            "steps": _array_of(
                {
                    "n": {"type": "integer", "minimum": 1},
                    "href": _TM,
                    "note": _TEXT,
                },
                ["n", "href"],
            ),
        },
        ["title", "steps"],
    ),
    "link": _block(
        "link",
        {
            "rel": _TEXT,
            "href": _TM,
            "confidence": {"enum": ["exact", "inferred", "low"]},
            "title": _TEXT,
            "type": _TEXT,
            "count": {"type": "integer", "minimum": 0},
        },
        ["rel", "href"],
    ),
}

SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": SCHEMA_ID,
    "title": "A tm:// address assembled into blocks",
    "description": (
        "The body of every ?as=blocks read (application/vnd.tm.blocks+json): the blocks in "
        "order, each naming the address it came from, and every address read to build them."
    ),
    "type": "object",
    "properties": {
        "uri": {**_TM, "description": "The blocks read itself."},
        "source": {**_TM, "description": "The address the blocks stand for."},
        "kind": {"type": "string", "description": "The kind of thing read (Content.kind)."},
        "mimeType": {"type": "string", "description": "The media type of the thing read."},
        "refused": {"type": "boolean", "description": "The source was refused: see the finding."},
        "facets": {
            "type": "array",
            "items": {"type": "string"},
            "description": "The ?as= values the source offers (its handles).",
        },
        "schema": {**_TM, "description": "Where this schema is published."},
        "reads": {
            "type": "array",
            "items": _TM,
            "minItems": 1,
            "description": "Every address read to assemble these blocks, in order.",
        },
        "blocks": {
            "type": "array",
            "items": {"oneOf": [{"$ref": f"#/$defs/{kind}"} for kind in BLOCK_KINDS]},
        },
    },
    "required": ["uri", "source", "kind", "reads", "blocks", "facets", "refused"],
    "additionalProperties": False,
    "$defs": _DEFS,
}
assert all(kind in _DEFS for kind in BLOCK_KINDS), "every block kind has a schema"
