"""A refused proposal costs what a cheap refusal costs; a kept one its 30 tokens.

Over real loopback HTTP from the live server, every request forwarded by the loopback proxy
for one caller, so it spends from that caller's bucket (this process's memory, 120 tokens
refilled so slowly that none comes back during the test). A proposal refused for its input
(``bad-argument``, ``exists``) is given back all but a bad URI's one token, over both
surfaces; a kept one, and one past the caller's daily cap, cost the 30; a caller short of 30
is refused before its proposal is read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.oplog.conftest import CALLER
from tests.proposals.conftest import BASE, A
from tmsite.callers import buckets
from tmsite.mounts import registry
from tmsite.oplog import recorder
from tmsite.oplog.models import RequestLog

pytestmark = [pytest.mark.spec("PROP1", "OP1"), pytest.mark.django_db(transaction=True)]

MISSING = f"{BASE}/fs/docs/missing.md"


@pytest.fixture
def served(box: Any, settings: Any, live_server: Any) -> Iterator[str]:
    settings.TM_RATE_LIMIT = True
    settings.TM_RATE_BURST = 120
    settings.TM_RATE_REFILL = 0.001  # a token in 1,000 s: the test sees none come back
    buckets._stores.clear()
    registry.reset()
    yield live_server.url
    buckets._stores.clear()


def remaining(reply: httpx.Response) -> int:
    """``r`` of the ``RateLimit`` header."""
    fields = dict(part.split("=") for part in reply.headers["RateLimit"].split(";")[1:])
    return int(fields["r"])


def propose_mcp(base: str, **arguments: Any) -> httpx.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "propose", "arguments": arguments},
    }
    headers = {"X-Forwarded-For": CALLER, "MCP-Protocol-Version": "2025-06-18"}
    return httpx.post(f"{base}/api/mcp", json=body, headers=headers, timeout=30)


def propose_rest(base: str, **arguments: Any) -> httpx.Response:
    headers = {"X-Forwarded-For": CALLER}
    return httpx.post(f"{base}/api/v1/proposals", json=arguments, headers=headers, timeout=30)


def tool_error(reply: httpx.Response) -> dict[str, Any]:
    result = reply.json()["result"]
    assert result["isError"] is True, result
    value: dict[str, Any] = json.loads(result["content"][0]["text"])
    return value


def test_a_proposal_refused_for_its_input_costs_one_token(served: str) -> None:
    bad = propose_mcp(served, kind="address", uri=f"{BASE}/zzz/a", expected="x")
    assert tool_error(bad)["reason"] == "bad-argument"
    assert remaining(bad) == 119
    exists = propose_mcp(served, kind="address", uri=A, expected="x")
    assert (tool_error(exists)["reason"], tool_error(exists)["address"]) == ("exists", A)
    assert remaining(exists) == 118
    typo = propose_mcp(served, kind="adress", uri=MISSING)
    assert tool_error(typo)["valid"] == ["address", "link", "correction", "trail"]
    assert remaining(typo) == 117
    rest = propose_rest(served, kind="address", uri=MISSING, expected="x", rel="tm:source")
    assert rest.status_code == 400 and rest.json()["reason"] == "bad-argument"
    assert rest.json()["valid"] == ["uri", "expected"]
    assert remaining(rest) == 116
    kept = propose_mcp(served, kind="address", uri=MISSING, expected="x")
    assert kept.json()["result"]["isError"] is False
    assert remaining(kept) == 86
    recorder.flush()
    costs = list(RequestLog.objects.order_by("id").values_list("outcome", "kind"))
    assert costs == [
        ("bad-argument", "tool:propose"),
        ("exists", "tool:propose"),
        ("bad-argument", "tool:propose"),
        ("bad-argument", "tool:propose"),
        ("ok", "tool:propose"),
    ]


def test_a_proposal_past_the_daily_cap_costs_its_thirty(served: str, settings: Any) -> None:
    settings.TM_PROPOSALS_PER_CALLER = 1
    assert propose_rest(served, kind="address", uri=MISSING, expected="x").status_code == 200
    capped = propose_rest(served, kind="address", uri=f"{MISSING}2", expected="x")
    assert capped.status_code == 429 and capped.json()["reason"] == "rate-limited"
    assert remaining(capped) == 60


def test_a_caller_short_of_thirty_is_refused_before_the_proposal_is_read(served: str) -> None:
    for n in range(3):
        kept = propose_rest(served, kind="address", uri=f"{MISSING}{n}", expected="x")
        assert kept.status_code == 200, kept.content
    assert remaining(kept) == 30
    refused = propose_mcp(served, kind="address", uri=f"{BASE}/zzz/a", expected="x")
    assert tool_error(refused)["reason"] == "bad-argument"
    assert remaining(refused) == 29
    short = propose_mcp(served, kind="address", uri=f"{BASE}/zzz/a", expected="x")
    error = short.json()["error"]
    assert (error["code"], error["data"]["reason"]) == (-32000, "rate-limited")
    assert error["data"]["retryAfter"] >= 1000  # one token a thousand seconds
    assert remaining(short) == 29
