"""Namespace answers in MCP's wire shapes.

A read becomes one text or base64 ``blob`` item with its links under
``_meta["tinymachines.ai/links"]``, beside what else the content carries for ``_meta`` (the
provenance of another server's resource); a prompt's embedded read is the same item, in a
``resource`` content block that carries the links in its own ``_meta``.

Spec: LK1, PR1.
"""

from __future__ import annotations

import base64
from typing import Any

from tmsite.core.parts import to_text
from tmsite.core.types import Content, Entry
from tmsite.mcp.protocol import META_LINKS_KEY
from tmsite.operations.prompts import Answer, Message


def _item(content: Content) -> dict[str, Any]:
    """The ``TextResourceContents`` or ``BlobResourceContents`` of one read."""
    item: dict[str, Any] = {"uri": content.uri, "mimeType": content.mime_type}
    if isinstance(content.body, bytes):
        item["blob"] = base64.b64encode(content.body).decode("ascii")
    else:
        item["text"] = to_text(content.body)
    return item


def _links(content: Content) -> dict[str, Any]:
    """The item's ``_meta``: what the content carries beside its body, then its links."""
    return {**(content.meta or {}), META_LINKS_KEY: [link.to_json() for link in content.links]}


def read_result(content: Content) -> dict[str, Any]:
    """``resources/read``: one content item; the links in ``_meta``."""
    return {"contents": [_item(content)], "_meta": _links(content)}


def prompt_message(message: Message) -> dict[str, Any]:
    """One ``PromptMessage``: a text block, or the read embedded as a ``resource`` block."""
    if message.resource is not None:
        block = {"type": "resource", "resource": _item(message.resource)}
        block["_meta"] = _links(message.resource)
    else:
        block = {"type": "text", "text": message.text or ""}
    return {"role": message.role, "content": block}


def prompt_result(answer: Answer) -> dict[str, Any]:
    """``prompts/get``: the description of this rendering and its messages in order."""
    return {
        "description": answer.description,
        "messages": [prompt_message(message) for message in answer.messages],
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
