"""Over the limit: the exact refusal on each surface, its code, status and headers.

MCP: a JSON-RPC error in HTTP 200 with code -32000, ``data.reason`` ``rate-limited``,
``data.retryAfter`` and the refused URI, in both eras; no ``Retry-After`` (the status is 200).
REST: 429 with ``Retry-After`` and the same fields. Both carry ``RateLimit-Policy`` and
``RateLimit``. Waiting ``retryAfter`` seconds on the fake clock lets the request through.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from tests.oplog.conftest import CALLER
from tmsite.oplog.clock import FakeClock

FILE = "tm://tinymachines/fs/docs/index.md"
PAGE = "tm://tinymachines/http/tinymachines/docs/"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def mcp(client: Client, method: str, rid: int = 1, modern: bool = False, **params: Any) -> Any:
    headers: dict[str, str] = {"X-Forwarded-For": CALLER}
    if modern:
        params["_meta"] = MODERN_META
        headers.update({"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method})
        if "uri" in params:
            headers["Mcp-Name"] = params["uri"]
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    return client.post(
        "/api/mcp", json.dumps(body), content_type="application/json", headers=headers
    )


def spend(client: Client, tokens: int) -> None:
    for i in range(tokens):
        assert "result" in mcp(client, "resources/read", 100 + i, uri=FILE).json()


@pytest.mark.django_db
@pytest.mark.parametrize("modern", [False, True], ids=["2025", "2026"])
def test_mcp_refusal_is_an_rpc_error_in_http_200(small_limit: FakeClock, modern: bool) -> None:
    client = Client()
    spend(client, 9)  # 1 token left; a page costs 4
    reply = mcp(client, "resources/read", 7, modern=modern, uri=PAGE)
    assert reply.status_code == 200
    body = reply.json()
    assert body["id"] == 7
    assert body["error"]["code"] == -32000
    assert body["error"]["data"] == {"reason": "rate-limited", "uri": PAGE, "retryAfter": 3}
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    assert reply.headers["RateLimit-Policy"] == '"tm";q=10;w=10'
    assert reply.headers["RateLimit"] == '"tm";r=1;t=3'
    assert "Retry-After" not in reply.headers
    # a file still fits in what is left
    assert "result" in mcp(client, "resources/read", 8, modern=modern, uri=FILE).json()


@pytest.mark.django_db
def test_retry_after_is_honest_over_mcp(small_limit: FakeClock) -> None:
    client = Client()
    spend(client, 10)
    refused = mcp(client, "resources/read", 1, uri=PAGE).json()["error"]["data"]
    assert refused["retryAfter"] == 4
    small_limit.advance(refused["retryAfter"] - 1)
    assert mcp(client, "resources/read", 2, uri=PAGE).json()["error"]["data"]["retryAfter"] == 1
    small_limit.advance(1)
    reply = mcp(client, "resources/read", 3, uri=PAGE).json()
    assert reply.get("error", {}).get("data", {}).get("reason") != "rate-limited"


@pytest.mark.django_db
def test_every_method_spends_and_tools_cost_by_name(small_limit: FakeClock) -> None:
    client = Client()
    mcp(client, "tools/list", 1)
    overview = mcp(client, "tools/call", 2, name="licensing", arguments={})
    assert overview.headers["RateLimit"] == '"tm";r=8;t=2'
    reply = mcp(client, "tools/call", 3, name="resolve", arguments={"uri": PAGE})
    assert reply.headers["RateLimit"] == '"tm";r=4;t=6'


@pytest.mark.django_db
def test_rest_refusal_is_429_with_retry_after(small_limit: FakeClock) -> None:
    client = Client(headers={"X-Forwarded-For": CALLER})
    spend(client, 8)  # the same bucket as MCP: one surface, two spellings
    reply = client.get("/api/v1/resolve", {"uri": PAGE})
    assert reply.status_code == 429
    assert reply.headers["Retry-After"] == "2"
    assert reply.headers["RateLimit-Policy"] == '"tm";q=10;w=10'
    assert reply.headers["RateLimit"] == '"tm";r=2;t=2'
    body = reply.json()
    assert isinstance(body.pop("error"), str)
    assert body == {"reason": "rate-limited", "uri": PAGE, "retryAfter": 2}
    small_limit.advance(2)
    reply = client.get("/api/v1/resolve", {"uri": FILE})
    assert reply.status_code == 200
    assert reply.headers["RateLimit"] == '"tm";r=3;t=7'


@pytest.mark.django_db
def test_rest_overview_costs_four(small_limit: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    client = Client(headers={"X-Forwarded-For": CALLER})
    reply = client.get("/api/v1/templates")
    assert reply.headers["RateLimit"] == '"tm";r=9;t=1'
    reply = client.get("/api/v1/licensing")
    assert reply.headers["RateLimit"] == '"tm";r=8;t=2'


@pytest.mark.django_db
def test_the_box_itself_is_never_limited(small_limit: FakeClock) -> None:
    """Loopback with no forwarding header: the box's own calls; no bucket, no headers."""
    client = Client()
    for i in range(30):
        body = {"jsonrpc": "2.0", "id": i, "method": "ping"}
        reply = client.post("/api/mcp", json.dumps(body), content_type="application/json")
        assert reply.json()["result"] == {}
    assert "RateLimit" not in reply.headers
    assert "RateLimit-Policy" not in reply.headers


@pytest.mark.django_db
def test_a_direct_caller_is_keyed_by_its_own_address(small_limit: FakeClock) -> None:
    client = Client(REMOTE_ADDR="192.0.2.50")
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    for _ in range(10):
        client.post("/api/mcp", body, content_type="application/json")
    refused = client.post("/api/mcp", body, content_type="application/json").json()
    assert refused["error"]["code"] == -32000
    assert refused["error"]["data"] == {"reason": "rate-limited", "retryAfter": 1}
    # a forwarded header from an untrusted peer is ignored: same caller, same bucket
    other = Client(REMOTE_ADDR="192.0.2.50", headers={"X-Forwarded-For": "198.51.100.1"})
    again = other.post("/api/mcp", body, content_type="application/json").json()
    assert again["error"]["data"]["reason"] == "rate-limited"


@pytest.mark.django_db
def test_off_switch(small_limit: FakeClock, settings: Any) -> None:
    settings.TM_RATE_LIMIT = False
    client = Client(headers={"X-Forwarded-For": CALLER})
    for _ in range(15):
        reply = client.get("/api/v1/templates")
        assert reply.status_code == 200
    assert "RateLimit" not in reply.headers


@pytest.mark.django_db
def test_a_batch_spends_per_message(small_limit: FakeClock) -> None:
    client = Client(headers={"X-Forwarded-For": CALLER})
    batch = [
        {"jsonrpc": "2.0", "id": i, "method": "resources/read", "params": {"uri": PAGE}}
        for i in range(3)
    ]
    reply = client.post("/api/mcp", json.dumps(batch), content_type="application/json")
    answers = reply.json()
    assert [("error" in a and a["error"]["code"]) for a in answers][2] == -32000
    assert answers[2]["error"]["data"] == {"reason": "rate-limited", "uri": PAGE, "retryAfter": 2}
    assert reply.headers["RateLimit"] == '"tm";r=2;t=2'
