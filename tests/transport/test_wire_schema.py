"""The schema layer (:mod:`tests.wire_schema`) catches answers that drift from the protocol.

Malformed answers are made the way a drift would make them — a handler that drops a member — and
sent through the same paths every other test's answers take: the live endpoint, ``dispatch``,
a stdio subprocess. Each failure names where it was seen, the method, the revision, and the
member that is wrong.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import wire_schema
from tests.transport.transport_helpers import (
    STATELESS,
    modern_headers,
    modern_request,
    post,
)
from tmsite.mcp import methods, namespace_methods, tools
from tmsite.mcp.protocol import CallContext

pytestmark = pytest.mark.spec("T7", "T10")

ROOT = Path(__file__).resolve().parents[2]
LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def tools_without_input_schema(params: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
    listed = tools.list_tools(params, ctx)
    first, *rest = listed["tools"]
    return {**listed, "tools": [{k: v for k, v in first.items() if k != "inputSchema"}, *rest]}


def read_without_uri(params: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
    read = namespace_methods.read_resource(params, ctx)
    first, *rest = read["contents"]
    return {**read, "contents": [{k: v for k, v in first.items() if k != "uri"}, *rest]}


def test_a_tool_without_input_schema_fails_over_http(
    http: httpx.Client, mcp_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(
        methods.METHODS, "tools/list", methods.Method(tools_without_input_schema, ttl_seconds=300)
    )
    with wire_schema.expected() as found:
        reply = post(http, mcp_url, LIST_TOOLS, headers={"MCP-Protocol-Version": "2025-11-25"})
    assert reply.status == 200
    assert "inputSchema" not in reply.json()["result"]["tools"][0]
    assert found == [
        "wire schema (dispatch): tools/list under 2025-11-25: "
        "result.tools.0.inputSchema: Field required",
        "wire schema (http): tools/list under 2025-11-25: "
        "result.tools.0.inputSchema: Field required",
    ]


def test_a_headerless_request_is_checked_as_2025_03_26(
    http: httpx.Client, mcp_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(methods.METHODS, "tools/list", methods.Method(tools_without_input_schema))
    with wire_schema.expected() as found:
        post(http, mcp_url, LIST_TOOLS)
    assert [f for f in found if f.startswith("wire schema (http)")] == [
        "wire schema (http): tools/list under 2025-03-26: "
        "result.tools.0.inputSchema: Field required"
    ]


def test_a_read_content_without_uri_fails_in_2026(
    http: httpx.Client, mcp_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(
        methods.METHODS, "resources/read", methods.Method(read_without_uri, ttl_seconds=60)
    )
    uri = "tm://tinymachines/"
    with wire_schema.expected() as found:
        reply = post(
            http,
            mcp_url,
            modern_request("resources/read", 5, uri=uri),
            headers=modern_headers("resources/read", uri),
        )
    assert reply.json()["result"]["resultType"] == "complete"
    (over_http,) = [f for f in found if f.startswith("wire schema (http)")]
    assert over_http.startswith(
        f"wire schema (http): resources/read under {STATELESS}: "
        "result.contents.0.TextResourceContents.uri: Field required"
    )


def test_a_direct_dispatch_is_checked_for_its_context(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(
        methods.METHODS, "tools/list", methods.Method(tools_without_input_schema, ttl_seconds=300)
    )
    with wire_schema.expected() as found:
        methods.dispatch("tools/list", {}, CallContext(version=STATELESS))
    assert found == [
        f"wire schema (dispatch): tools/list under {STATELESS}: "
        "result.tools.0.inputSchema: Field required"
    ]


def test_a_stdio_answer_is_checked_under_the_negotiated_version(tmp_path: Path) -> None:
    """A stdio server whose tools/list drops inputSchema, after an initialize at 2025-06-18."""
    script = tmp_path / "drifting_server.py"
    script.write_text(
        "import os, sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'tmsite.settings')\n"
        "import django\n"
        "django.setup()\n"
        "from tmsite.mcp import methods, tools\n"
        "def drifting(params, ctx):\n"
        "    first, *rest = tools.list_tools(params, ctx)['tools']\n"
        "    first = {k: v for k, v in first.items() if k != 'inputSchema'}\n"
        "    return {'tools': [first, *rest]}\n"
        "methods.METHODS['tools/list'] = methods.Method(drifting)\n"
        "from tmsite.mcp.stdio import serve\n"
        "sys.exit(serve(sys.stdin.buffer, sys.stdout.buffer))\n"
    )
    initialize = {
        "jsonrpc": "2.0",
        "id": "i",
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "wire-schema-tests", "version": "1"},
        },
    }
    sent = [json.dumps(initialize).encode(), json.dumps({**LIST_TOOLS, "id": 2}).encode()]
    done = subprocess.run(
        [sys.executable, str(script)],
        input=b"".join(line + b"\n" for line in sent),
        capture_output=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert wire_schema.stdio_problems(sent, done.stdout) == [
        "tools/list under 2025-06-18: result.tools.0.inputSchema: Field required"
    ]


# --- the validator on hand-made answers ---------------------------------------------------------

JSON = "application/json"


def problems(answer: Any, sent: Any, headers: dict[str, str] | None = None) -> list[str]:
    content = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
    return wire_schema.http_problems(headers or {}, json.dumps(sent).encode(), JSON, content)


def test_a_2026_error_is_checked_against_the_model_of_its_code() -> None:
    refused = {
        "jsonrpc": "2.0",
        "id": 3,
        "error": {"code": -32022, "message": "Unsupported.", "data": {"requested": "1999-01-01"}},
    }
    sent = {"jsonrpc": "2.0", "id": 3, "method": "ping"}
    assert problems(refused, sent, {"MCP-Protocol-Version": "1999-01-01"}) == [
        "ping under 2026-07-28: error.data.supported: Field required"
    ]
    assert problems(refused, sent, {"MCP-Protocol-Version": "2025-11-25"}) == []


def test_an_answer_to_a_request_naming_two_revisions_holds_in_both() -> None:
    sent = modern_request("tools/list", 4)
    answer = {"jsonrpc": "2.0", "id": 4, "result": {"tools": []}}
    assert problems(answer, sent, {"MCP-Protocol-Version": "2025-11-25"}) == [
        "tools/list under 2026-07-28: result.cacheScope: Field required; "
        "result.resultType: Field required; result.ttlMs: Field required"
    ]


def test_results_must_answer_a_request_the_revision_defines() -> None:
    sent = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert problems({"jsonrpc": "2.0", "id": 2, "result": {}}, sent) == [
        "(no request) under 2025-03-26: a result whose id 2 matches no request sent"
    ]
    modern = modern_request("ping", 1)
    answer = {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete"}}
    assert problems(answer, modern, {"MCP-Protocol-Version": STATELESS}) == [
        "ping under 2026-07-28: a result, but 2026-07-28 defines no such request"
    ]


def test_a_batch_answer_is_paired_by_id() -> None:
    sent = [
        {"jsonrpc": "2.0", "id": "a", "method": "ping"},
        {"jsonrpc": "2.0", "id": "b", "method": "tools/list"},
    ]
    answer = [
        {"jsonrpc": "2.0", "id": "b", "result": {"tools": [{"name": "x"}]}},
        {"jsonrpc": "2.0", "id": "a", "result": {}},
    ]
    assert problems(answer, sent) == [
        "tools/list under 2025-03-26: result.tools.0.inputSchema: Field required"
    ]


def test_an_event_stream_is_read_event_by_event() -> None:
    sent = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    good = json.dumps({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    bad = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "x"}]}})
    stream = f"event: message\ndata: {good}\n\nid: 2\ndata: {bad}\n\n".encode()
    found = wire_schema.http_problems(
        {"MCP-Protocol-Version": "2025-11-25"},
        json.dumps(sent).encode(),
        "text/event-stream",
        stream,
    )
    assert found == ["tools/list under 2025-11-25: result.tools.0.inputSchema: Field required"]


def test_only_what_is_not_a_jsonrpc_message_is_passed_over() -> None:
    sent = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    for content_type, content in [
        (JSON, b""),
        (JSON, b"{not json"),
        (JSON, b'{"detail": "Not Found"}'),
        ("text/html", b"<h1>Bad Request (400)</h1>"),
    ]:
        assert wire_schema.http_problems({}, None, content_type, content) == [], content
    assert problems({"jsonrpc": "2.0", "id": 1}, sent) == [
        "ping under 2025-03-26: result: Field required"
    ]
    assert problems({"id": 1, "result": {}}, sent) == [
        "ping under 2025-03-26: jsonrpc: Field required"
    ]
    assert problems({"jsonrpc": "2.0", "error": {"code": "x"}}, sent) == [
        "(no request) under 2025-03-26: error.code: Input should be a valid integer; "
        "error.message: Field required"
    ]


def test_types_are_the_schema_s_not_what_they_coerce_to() -> None:
    sent = {"jsonrpc": "2.0", "id": 1, "method": "completion/complete"}
    answer = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"completion": {"values": ["docs/"], "total": "1", "hasMore": "false"}},
    }
    assert problems(answer, sent, {"MCP-Protocol-Version": "2025-11-25"}) == [
        "completion/complete under 2025-11-25: result.completion.hasMore: Input should be a "
        "valid boolean; result.completion.total: Input should be a valid integer"
    ]


def test_stdout_lines_that_are_not_messages_fail() -> None:
    sent = [b'{"jsonrpc":"2.0","id":1,"method":"ping"}']
    assert wire_schema.stdio_problems(
        sent, b'stray print\n{"jsonrpc":"2.0","id":1,"result":{}}\n'
    ) == ["(stdout) a line that is not a JSON-RPC message: b'stray print'"]
