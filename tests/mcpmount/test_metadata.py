"""What the mcp mount lists of a declaration: when it was asked for, and each item's size.

No peer runs: the declaration is a record, as a probe leaves it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tests.mcpmount.conftest import BASE
from tmsite.core.parts import dumps
from tmsite.mcp.convert import resource
from tmsite.mounts.namespace import Namespace
from tmsite.servers.models import McpServer, ServerDeclaration

pytestmark = [pytest.mark.django_db, pytest.mark.spec("MCP", "NS7")]

ASKED = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
TOOL = {
    "name": "get_élément",
    "description": "One element, by symbol.",
    "inputSchema": {"type": "object", "properties": {"symbol": {"type": "string"}}},
}


@pytest.fixture
def declared() -> McpServer:
    server = McpServer.objects.create(name="elements", transport="stdio", program="elements")
    ServerDeclaration.objects.create(
        server=server,
        asked_at=datetime(2026, 1, 1, tzinfo=UTC),
        seconds=0.1,
        protocol_version="2025-11-25",
        era="initialize",
        tools=[],
    )
    ServerDeclaration.objects.create(
        server=server,
        asked_at=ASKED,
        seconds=0.1,
        protocol_version="2025-11-25",
        era="initialize",
        tools=[TOOL],
    )
    return server


def test_listings_date_what_was_declared_by_the_latest_declaration(
    ns: Namespace, declared: McpServer
) -> None:
    stamp = "2026-03-04T05:06:07Z"
    servers: Any = ns.read(BASE).body
    assert servers["children"][0]["annotations"] == {"lastModified": stamp}
    sections: Any = ns.read(f"{BASE}elements/").body
    tools = next(c for c in sections["children"] if c["name"] == "tools/")
    assert tools["annotations"] == {"lastModified": stamp}
    listed: Any = ns.read(f"{BASE}elements/tools/").body
    (item,) = listed["children"]
    assert item["annotations"] == {"lastModified": stamp}
    read = ns.read(f"{BASE}elements/tools/get_élément")
    assert item["size"] == len(dumps(read.body).encode()) == len(dumps(TOOL).encode())
    stat: Any = ns.read(f"{BASE}elements/tools/get_élément?as=stat").body
    assert stat["size"] == item["size"], "the stat and the listing agree on the bytes"
    on_map = {e.uri: resource(e) for e in ns.resource_map(None).entries}
    assert on_map[f"{BASE}elements/"]["annotations"] == {"lastModified": stamp}
    assert on_map[f"{BASE}elements/tools/"]["annotations"] == {"lastModified": stamp}


def test_a_server_never_answered_has_no_date(ns: Namespace, db: None) -> None:
    McpServer.objects.create(name="silent", transport="stdio", program="elements")
    servers: Any = ns.read(BASE).body
    assert "annotations" not in servers["children"][0]
