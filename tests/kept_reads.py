"""Reads kept by the namespace, as the tests of each mount's stamp watch them.

``post_read`` asks the endpoint through Django's test client; ``ordinary_read`` the same with
no prepared answer looked up (what every read got before anything was kept); ``answer_kept``
whether the namespace keeps the read with its MCP answer beside it; ``count_reads`` lists the
reads that reached a mount class.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from tmsite.core.types import Content, Request
from tmsite.mcp import prepared
from tmsite.mounts import registry


def post_read(uri: str, rid: int = 1) -> bytes:
    """The endpoint's answer to a ``resources/read`` of ``uri`` (2025-11-25): 200, its body."""
    body = {"jsonrpc": "2.0", "id": rid, "method": "resources/read", "params": {"uri": uri}}
    reply = Client().post(
        "/api/mcp",
        json.dumps(body),
        content_type="application/json",
        headers={"MCP-Protocol-Version": "2025-11-25"},
    )
    assert reply.status_code == 200, reply.content
    return reply.content


def ordinary_read(uri: str, rid: int = 1) -> bytes:
    """The answer built with nothing kept or looked up."""
    saved = prepared.variant
    prepared.variant = lambda *args: None  # type: ignore[assignment]
    try:
        return post_read(uri, rid)
    finally:
        prepared.variant = saved  # type: ignore[assignment]


def answer_kept(uri: str) -> bool:
    """Whether the namespace keeps the read of ``uri`` with its MCP answer beside it."""
    kept = registry.namespace().kept(uri)
    return kept is not None and ("resources/read", "2025-11-25", uri) in kept.answers


def count_reads(monkeypatch: pytest.MonkeyPatch, mount: type[Any]) -> list[str]:
    """One item per read that reaches ``mount`` (its address), from now on."""
    seen: list[str] = []
    original = mount.read

    def counted(self: Any, req: Request) -> Content:
        seen.append(req.text)
        return original(self, req)  # type: ignore[no-any-return]

    monkeypatch.setattr(mount, "read", counted)
    return seen
