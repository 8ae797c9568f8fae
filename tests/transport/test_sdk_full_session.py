"""A whole session of the official SDK's ``ClientSession`` against the live endpoint.

Initialize, every tool called (overview and piece probe real servers on loopback, never the
public hosts), every page of ``resources/list``, the templates, a read and a completion — each
answer checked against what the server itself advertises (output schemas) and reads.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client

from tmsite.operations import pieces, probes

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.spec("T12", "TL1", "NS7")]


class _Answers(BaseHTTPRequestHandler):
    def do_HEAD(self) -> None:
        self.send_response(200 if self.path == "/up" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture
def loopback_pieces(tmp_path: Path, settings: Any) -> Iterator[str]:
    """The shipped pieces, their public URLs moved to a server on loopback (one up, one 404)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    record = json.loads((ROOT / "data" / "pieces.json").read_text())
    hosted = [p for p in record["pieces"] if p["public_url"] is not None]
    hosted[0]["public_url"] = f"{base}/up"
    hosted[1]["public_url"] = f"{base}/missing"
    for piece in hosted[2:]:
        piece["public_url"] = None
        piece["not_hosted_because"] = "not probed in this test"
    path = tmp_path / "pieces.json"
    path.write_text(json.dumps(record))
    settings.TM_PIECES_FILE = path
    settings.TM_PROBE_TIMEOUT = 2.0
    pieces.clear_cache()
    probes.clear_cache()
    yield hosted[0]["key"]
    server.shutdown()
    probes.clear_cache()


def test_a_whole_client_session(live_server: Any, loopback_pieces: str) -> None:
    url = f"{live_server.url}/api/mcp"

    async def scenario() -> dict[str, Any]:
        async with (
            streamable_http_client(url) as (read, write),
            ClientSession(read, write) as session,
        ):
            seen: dict[str, Any] = {"init": await session.initialize()}
            seen["tools"] = (await session.list_tools()).tools
            seen["calls"] = {
                "overview": await session.call_tool("overview", {}),
                "piece": await session.call_tool("piece", {"key": loopback_pieces}),
                "licensing": await session.call_tool("licensing", {}),
                "resolve": await session.call_tool(
                    "resolve", {"uri": "tm://tinymachines/fs/docs/mcp.md?as=stat"}
                ),
                "unknown piece": await session.call_tool("piece", {"key": "nope"}),
            }
            pages = []
            cursor = None
            while True:
                params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                page = await session.list_resources(params=params)
                pages.append(page)
                cursor = page.next_cursor
                if cursor is None:
                    break
            seen["pages"] = pages
            seen["templates"] = (await session.list_resource_templates()).resource_templates
            seen["read"] = await session.read_resource("tm://tinymachines/fs/docs/mcp.md")
            seen["complete"] = await session.complete(
                types.ResourceTemplateReference(
                    type="ref/resource", uri="tm://tinymachines/fs/{+path}"
                ),
                {"name": "path", "value": "docs/m"},
            )
            return seen

    seen = anyio.run(scenario)
    assert seen["init"].protocol_version == "2025-11-25"

    schemas = {tool.name: tool.output_schema for tool in seen["tools"]}
    for name, result in seen["calls"].items():
        if name == "unknown piece":
            continue
        assert result.is_error is False, name
        jsonschema.validate(result.structured_content, schemas[name])
        assert json.loads(result.content[0].text) == result.structured_content

    overview = seen["calls"]["overview"].structured_content
    states = {p["key"]: p["status"]["reachability"] for p in overview["pieces"]}
    assert states[loopback_pieces] == "up"
    assert list(states.values()).count("down") == 1
    assert overview["up"] == 1 and overview["probed"] == 2 and overview["total"] == 6

    assert seen["calls"]["piece"].structured_content["status"]["reachability"] == "up"
    stat = json.loads(seen["calls"]["resolve"].structured_content["text"])
    assert stat["path"] == "docs/mcp.md" and stat["mimeType"] == "text/markdown"

    refused = seen["calls"]["unknown piece"]
    assert refused.is_error is True
    body = json.loads(refused.content[0].text)
    assert body["reason"] == "not-found" and "chip-api" in body["valid"]

    listed = [str(r.uri) for page in seen["pages"] for r in page.resources]
    assert len(listed) == len(set(listed)), "no resource twice across pages"
    assert "tm://tinymachines/" in listed and "tm://tinymachines/fs/docs/" in listed
    leaves = [uri for uri in listed if not uri.endswith("/")]
    assert leaves == ["tm://tinymachines/fs/docs/mcp.md", "tm://tinymachines/manifest"], (
        "the map: collections, the help document and single addresses"
    )
    root, help_doc = seen["pages"][0].resources[:2]
    assert str(root.uri) == "tm://tinymachines/" and str(help_doc.uri) == leaves[0]
    assert root.annotations is not None and help_doc.annotations is not None
    assert root.annotations.audience == help_doc.annotations.audience == ["user", "assistant"]
    assert (root.annotations.priority, help_doc.annotations.priority) == (1.0, 0.9)
    mtime = int((ROOT / "docs" / "mcp.md").stat().st_mtime)
    assert help_doc.annotations.last_modified == (
        datetime.fromtimestamp(mtime, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    )

    templates = {t.uri_template for t in seen["templates"]}
    assert {"tm://", "tm://tinymachines/", "tm://tinymachines/fs/{+path}"} <= templates
    assert all(t.title and t.description for t in seen["templates"])

    content = seen["read"].contents[0]
    assert content.mime_type == "text/markdown"
    assert isinstance(content, types.TextResourceContents)
    assert help_doc.size == len(content.text.encode()), "the map's size is the read's bytes"
    assert content.text == (ROOT / "docs" / "mcp.md").read_text()

    assert seen["complete"].completion.values == ["docs/mcp.md"]
