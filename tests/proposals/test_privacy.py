"""Proposals keep nothing of who made them: a live session proposes over both surfaces, then
every column of every proposal, curated link, daily count and request log row is searched for
the caller (its address, agent, token, cookie, session, client name), as the log's own privacy
tests search the log. A receipt is a secret too: its reads are logged without its token.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.oplog.test_log_lines import lines_of
from tests.oplog.test_privacy import AGENT, COOKIE, FORWARDED, SECRETS, TOKEN
from tests.proposals.conftest import BASE, A, B
from tmsite.callers import buckets, costs
from tmsite.oplog import recorder
from tmsite.oplog.models import RequestLog
from tmsite.proposals.models import CallerDay, CuratedLink, Proposal

pytestmark = [pytest.mark.spec("PROP3", "OP2")]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("forwarded", [False, True], ids=["direct", "through-a-proxy"])
def test_no_proposal_row_and_no_log_row_names_the_proposer(
    box: Any, live_server: Any, settings: Any, tmp_path: Path, forwarded: bool
) -> None:
    settings.TM_RATE_STORE = "file"
    settings.TM_RATE_FILE = tmp_path / "ratelimit.buckets"
    buckets._stores.clear()
    headers = {
        "User-Agent": AGENT,
        "Authorization": f"Bearer {TOKEN}",
        "Cookie": COOKIE,
        "MCP-Protocol-Version": "2025-06-18",
        "Mcp-Session-Id": "session-id-77",
    }
    if forwarded:
        headers["X-Forwarded-For"] = FORWARDED
    url = f"{live_server.url}/api/mcp"
    with httpx.Client(headers=headers, timeout=30) as client:
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "probe-client", "version": "1"},
            },
        }
        assert client.post(url, json=init).status_code == 200
        link = {"kind": "link", "from": A, "rel": "tm:generated-by", "to": B, "why": "w"}
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
        reply = client.post(url, json={**call, "params": {"name": "propose", "arguments": link}})
        assert reply.json()["result"]["isError"] is False, reply.json()
        address = {"kind": "address", "uri": f"{BASE}/fs/docs/nope.md", "expected": "x"}
        reply = client.post(f"{live_server.url}/api/v1/proposals", json=address)
        assert reply.status_code == 200, reply.content
    recorder.flush()
    rows: list[dict[str, Any]] = []
    for model in (Proposal, CuratedLink, CallerDay, RequestLog):
        rows += list(model.objects.values())
    assert Proposal.objects.count() == 2 and CallerDay.objects.count() == 1
    for row in rows:
        for column, value in row.items():
            for secret in SECRETS:
                assert secret not in str(value), (column, value)
    if settings.TM_RATE_FILE.exists():
        assert FORWARDED.encode() not in settings.TM_RATE_FILE.read_bytes()
    buckets._stores.clear()


@pytest.mark.django_db(transaction=True)
def test_a_receipt_read_is_logged_without_its_token(
    box: Any, live_server: Any, written: io.StringIO
) -> None:
    address = {"kind": "address", "uri": f"{BASE}/fs/docs/nope.md", "expected": "x"}
    with httpx.Client(timeout=30) as client:
        reply = client.post(f"{live_server.url}/api/v1/proposals", json=address)
        assert reply.status_code == 200, reply.content
        receipt = reply.json()["receipt"]
        token = receipt.rsplit("/", 1)[1]
        read = {"jsonrpc": "2.0", "id": 1, "method": "resources/read"}
        for uri in (receipt, f"{receipt}?as=stat"):
            answered = client.post(
                f"{live_server.url}/api/mcp",
                json={**read, "params": {"uri": uri}},
                headers={"MCP-Protocol-Version": "2025-06-18"},
            )
            assert "result" in answered.json(), answered.json()
        resolved = client.get(f"{live_server.url}/api/v1/resolve", params={"uri": receipt})
        assert resolved.status_code == 200, resolved.content
    recorder.flush()
    rows = list(RequestLog.objects.order_by("id").values("method", "kind", "target"))
    lines = lines_of(written, len(rows))
    assert len(rows) == len(lines) == 4
    stand_in = f"{BASE}/proposals/{{receipt}}"
    assert [row["target"] for row in rows[1:]] == [stand_in, f"{stand_in}?as=stat", stand_in]
    assert [line["target"] for line in lines] == [row["target"] for row in rows]
    for row in rows:
        assert token not in str(row)
    for line in lines:
        assert token not in json.dumps(line)


def test_a_decided_proposals_public_address_is_logged_as_it_is() -> None:
    assert costs.of_uri(f"{BASE}/proposals/12").target == f"{BASE}/proposals/12"
    assert costs.of_uri(f"{BASE}/proposals/").target == f"{BASE}/proposals/"
    assert costs.of_uri(f"{BASE}/proposals/a.b?as=stat").target == (
        f"{BASE}/proposals/{{receipt}}?as=stat"
    )
