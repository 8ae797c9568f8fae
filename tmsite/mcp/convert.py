"""Namespace answers in MCP's wire shapes.

A read becomes one text or base64 ``blob`` item with its links under
``_meta["tinymachines.ai/links"]``.

Spec: LK1.
"""

from __future__ import annotations

import base64
from typing import Any

from tmsite.core.parts import to_text
from tmsite.core.types import Content, Entry, Template
from tmsite.mcp.protocol import META_LINKS_KEY


def read_result(content: Content) -> dict[str, Any]:
    """``resources/read``: one content item; the links in ``_meta``."""
    item: dict[str, Any] = {"uri": content.uri, "mimeType": content.mime_type}
    if isinstance(content.body, bytes):
        item["blob"] = base64.b64encode(content.body).decode("ascii")
    else:
        item["text"] = to_text(content.body)
    return {
        "contents": [item],
        "_meta": {META_LINKS_KEY: [link.to_json() for link in content.links]},
    }


def resource(entry: Entry) -> dict[str, Any]:
    """One ``resources/list`` entry: a ``Resource``; ``size`` and ``annotations`` when known."""
    out: dict[str, Any] = {"uri": entry.uri, "name": entry.name}
    if entry.title is not None:
        out["title"] = entry.title
    if entry.mime_type is not None:
        out["mimeType"] = entry.mime_type
    if entry.size is not None and not entry.redacted:
        out["size"] = entry.size
    annotations = entry.annotations()
    if annotations is not None:
        out["annotations"] = annotations
    return out


def template(item: Template) -> dict[str, Any]:
    """One ``resources/templates/list`` entry (the template's own JSON form)."""
    return item.to_json()
