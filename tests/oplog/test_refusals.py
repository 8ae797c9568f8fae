"""Over the limit: the exact refusal on each surface, its code, status and headers.

MCP: a JSON-RPC error in HTTP 200 with code -32000, ``data.reason`` ``rate-limited``,
``data.retryAfter`` and the refused URI, in both eras; no ``Retry-After`` (the status is 200).
REST: 429 with ``Retry-After`` and the same fields. Both carry ``RateLimit-Policy`` and
``RateLimit``. ``retryAfter`` is honest: on the fake clock, the very request refused is still
refused a second before it and answered after exactly it.

The page read is a page of the demo static site, served on loopback by the real static server
for each test, so a read that is let through is answered.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from tests.http.conftest import DEMO, demo_door  # noqa: F401  (fixture)
from tests.oplog.conftest import CALLER
from tmsite.callers.clock import FakeClock
from tmsite.mounts import registry

pytestmark = pytest.mark.spec("OP1", "RJ1", "RJ2")

FILE = "tm://tinymachines/fs/docs/index.md"
PAGE = f"tm://tinymachines/http/{DEMO}/notes/solder.html"
PAGE_TEXT = "Solder\nTin and lead, or tin and silver.\n"

MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


@pytest.fixture(autouse=True)
def demo_site(settings: Any, demo_door: str) -> Iterator[None]:  # noqa: F811
    settings.TM_SITES = {DEMO: {"kind": "static", "front_door": demo_door}}
    registry.reset()
    yield
    registry.reset()


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


def rate_limited(reply: Any) -> int:
    """The ``retryAfter`` of a rate-limit refusal (failing on any other answer)."""
    body = reply.json()
    assert "result" not in body, body
    assert body["error"]["code"] == -32000
    assert body["error"]["data"]["reason"] == "rate-limited"
    retry_after: int = body["error"]["data"]["retryAfter"]
    return retry_after


#: (tokens a second, tokens left, what the page costs, the whole seconds it must wait), the
#: last worked out by hand: the fewest whole seconds after which left + seconds × rate ≥ cost.
HONEST_WAITS = [
    pytest.param(1, 0, 4, 4, id="4-short-at-1"),
    pytest.param(1, 1, 4, 3, id="3-short-at-1"),
    pytest.param(0.5, 1, 4, 6, id="3-short-at-0.5"),
    pytest.param(3, 0, 4, 2, id="4-short-at-3-in-1.33s"),
    pytest.param(0.75, 2, 5, 4, id="3-short-at-0.75"),
    pytest.param(2, 3, 4, 1, id="1-short-at-2-in-0.5s"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("rate", "left", "cost", "wait"), HONEST_WAITS)
def test_retry_after_is_honest_over_mcp(
    small_limit: FakeClock, settings: Any, rate: float, left: int, cost: int, wait: int
) -> None:
    settings.TM_RATE_REFILL = rate
    settings.TM_RATE_COSTS = {"http": cost}
    client = Client()
    spend(client, 10 - left)  # a file costs 1 of the burst of 10
    advertised = rate_limited(mcp(client, "resources/read", 1, uri=PAGE))
    # a second short of what it said, the same read is still refused
    small_limit.advance(advertised - 1)
    assert rate_limited(mcp(client, "resources/read", 2, uri=PAGE)) == 1
    # after exactly what it said, the same read is answered
    small_limit.advance(1)
    reply = mcp(client, "resources/read", 3, uri=PAGE).json()
    assert reply["result"]["contents"][0]["uri"] == PAGE, reply
    assert reply["result"]["contents"][0]["text"].startswith(PAGE_TEXT)
    assert advertised == wait


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
    # 2 tokens short at 1 a second: refused a second before, answered after exactly 2
    small_limit.advance(1)
    reply = client.get("/api/v1/resolve", {"uri": PAGE})
    assert reply.status_code == 429
    assert (reply.headers["Retry-After"], reply.json()["retryAfter"]) == ("1", 1)
    small_limit.advance(1)
    reply = client.get("/api/v1/resolve", {"uri": PAGE})
    assert reply.status_code == 200, reply.content
    assert reply.json()["uri"] == PAGE
    assert reply.headers["RateLimit"] == '"tm";r=0;t=10'


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
