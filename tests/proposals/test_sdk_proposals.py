"""The official SDK client proposes each kind; nothing changes until a maintainer decides.

Before any decision a walk of the namespace reads byte for byte as before the proposals (the
receipts are not reachable from it); after approvals through the admin's own views the next
read carries each change; a rejection changes nothing; the link walk finds every inverse.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.proposals.conftest import (
    BASE,
    PATTERN,
    A,
    B,
    C,
    browser,
    form,
    maintainer,
    read,
    walk,
)
from tmsite.core.links import INVERSE
from tmsite.entities import models as em
from tmsite.proposals.models import Proposal

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.spec("PROP1", "PROP2")]

PROPOSALS: dict[str, dict[str, Any]] = {
    "address": {"uri": f"{BASE}/fs/docs/missing.md", "expected": "the missing chapter"},
    "link": {"from": A, "rel": "tm:generated-by", "to": B, "why": "a is written from b"},
    "correction": {
        "uri": PATTERN,
        "field": "description",
        "value": "Strobes $4016, then reads the buttons.",
        "why": "the record says it vaguely",
    },
    "trail": {
        "name": "a-to-c",
        "title": "From a to c",
        "description": "The short way.",
        "steps": [{"uri": A, "note": "start"}, {"uri": C, "note": "end"}],
    },
}


def _sdk_session(url: str) -> dict[str, Any]:
    async def scenario() -> dict[str, Any]:
        async with (
            streamable_http_client(url) as (read_stream, write_stream),
            ClientSession(read_stream, write_stream) as session,
        ):
            await session.initialize()
            tools = await session.list_tools()
            out: dict[str, Any] = {"tools": tools, "receipts": {}, "reads": {}}
            for kind, fields in PROPOSALS.items():
                result = await session.call_tool("propose", {"kind": kind, **fields})
                assert not result.is_error, result
                out["receipts"][kind] = result.structured_content
            for kind, receipt in out["receipts"].items():
                content = await session.read_resource(receipt["receipt"])
                out["reads"][kind] = json.loads(content.contents[0].text)  # type: ignore[union-attr]
            return out

    return anyio.run(scenario)


def _decide(client: Any, proposal: Proposal, decision: str, reason: str) -> Any:
    url = f"/admin/tm_proposals/proposal/{proposal.pk}/change/"
    data = form(client, url)
    data.update(decision=decision, reason=reason)
    return client.post(url, data)


def test_each_kind_is_proposed_reviewed_and_lands_only_when_approved(
    box: Any, live_server: Any
) -> None:
    before = walk()
    seen = _sdk_session(f"{live_server.url}/api/mcp")
    propose = next(t for t in seen["tools"].tools if t.name == "propose")
    assert propose.annotations.read_only_hint is False
    assert propose.annotations.idempotent_hint is True

    for kind, receipt in seen["receipts"].items():
        assert receipt["status"] == "open" and receipt["kind"] == kind and receipt["new"] is True
        assert receipt["receipt"].startswith(f"{BASE}/proposals/")
        body = seen["reads"][kind]
        assert body["status"] == "open" and body["decision"] is None
        assert body["diff"].startswith("---"), body["diff"]
    assert '+  "title": "From a to c",\n' in seen["reads"]["trail"]["diff"]
    assert seen["reads"]["address"]["change"]["note"]["nearest"]  # where it might have been
    assert walk() == before  # nothing served differs, nothing open is listed

    client = browser(maintainer())
    by_kind = {p.kind: p for p in Proposal.objects.all()}
    for kind in ("link", "correction", "trail"):
        reply = _decide(client, by_kind[kind], "approve", f"good {kind}")
        assert reply.status_code == 302, reply.content.decode()[:3000]
    reply = _decide(client, by_kind["address"], "reject", "no such chapter is planned")
    assert reply.status_code == 302

    # The link, both ways, curated and exact.
    link = {"rel": "tm:generated-by", "href": B, "confidence": "exact", "provenance": "curated"}
    assert link in read(A)["links"]
    inverse = {"rel": "tm:generates", "href": A, "confidence": "exact", "provenance": "curated"}
    assert inverse in read(B)["links"]
    # The correction, through the admin's own path: one Correction row with the record's value.
    pattern = json.loads(read(PATTERN)["text"])
    assert pattern["fields"]["description"] == PROPOSALS["correction"]["value"]
    row = em.Correction.objects.get()
    assert (row.entity, row.key, row.field, row.corrected_by_name) == (
        "pattern",
        "pad-poll",
        "description",
        "maintainer",
    )
    # The trail, served by the trail mount.
    trail = json.loads(read(f"{BASE}/trail/a-to-c")["text"])
    assert [s["uri"] for s in trail["steps"]] == [A, C]
    # The rejected address still does not resolve; proposals/ lists the four decided.
    assert read(f"{BASE}/proposals/")["text"].count('"status"') == 4
    refused = json.loads(walk(f"{BASE}/fs/docs/missing.md", limit=1)[f"{BASE}/fs/docs/missing.md"])
    assert json.loads(refused["content"][0]["text"])["reason"] == "not-found"

    # Each decided proposal is linked from what it changed, and links back.
    approved = by_kind["link"]
    me = f"{BASE}/proposals/{approved.pk}"
    assert {"rel": "tm:changed-by", "href": me, "confidence": "exact", "provenance": "curated"} in (
        read(A)["links"]
    )
    assert {lk["href"] for lk in read(me)["links"] if lk["rel"] == "tm:changes"} == {A, B}
    # The receipt reads the decision and its reason.
    receipt = json.loads(read(seen["receipts"]["address"]["receipt"])["text"])
    assert receipt["decision"]["status"] == "rejected"
    assert receipt["decision"]["reason"] == "no such chapter is planned"

    # The link walk: every href resolves, every paired link has its inverse.
    after = walk()
    reads = {uri: json.loads(text) for uri, text in after.items()}
    for uri, result in reads.items():
        assert not result["isError"], (uri, result)
        for lk in result["structuredContent"]["links"]:
            if lk["rel"] in INVERSE and lk["href"] in reads:
                back = reads[lk["href"]]["structuredContent"]["links"]
                assert any(b["rel"] == INVERSE[lk["rel"]] and b["href"] == uri for b in back), (
                    uri,
                    lk,
                )
