"""The official Python SDK (``mcp`` 2.3) against the live endpoint and the stdio command.

* ``ClientSession`` over the SDK's streamable HTTP client: the initialize handshake, ping and
  the listings, as an initialize-era client does it (the SDK sends no version header on the
  first request, then the negotiated one, opens a GET stream that gets 405, and posts
  ``notifications/initialized`` that gets 202).
* ``mcp.Client`` in ``auto`` mode: it probes ``server/discover`` at 2026-07-28 and adopts it, then
  sends every request with the per-request ``_meta`` and the ``Mcp-Method``/``Mcp-Name`` headers.
* ``mcp.Client`` in ``legacy`` mode, and both modes over stdio against ``manage.py mcp_stdio``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ["overview", "piece", "licensing", "resolve", "search", "propose"]

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.spec("T7", "T11", "T12")]


def stdio_server() -> StdioServerParameters:
    """``mcp_stdio`` with this run's environment (its own ``TM_VAR_DIR``), not the SDK's default
    one, which would serve, and write, the checkout's ``var/``."""
    return StdioServerParameters(
        command=sys.executable, args=["manage.py", "mcp_stdio"], cwd=ROOT, env=dict(os.environ)
    )


def test_client_session_over_streamable_http(mcp_url: str, streams_served: bool) -> None:
    async def scenario() -> dict[str, Any]:
        async with (
            streamable_http_client(mcp_url) as (read, write),
            ClientSession(read, write) as session,
        ):
            init = await session.initialize()
            await session.send_ping()
            tools = await session.list_tools()
            resources = await session.list_resources()
            root = await session.read_resource("tm://tinymachines/")
            return {"init": init, "tools": tools, "resources": resources, "root": root}

    seen = anyio.run(scenario)
    init = seen["init"]
    assert init.protocol_version == "2025-11-25"
    assert init.server_info.name == "tinymachines"
    assert init.capabilities.tools is not None and init.capabilities.tools.list_changed is False
    assert init.capabilities.resources is not None
    assert init.capabilities.resources.subscribe is streams_served
    assert init.capabilities.completions is not None
    assert init.instructions is not None and "tm://tinymachines/" in init.instructions
    assert [t.name for t in seen["tools"].tools] == TOOLS
    assert "tm://tinymachines/" in [str(r.uri) for r in seen["resources"].resources]
    assert str(seen["root"].contents[0].uri) == "tm://tinymachines/"


def test_high_level_client_negotiates_2026_07_28_by_discover(mcp_url: str) -> None:
    async def scenario() -> dict[str, Any]:
        async with Client(mcp_url) as client:
            tools = await client.list_tools()
            templates = await client.list_resource_templates()
            root = await client.read_resource("tm://tinymachines/")
            return {
                "version": client.protocol_version,
                "info": client.server_info,
                "caps": client.server_capabilities,
                "instructions": client.instructions,
                "tools": tools,
                "templates": templates,
                "root": root,
            }

    seen = anyio.run(scenario)
    assert seen["version"] == "2026-07-28"
    assert seen["info"] is not None and seen["info"].name == "tinymachines"
    assert seen["caps"].tools is not None
    assert "tm://tinymachines/fs/docs/mcp.md" in seen["instructions"]
    assert [t.name for t in seen["tools"].tools] == TOOLS
    assert seen["templates"].resource_templates
    assert str(seen["root"].contents[0].uri) == "tm://tinymachines/"


@pytest.mark.filterwarnings("ignore:ping is removed as of 2026-07-28")
def test_high_level_client_in_legacy_mode(mcp_url: str) -> None:
    async def scenario() -> tuple[str, list[str]]:
        async with Client(mcp_url, mode="legacy") as client:
            await client.send_ping()
            tools = await client.list_tools()
            return client.protocol_version, [t.name for t in tools.tools]

    version, names = anyio.run(scenario)
    assert version == "2025-11-25"
    assert names == TOOLS


def test_sdk_stdio_client_session_against_manage_py() -> None:
    async def scenario() -> tuple[str, list[str]]:
        async with (
            stdio_client(stdio_server()) as (read, write),
            ClientSession(read, write) as session,
        ):
            init = await session.initialize()
            await session.send_ping()
            tools = await session.list_tools()
            return init.protocol_version, [t.name for t in tools.tools]

    version, names = anyio.run(scenario)
    assert version == "2025-11-25"
    assert names == TOOLS


def test_sdk_high_level_client_over_stdio_goes_stateless() -> None:
    async def scenario() -> tuple[str, str | None, list[str]]:
        async with Client(stdio_server()) as client:
            tools = await client.list_tools()
            info = client.server_info
            return (
                client.protocol_version,
                info.name if info else None,
                [t.name for t in tools.tools],
            )

    version, name, names = anyio.run(scenario)
    assert version == "2026-07-28"
    assert name == "tinymachines"
    assert names == TOOLS
