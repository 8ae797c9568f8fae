"""What clients display, over real loopback HTTP: serverInfo, icons, tool hints, the map's metadata.

The icons are fetched from the URLs the server names, on its own origin; every answer is
validated against the protocol's models for both eras it is served in.
"""

from __future__ import annotations

import hashlib
import json
import struct
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp_types import _v2025_11_25 as v2025
from mcp_types import _v2026_07_28 as v2026
from mcp_types.methods import validate_server_result

from tests.transport.transport_helpers import STATELESS, modern_headers, modern_request, post
from tmsite import icon

pytestmark = pytest.mark.spec("T9", "T10", "TL1", "NS7")

SVG = icon.DIRECTORY / "icon.svg"
PNG = icon.DIRECTORY / "icon.png"
HELP = "tm://tinymachines/fs/docs/mcp.md"


@pytest.fixture
def origin(live_server: Any, settings: Any) -> str:
    """The live server is the box's public front door."""
    settings.TM_PUBLIC_URL = live_server.url
    return str(live_server.url)


def initialize(http: httpx.Client, url: str) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {}},
    }
    reply = post(http, url, body)
    assert reply.status == 200, reply.content
    result: dict[str, Any] = reply.json()["result"]
    return result


def call(http: httpx.Client, url: str, method: str, era: str, **params: Any) -> dict[str, Any]:
    """One request in ``era``: the 2025-11-25 header, or a stateless 2026-07-28 request."""
    if era == "2025-11-25":
        body = {"jsonrpc": "2.0", "id": 2, "method": method, "params": params}
        reply = post(http, url, body, headers={"MCP-Protocol-Version": era})
    else:
        name = params.get("uri") or params.get("name")
        headers = modern_headers(method, name)
        reply = post(http, url, modern_request(method, 2, **params), headers=headers)
    assert reply.status == 200, reply.content
    result: dict[str, Any] = reply.json()["result"]
    validate_server_result(method, era, result)
    return result


def test_server_info_says_what_the_box_is_where_it_is_and_shows_its_icon(
    http: httpx.Client, origin: str
) -> None:
    url = f"{origin}/api/mcp"
    info = initialize(http, url)["serverInfo"]
    model = v2025.Implementation.model_validate(info)
    assert model.website_url == info["websiteUrl"] == f"{origin}/"
    assert model.description is not None and "tm://" in model.description
    assert info["icons"] == [
        {"src": f"{origin}/icon.svg", "mimeType": "image/svg+xml", "sizes": ["any"]},
        {"src": f"{origin}/icon.png", "mimeType": "image/png", "sizes": ["256x256"]},
    ]
    discovered = call(http, url, "server/discover", STATELESS)
    meta_info = discovered["_meta"]["io.modelcontextprotocol/serverInfo"]
    assert meta_info == info, "one serverInfo in both eras"
    assert v2026.Implementation.model_validate(meta_info).icons is not None


def test_the_icons_are_served_by_the_box_on_its_own_origin(http: httpx.Client, origin: str) -> None:
    info = initialize(http, f"{origin}/api/mcp")["serverInfo"]
    files = {"image/svg+xml": SVG, "image/png": PNG}
    for entry in info["icons"]:
        assert entry["src"].startswith(f"{origin}/"), "same origin as the endpoint"
        reply = http.get(entry["src"])
        assert reply.status_code == 200
        assert reply.headers["content-type"] == entry["mimeType"]
        assert reply.headers["x-content-type-options"] == "nosniff"
        assert reply.headers["content-security-policy"].startswith("default-src 'none'")
        expected = files[entry["mimeType"]].read_bytes()
        assert hashlib.sha256(reply.content).digest() == hashlib.sha256(expected).digest()
        again = http.get(entry["src"], headers={"If-None-Match": reply.headers["etag"]})
        assert again.status_code == 304
    png = http.get(f"{origin}/icon.png").content
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    assert [f"{width}x{height}"] == info["icons"][1]["sizes"], "the sizes the PNG really has"
    svg = http.get(f"{origin}/icon.svg").text
    assert svg.startswith("<svg ") and "<script" not in svg


def test_the_png_is_what_the_svg_draws() -> None:
    """``scripts/make_icon.py --check``, as a real child process: the committed PNG is current."""
    script = Path(__file__).resolve().parents[2] / "scripts" / "make_icon.py"
    done = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("era", ["2025-11-25", STATELESS])
def test_tools_carry_the_icon_and_hints_that_are_true(
    http: httpx.Client, origin: str, era: str
) -> None:
    url = f"{origin}/api/mcp"
    server_icons = initialize(http, url)["serverInfo"]["icons"]
    tools = call(http, url, "tools/list", era)["tools"]
    model = (v2025 if era == "2025-11-25" else v2026).Tool
    hints = {}
    for tool in tools:
        parsed = model.model_validate(tool)
        assert tool["icons"] == server_icons
        assert parsed.annotations is not None
        # Only propose changes anything: it keeps a proposal (an identical one is counted).
        assert parsed.annotations.read_only_hint is (tool["name"] != "propose")
        assert parsed.annotations.destructive_hint is False
        assert parsed.annotations.idempotent_hint is True
        hints[tool["name"]] = parsed.annotations.open_world_hint
    # overview and piece probe the pieces' public URLs; resolve runs other servers' tools
    # through the mcp mount; licensing reads the box's own record; search asks the box's own
    # index; propose keeps its proposal on the box.
    assert hints == {
        "overview": True,
        "piece": True,
        "licensing": False,
        "resolve": True,
        "search": False,
        "propose": False,
    }


@pytest.mark.parametrize("era", ["2025-11-25", STATELESS])
def test_the_map_gives_sizes_times_and_who_the_starting_points_are_for(
    http: httpx.Client, origin: str, era: str, settings: Any
) -> None:
    url = f"{origin}/api/mcp"
    result = call(http, url, "resources/list", era)
    model = (v2025 if era == "2025-11-25" else v2026).Resource
    root, help_doc = result["resources"][:2]
    assert root["uri"] == "tm://tinymachines/" and help_doc["uri"] == HELP
    assert root["annotations"] == {"audience": ["user", "assistant"], "priority": 1.0}
    path = settings.TM_CHECKOUT / "docs" / "mcp.md"
    mtime = datetime.fromtimestamp(int(path.stat().st_mtime), UTC)
    assert help_doc["annotations"] == {
        "audience": ["user", "assistant"],
        "priority": 0.9,
        "lastModified": mtime.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    assert help_doc["size"] == len(path.read_bytes()) and help_doc["mimeType"] == "text/markdown"
    for item in result["resources"]:
        parsed = model.model_validate(item)
        if "annotations" in item:
            assert parsed.annotations is not None
            if "lastModified" in item["annotations"]:
                assert parsed.annotations.last_modified is not None
                datetime.fromisoformat(parsed.annotations.last_modified)
    docs = next(item for item in result["resources"] if item["uri"].endswith("/fs/docs/"))
    docs_mtime = datetime.fromtimestamp(int(path.parent.stat().st_mtime), UTC)
    assert docs["annotations"] == {"lastModified": docs_mtime.strftime("%Y-%m-%dT%H:%M:%SZ")}
    read = call(http, url, "resources/read", era, uri=HELP)
    assert len(read["contents"][0]["text"].encode()) == help_doc["size"]
    listed = json.loads(
        call(http, url, "resources/read", era, uri=HELP[: -len("mcp.md")])["contents"][0]["text"]
    )
    child = next(c for c in listed["children"] if c["uri"] == HELP)
    assert child["size"] == help_doc["size"]
    assert child["annotations"]["lastModified"] == help_doc["annotations"]["lastModified"]
