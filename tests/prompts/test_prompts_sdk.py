"""The official Python SDK (``mcp`` 2.3) lists, gets and completes both prompts on the live box.

``ClientSession`` over streamable HTTP speaks the initialize era (2025-11-25); ``mcp.Client``
in ``auto`` mode adopts 2026-07-28 by ``server/discover`` and sends ``prompts/get`` with its
``Mcp-Name`` header. Each parses the answers into its own models, so a shape the SDK cannot
read fails here.

Spec: PR1.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client, ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.http.conftest import HOST
from tests.prompts.conftest import PAGE, SOURCE

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.spec("PR1")]

PROMPTS = ["first-session", "explain-address"]


def check(seen: dict[str, Any]) -> None:
    """What both clients must have read, in their own models."""
    assert [p.name for p in seen["list"].prompts] == PROMPTS
    first = seen["list"].prompts[0]
    assert first.arguments is not None
    assert [(a.name, a.required) for a in first.arguments] == [("page", True), ("template", False)]

    walk, page, source = seen["first"].messages
    assert isinstance(walk.content, types.TextContent)
    assert f"5. Read {PAGE}?as=text" in walk.content.text
    assert isinstance(page.content, types.EmbeddedResource)
    assert isinstance(page.content.resource, types.TextResourceContents)
    assert str(page.content.resource.uri) == f"{PAGE}?as=text"
    assert isinstance(source.content, types.EmbeddedResource)
    assert str(source.content.resource.uri) == SOURCE
    assert isinstance(source.content.resource, types.TextResourceContents)
    assert source.content.resource.text.startswith("# The pile")

    ask, embedded = seen["explain"].messages
    assert isinstance(ask.content, types.TextContent)
    assert ask.content.text.startswith(f"Say what {SOURCE} is")
    assert isinstance(embedded.content, types.EmbeddedResource)
    assert embedded.content.meta is not None
    assert any(
        link["rel"] == "tm:renders-as" for link in embedded.content.meta["tinymachines.ai/links"]
    )

    assert seen["complete"].completion.values == [PAGE]
    assert seen["refused"].error.code == -32602
    assert seen["refused"].error.data == {
        "reason": "bad-argument",
        "valid": ["page", "template"],
        "required": ["page"],
    }


def test_client_session_lists_and_gets_both_prompts(box: str) -> None:
    async def scenario() -> dict[str, Any]:
        async with (
            streamable_http_client(box) as (read, write),
            ClientSession(read, write) as session,
        ):
            init = await session.initialize()
            seen: dict[str, Any] = {"init": init, "list": await session.list_prompts()}
            seen["first"] = await session.get_prompt("first-session", {"page": PAGE})
            seen["explain"] = await session.get_prompt("explain-address", {"address": SOURCE})
            seen["complete"] = await session.complete(
                types.PromptReference(type="ref/prompt", name="first-session"),
                {"name": "page", "value": PAGE[:-1]},
            )
            try:
                await session.get_prompt("first-session", {})
            except MCPError as refused:
                seen["refused"] = refused
            return seen

    seen = anyio.run(scenario)
    assert seen["init"].protocol_version == "2025-11-25"
    caps = seen["init"].capabilities
    assert caps.prompts is not None and caps.prompts.list_changed is False
    check(seen)


def test_high_level_client_lists_and_gets_both_prompts_in_2026(box: str) -> None:
    async def scenario() -> dict[str, Any]:
        async with Client(box) as client:
            seen: dict[str, Any] = {
                "version": client.protocol_version,
                "caps": client.server_capabilities,
                "list": await client.list_prompts(),
            }
            seen["first"] = await client.get_prompt("first-session", {"page": PAGE})
            seen["explain"] = await client.get_prompt("explain-address", {"address": SOURCE})
            seen["complete"] = await client.complete(
                types.PromptReference(type="ref/prompt", name="first-session"),
                {"name": "page", "value": PAGE[:-1]},
            )
            try:
                await client.get_prompt("first-session", {})
            except MCPError as refused:
                seen["refused"] = refused
            return seen

    seen = anyio.run(scenario)
    assert seen["version"] == "2026-07-28"
    assert seen["caps"].prompts is not None
    assert seen["list"].ttl_ms == 300_000 and seen["list"].cache_scope == "public"
    check(seen)
    assert f"tm://{HOST}/" in seen["first"].messages[0].content.text
