"""The 2025-era official SDK clients drive the server: the Python SDK 1.x (``ClientSession``) and
the TypeScript SDK 1.x (``Client``), each a real subprocess, over Streamable HTTP against the box
served by ``tmsite.serve.app`` on loopback and over stdio against ``manage.py mcp_stdio``.

Each client does what a host does first: the ``initialize`` handshake (the version it negotiates
is the newest of the ``initialize`` era), ``tools/list``, ``resources/read`` of a file of a
checkout of the test's own, ``resources/templates/list`` (all of it, as the wire carries it), and
a read the server refuses, whose code and data reach the client whole.

Spec: T1, T7, T10, T11, RJ1, RJ2.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tests.clients import sdk_clients
from tests.clients.sdk_clients import HOST
from tmsite.mcp.protocol import LATEST_INITIALIZE_VERSION
from tmsite.mounts import registry
from tmsite.search import index

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.spec("T1", "T7", "T10", "T11", "RJ1", "RJ2"),
]

TOOLS = ["overview", "piece", "licensing", "resolve", "search", "propose"]
FS = f"tm://{HOST}/fs"


def templates_on_the_wire(url: str) -> list[str]:
    """``resources/templates/list`` as a plain HTTP POST answers it: what a client must show."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "resources/templates/list"}
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": LATEST_INITIALIZE_VERSION,
    }
    answer = httpx.post(url, content=json.dumps(body), headers=headers, timeout=30).json()
    return [t["uriTemplate"] for t in answer["result"]["resourceTemplates"]]


@pytest.mark.parametrize("transport", ["http", "stdio"])
@pytest.mark.parametrize("client", sdk_clients.CLIENTS)
def test_the_handshake_the_listings_a_read_and_a_refusal(
    client: str, transport: str, mcp_endpoint: str, box: Path
) -> None:
    config = {
        "scenario": "basics",
        **sdk_clients.where(transport, mcp_endpoint, box),
        "read": f"{FS}/docs/a.md",
        "refused": f"{FS}/docs/nope.md",
    }
    [seen] = sdk_clients.run(client, config)
    assert seen["event"] == "basics"
    assert seen["protocolVersion"] == LATEST_INITIALIZE_VERSION == "2025-11-25"
    assert seen["serverInfo"]["name"] == HOST
    assert seen["capabilities"]["tools"] is not None
    assert seen["tools"] == TOOLS
    assert seen["read"] == [
        {"uri": f"{FS}/docs/a.md", "mimeType": "text/markdown", "text": "# a\n\nThe first file.\n"}
    ]
    wire = templates_on_the_wire(mcp_endpoint)
    assert seen["templates"] == wire
    assert f"{FS}/{{+path}}" in wire
    assert seen["refused"] == {
        "code": -32002,
        "message": "no such file",
        "data": {
            "reason": "not-found",
            "uri": f"{FS}/docs/nope.md",
            "nearest": [f"{FS}/docs/a.md", f"{FS}/docs/guide/"],
        },
    }


@pytest.mark.parametrize("client", sdk_clients.CLIENTS)
def test_a_denied_file_is_refused_to_the_client_as_not_offered(
    client: str, mcp_endpoint: str, box: Path
) -> None:
    config = {
        "scenario": "basics",
        "url": mcp_endpoint,
        "read": f"{FS}/docs/guide/b.md",
        "refused": f"{FS}/docs/.env",
    }
    [seen] = sdk_clients.run(client, config)
    assert seen["read"][0]["text"] == "# b\n"
    assert seen["refused"] == {
        "code": -32002,
        "message": "it exists or not; either way it is not offered",
        "data": {"reason": "denied", "uri": f"{FS}/docs/.env"},
    }


@pytest.mark.spec("SRCH1", "SRCH2")
@pytest.mark.parametrize("client", sdk_clients.CLIENTS)
def test_search_answers_structured_content_its_output_schema_admits(
    client: str, mcp_endpoint: str, box: Path
) -> None:
    index.sync({"fs": registry.namespace().mounts["fs"]})
    [seen] = sdk_clients.run(
        client, {"scenario": "search", "url": mcp_endpoint, "query": "first file"}
    )
    assert seen["event"] == "search"
    assert seen["isError"] is False  # the SDK checked structuredContent against the schema
    [hit] = seen["structured"]["hits"]
    assert hit["document"] == f"{FS}/docs/a.md"
    assert hit["uri"].startswith(f"{FS}/docs/a.md")
    assert "«first»" in hit["snippet"] and "«file»" in hit["snippet"]
