"""The mcp world: the demo server, probed for real once, recorded as the server ``elements``.

The scenario as an MCP server: ``mcp/elements/`` holds the sub-collection ``tools/`` (and
``resources/``, ``prompts/``, ``map``); the collection is ``tools/`` (leaves only, in declared
order); the leaf is the tool ``get_element``, read as ``application/vnd.tm.tool+json``. The
map is derived (``element/{symbol}``) but no check here reads a map-named path, so no peer is
started by the suite itself once the declaration is stored.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.conformance.worlds import HOST, World
from tmsite.core.types import vnd
from tmsite.mcpclient import Client, ProbeResult, probe
from tmsite.mounts.mcp.mount import McpMount
from tmsite.servers.index import rederive
from tmsite.servers.models import McpServer, ServerDeclaration

ROOT = Path(__file__).resolve().parents[2]
_PROBED: list[ProbeResult] = []


def _probe() -> ProbeResult:
    if not _PROBED:
        with Client.stdio([sys.executable, "-m", "tmsite.demo.mcp_server"], cwd=ROOT) as client:
            _PROBED.append(probe(client))
    return _PROBED[0]


def world(tmp: Path) -> World:
    found = _probe()
    server = McpServer.objects.create(
        name="elements",
        description="The chemical elements.",
        program="elements",
        sources=["the demo dataset"],
        licence_basis="public domain",
        last_outcome="answered",
    )
    McpServer.objects.create(name="koyu", description="never asked", program="elements")
    ServerDeclaration.objects.create(
        server=server,
        asked_at=found.asked_at,
        seconds=found.seconds,
        protocol_version=found.handshake.protocol_version,
        era=found.handshake.era,
        capabilities=found.handshake.capabilities,
        server_info=found.handshake.server_info,
        instructions=found.handshake.instructions or "",
        tools=found.tools,
        resources=found.resources,
        resource_templates=found.resource_templates,
        prompts=found.prompts,
    )
    rederive(server)
    base = f"tm://{HOST}/mcp/elements/"
    tools = [t["name"] for t in found.tools]
    return World(
        mount=McpMount(HOST),
        collection=base + "tools/",
        leaf=base + "tools/get_element",
        typo=base + "tools/get_elemnt",
        hostile={
            base + "tools/..%2f..%2fmap": "not-found",
            base + "tools/get_element%00": "not-found",
            f"tm://{HOST}/mcp/%2e%2e/": "not-found",
            f"tm://{HOST}/mcp/elements%2f..%2f/tools/": "not-found",
            base + "tools/get_element/inputSchema": "not-found",
        },
        first_child=None,
        child_names=tuple(tools),
        leaf_text=None,
        leaf_type=vnd("tool"),
        leaf_pointer=("/inputSchema/required", ["symbol"]),
        sub_parent=base,
        sub_collection="tools/",
        completion=("server", "el", ["elements"]),
        indexed=True,
    )


world.needs_db = True  # type: ignore[attr-defined]
