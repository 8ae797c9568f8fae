"""Hostile proposals are refused clearly and leave nothing behind; the caps hold.

Each refusal is the tool error a client gets (its ``reason`` and helper fields); after each,
no proposal row exists. Then: HTML in a proposal is shown escaped in the admin; forged and
carried receipts read as not-found; one caller's 10,000 proposals stop at its daily cap; a
full queue answers ``queue-full`` with ``retryAfter``; a change that moved under a proposal
(a maintainer's own correction racing it) is stale and cannot be approved; old open
proposals expire; the admin's message after a decision names the status the decision left.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from tests.proposals.conftest import (
    BASE,
    PATTERN,
    A,
    B,
    answer,
    browser,
    form,
    maintainer,
    propose,
)
from tmsite.core.errors import NotFound
from tmsite.entities import models as em
from tmsite.mcp import tools
from tmsite.mounts import registry
from tmsite.proposals import receipts
from tmsite.proposals.models import CallerDay, Proposal

pytestmark = [pytest.mark.django_db, pytest.mark.spec("PROP1", "PROP3")]

MISSING = f"{BASE}/fs/docs/missing.md"
STEP = {"uri": A, "note": "a"}

HOSTILE: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    (
        "oversized",
        {"kind": "address", "uri": MISSING, "expected": "x" * 2001},
        {"reason": "bad-argument", "field": "expected", "limit": 2000},
    ),
    (
        "control character",
        {"kind": "address", "uri": MISSING, "expected": "bell\x07"},
        {"reason": "bad-argument", "field": "expected"},
    ),
    (
        "bidi override",
        {"kind": "address", "uri": MISSING, "expected": "evil\u202etxt.exe"},
        {"reason": "bad-argument", "field": "expected"},
    ),
    (
        "isolate in a note",
        {
            "kind": "trail",
            "name": "t",
            "title": "t",
            "description": "d",
            "steps": [{"uri": A, "note": "\u2067x"}],
        },
        {"reason": "bad-argument", "field": "steps[1].note"},
    ),
    (
        "self-link",
        {"kind": "link", "from": A, "rel": "tm:generated-by", "to": A, "why": "w"},
        {"reason": "bad-argument", "uri": A},
    ),
    (
        "unresolvable end",
        {"kind": "link", "from": A, "rel": "tm:generated-by", "to": MISSING, "why": "w"},
        {"reason": "bad-argument", "field": "to", "uri": MISSING},
    ),
    (
        "unknown relation",
        {"kind": "link", "from": A, "rel": "tm:likes", "to": B, "why": "w"},
        {"reason": "bad-argument"},
    ),
    (
        "an IANA relation",
        {"kind": "link", "from": A, "rel": "up", "to": B, "why": "w"},
        {"reason": "bad-argument"},
    ),
    (
        "unknown kind",
        {"kind": "write", "uri": A},
        {"reason": "bad-argument", "valid": ["address", "link", "correction", "trail"]},
    ),
    (
        "a field the kind does not take",
        {"kind": "address", "uri": MISSING, "expected": "x", "rel": "tm:source"},
        {"reason": "bad-argument", "valid": ["uri", "expected"]},
    ),
    (
        "an unknown mount",
        {"kind": "address", "uri": f"{BASE}/zzz/a", "expected": "x"},
        {
            "reason": "bad-argument",
            "uri": f"{BASE}/zzz/a",
            "field": "uri",
            "valid": [f"{BASE}/entity/", f"{BASE}/fs/", f"{BASE}/trail/"],
        },
    ),
    (
        "an address that resolves",
        {"kind": "address", "uri": A, "expected": "a"},
        {"reason": "exists", "uri": A, "address": A},
    ),
    (
        "another host",
        {"kind": "address", "uri": "tm://elsewhere/x", "expected": "x"},
        {"reason": "bad-argument", "root": f"{BASE}/"},
    ),
    (
        "a field not correctable",
        {"kind": "correction", "uri": PATTERN, "field": "key", "value": "x", "why": "w"},
        {"reason": "bad-argument", "valid": ["description"]},
    ),
    (
        "a value the admin refuses",
        {
            "kind": "correction",
            "uri": f"{BASE}/entity/lesson/no-such",
            "field": "kind",
            "value": "x",
            "why": "w",
        },
        {"reason": "bad-argument"},
    ),
    (
        "too many steps",
        {"kind": "trail", "name": "long", "title": "t", "description": "d", "steps": [STEP] * 21},
        {"reason": "bad-argument", "field": "steps", "limit": 20},
    ),
    (
        "a trail that exists",
        {"kind": "trail", "name": "walk", "title": "t", "description": "d", "steps": [STEP]},
        {"reason": "exists", "address": f"{BASE}/trail/walk"},
    ),
    (
        "a step that does not resolve",
        {
            "kind": "trail",
            "name": "t",
            "title": "t",
            "description": "d",
            "steps": [{"uri": MISSING, "note": "n"}],
        },
        {"reason": "bad-argument", "field": "steps[1].uri"},
    ),
]


@pytest.mark.parametrize(
    ("arguments", "expected"), [h[1:] for h in HOSTILE], ids=[h[0] for h in HOSTILE]
)
def test_a_hostile_proposal_is_refused_and_nothing_is_kept(
    box: Any, arguments: dict[str, Any], expected: dict[str, Any]
) -> None:
    result = propose(**arguments)
    assert result["isError"] is True
    refused = answer(result)
    assert expected.items() <= refused.items(), refused
    assert refused["error"]
    assert not Proposal.objects.exists()


@pytest.mark.parametrize(
    ("kind", "said"), [("address", "an address proposal"), ("link", "a link proposal")]
)
def test_a_field_the_kind_does_not_take_is_refused_in_plain_english(
    box: Any, kind: str, said: str
) -> None:
    refused = answer(propose(kind=kind, title="t"))
    assert refused["reason"] == "bad-argument" and "title" not in refused["valid"]
    assert refused["error"].startswith(f"{said} does not take title"), refused


def test_html_is_shown_escaped_in_the_queue(box: Any) -> None:
    script = "<script>alert('x')</script><b>bold</b>"
    result = propose(kind="address", uri=MISSING, expected=script)
    assert not result["isError"], result
    proposal = Proposal.objects.get()
    client = browser(maintainer())
    page = client.get(f"/admin/tm_proposals/proposal/{proposal.pk}/change/").content.decode()
    assert "<script>alert" not in page and "<b>bold</b>" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    listing = client.get("/admin/tm_proposals/proposal/?status=open").content.decode()
    assert "<script>alert" not in listing
    assert f"/admin/tm_proposals/proposal/{proposal.pk}/change/" in listing  # it is listed


def test_forged_and_carried_receipts_read_as_not_found(box: Any, settings: Any) -> None:
    receipt = answer(propose(kind="address", uri=MISSING, expected="x"))["receipt"]
    token = receipt.rsplit("/", 1)[1]
    ns = registry.namespace()
    assert ns.read(receipt).body["status"] == "open"
    proposal = Proposal.objects.get()
    forged = [
        token[:-2] + ("AA" if not token.endswith("AA") else "BB"),  # the signature altered
        receipts.new_id() + token[32:],  # another id under the same signature
        receipts.token("elsewhere", proposal.receipt),  # signed for another host
        str(proposal.pk),  # open: not by its number
    ]
    for bad in forged:
        with pytest.raises(NotFound):
            ns.read(f"{BASE}/proposals/{bad}")
    assert ns.read(f"{BASE}/proposals/").body["children"] == []  # open ones are never listed
    proposal.delete()  # swept: its receipt leads nowhere
    with pytest.raises(NotFound):
        ns.read(receipt)


def test_one_callers_ten_thousand_proposals_stop_at_its_daily_cap(box: Any) -> None:
    reasons = [
        answer(
            tools.run(
                "propose",
                {"kind": "address", "uri": f"{MISSING[:-3]}-{n}.md", "expected": "x"},
                "203.0.113.9",
            )
        ).get("reason", "kept")
        for n in range(10_000)
    ]
    assert reasons.count("kept") == 20 and reasons.count("rate-limited") == 9_980
    assert Proposal.objects.count() == 20
    # The count is kept under the day's keyed hash, never the address.
    assert [row.key for row in CallerDay.objects.all()] != ["203.0.113.9"]
    assert all(len(row.key) == 32 for row in CallerDay.objects.all())
    # Another caller is not held back by the first.
    other = tools.run(
        "propose", {"kind": "address", "uri": MISSING, "expected": "x"}, "203.0.113.10"
    )
    assert not other["isError"]


def test_a_full_queue_answers_queue_full_with_retry_after(box: Any, settings: Any) -> None:
    settings.TM_PROPOSALS_OPEN_MAX = 2
    for n in range(2):
        assert not propose(kind="address", uri=f"{MISSING}{n}", expected="x")["isError"]
    refused = answer(propose(kind="address", uri=f"{MISSING}9", expected="x"))
    assert refused["reason"] == "queue-full" and refused["retryAfter"] == 3600
    assert Proposal.objects.count() == 2
    again = answer(propose(kind="address", uri=f"{MISSING}0", expected="x"))  # identical: counted
    assert again["count"] == 2


def test_a_correction_raced_by_a_maintainers_own_is_stale_and_not_applied(box: Any) -> None:
    value = "Reads the pad."
    assert not propose(kind="correction", uri=PATTERN, field="description", value=value, why="w")[
        "isError"
    ]
    proposal = Proposal.objects.get()
    user = maintainer()
    client = browser(user)
    pattern = em.Pattern.objects.get(key="pad-poll")
    url = f"/admin/tm_entities/pattern/{pattern.pk}/change/"
    data = form(client, url)
    data["description"] = "A maintainer's own words."
    assert client.post(url, data).status_code == 302
    url = f"/admin/tm_proposals/proposal/{proposal.pk}/change/"
    page = client.get(url).content.decode()
    assert "stale:" in page
    data = form(client, url)
    data.update(decision="approve", reason="looks right")
    reply = client.post(url, data)
    assert reply.status_code == 200 and "cannot be approved as is" in reply.content.decode()
    proposal.refresh_from_db()
    pattern.refresh_from_db()
    assert proposal.status == "open"
    assert pattern.description == "A maintainer's own words."
    assert em.Correction.objects.count() == 1  # the maintainer's, not the proposal's


def test_rejecting_changes_nothing_and_a_decided_one_is_not_decided_again(box: Any) -> None:
    assert not propose(kind="link", **{"from": A}, rel="tm:generated-by", to=B, why="w")["isError"]
    before = registry.namespace().read(A).links
    proposal = Proposal.objects.get()
    client = browser(maintainer())
    queue = "/admin/tm_proposals/proposal/"
    token = form(client, queue)["csrfmiddlewaretoken"]
    reply = client.post(
        queue,
        {
            "csrfmiddlewaretoken": token,
            "action": "reject_selected",
            "_selected_action": [proposal.pk],
            "reason": "not so",
        },
    )
    assert reply.status_code == 302
    proposal.refresh_from_db()
    assert (proposal.status, proposal.reason) == ("rejected", "not so")
    assert registry.namespace().read(A).links == before
    reply = client.post(
        queue,
        {
            "csrfmiddlewaretoken": token,
            "action": "approve_selected",
            "_selected_action": [proposal.pk],
            "reason": "yes",
        },
    )
    assert reply.status_code == 302
    proposal.refresh_from_db()
    assert proposal.status == "rejected"
    assert registry.namespace().read(A).links == before


def test_old_open_proposals_expire(box: Any, settings: Any) -> None:
    receipt = answer(propose(kind="address", uri=MISSING, expected="x"))["receipt"]
    Proposal.objects.update(created_at=timezone.now() - timedelta(days=31))
    assert not propose(kind="address", uri=f"{MISSING}2", expected="y")["isError"]
    assert registry.namespace().read(receipt).body["status"] == "expired"
    again = answer(propose(kind="address", uri=MISSING, expected="x"))  # a fresh one now
    assert again["new"] is True and again["receipt"] != receipt


def test_a_map_entry_correction_lands_through_the_admins_path(box: Any) -> None:
    from tmsite.servers.models import MapEntry, MapEntryChange, McpServer

    server = McpServer.objects.create(name="later", program="elements")
    entry = MapEntry.objects.create(
        server=server,
        path_template="element/{symbol}",
        tool="element",
        arguments={"symbol": "{symbol}"},
        kind="element",
    )
    uri = f"{BASE}/mcp/later/map"
    refused = answer(
        propose(
            kind="correction", uri=uri, entry="element/{symbol}", field="kind", value="Bad Kind!"
        )
    )
    assert refused["reason"] == "bad-argument" and refused["field"] == "kind"
    wrong = answer(propose(kind="correction", uri=uri, entry="nope", field="kind", value="x"))
    assert wrong["valid"] == ["element/{symbol}"]
    assert not Proposal.objects.exists()
    ok = propose(
        kind="correction", uri=uri, entry="element/{symbol}", field="confidence", value="exact"
    )
    assert not ok["isError"], ok
    proposal = Proposal.objects.get()
    client = browser(maintainer())
    url = f"/admin/tm_proposals/proposal/{proposal.pk}/change/"
    data = form(client, url)
    data.update(decision="approve", reason="confirmed by hand")
    assert client.post(url, data).status_code == 302
    entry.refresh_from_db()
    assert (entry.confidence, entry.touched) == ("exact", True)
    change = MapEntryChange.objects.get()
    assert (change.field, change.old, change.new, change.changed_by_name) == (
        "confidence",
        "low",
        "exact",
        "maintainer",
    )


def test_the_admins_message_after_a_decision_names_the_status_it_now_has(box: Any) -> None:
    assert not propose(kind="address", uri=MISSING, expected="x")["isError"]
    proposal = Proposal.objects.get()
    client = browser(maintainer())
    url = f"/admin/tm_proposals/proposal/{proposal.pk}/change/"
    data = form(client, url)
    data.update(decision="reject", reason="not so")
    reply = client.post(url, data, follow=True)
    said = [str(message) for message in reply.context["messages"]]
    assert len(said) == 1 and f"address #{proposal.pk} (rejected)" in said[0], said
    assert "(open)" not in said[0]
