"""Old open proposals read as expired at once; ``tm_proposals expire`` marks and deletes them.

An open proposal older than ``TM_PROPOSALS_EXPIRE_DAYS`` is expired from that moment on its
receipt and in the admin's queue (it cannot be decided), with no proposal arriving to mark it.
The command marks it, with the moment its time ran out, and deletes expired proposals past
``TM_PROPOSALS_EXPIRED_KEEP_DAYS``; decided ones stay.
"""

from __future__ import annotations

import io
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone

from tests.proposals.conftest import BASE, answer, browser, form, maintainer, propose
from tmsite.core.errors import NotFound
from tmsite.mounts import registry
from tmsite.operations import decide
from tmsite.proposals.models import Proposal

pytestmark = [pytest.mark.django_db, pytest.mark.spec("PROP3", "OP4")]

MISSING = f"{BASE}/fs/docs/missing.md"
QUEUE = "/admin/tm_proposals/proposal/"


def _proposed(*ages: tuple[str, float]) -> list[tuple[Proposal, str]]:
    """Propose each address, then make each as old as asked (all first: a proposal taken
    marks those already past their age)."""
    receipts = [
        answer(propose(kind="address", uri=uri, expected="x"))["receipt"] for uri, _ in ages
    ]
    made = []
    for (uri, days_ago), receipt in zip(ages, receipts, strict=True):
        at = timezone.now() - timedelta(days=days_ago)
        Proposal.objects.filter(proposed__uri=uri).update(created_at=at, last_proposed_at=at)
        made.append((Proposal.objects.get(proposed__uri=uri), receipt))
    return made


def test_an_old_open_proposal_reads_expired_on_its_receipt_and_in_the_queue(box: Any) -> None:
    (old, receipt), (young, _) = _proposed((MISSING, 31), (f"{MISSING}2", 29))
    body = registry.namespace().read(receipt).body
    assert body["status"] == "expired"
    assert body["decision"] == {
        "status": "expired",
        "reason": "",
        "at": (old.created_at + timedelta(days=30)).isoformat(),
    }
    stat = registry.namespace().read(receipt + "?as=stat").body
    assert stat["status"] == "expired"
    assert Proposal.objects.get(pk=old.pk).status == "open"  # not marked: computed from age

    client = browser(maintainer())
    change = f"{QUEUE}{old.pk}/change/"
    listed = client.get(f"{QUEUE}?status=open").content.decode()
    assert f"{QUEUE}{young.pk}/change/" in listed and change not in listed
    listed = client.get(f"{QUEUE}?status=expired").content.decode()
    assert change in listed and f"{QUEUE}{young.pk}/change/" not in listed
    page = client.get(change).content.decode()
    assert 'name="decision"' not in page  # no decision to take on it
    data = form(client, change)
    data.update(decision="reject", reason="too late")
    reply = client.post(change, data)
    assert Proposal.objects.get(pk=old.pk).status == "open"
    assert reply.status_code in (200, 302)
    with pytest.raises(decide.NotApplied, match=f"proposal {old.pk} is expired, not open"):
        decide.decide(old.pk, False, "too late", None)
    decided = decide.decide(young.pk, False, "not planned", None)
    assert decided.status == "rejected"


def test_the_command_marks_the_old_and_deletes_the_long_expired(box: Any, settings: Any) -> None:
    settings.TM_PROPOSALS_EXPIRED_KEEP_DAYS = 10
    made = _proposed((MISSING, 31), (f"{MISSING}2", 45), (f"{MISSING}3", 400), (f"{MISSING}4", 1))
    (aged, aged_receipt), (gone, gone_receipt), (decided, _), (fresh, fresh_receipt) = made
    # gone: marked expired 15 days ago (past the retention); aged: its time ran out a day ago
    Proposal.objects.filter(pk=gone.pk).update(
        status="expired", decided_at=timezone.now() - timedelta(days=15)
    )
    Proposal.objects.filter(pk=decided.pk).update(
        status="rejected", decided_at=timezone.now() - timedelta(days=300)
    )
    out = io.StringIO()
    call_command("tm_proposals", "expire", stdout=out)
    assert out.getvalue() == (
        "expired 1 open proposals older than 30 days; deleted 1 expired more than 10 days ago\n"
    )
    aged.refresh_from_db()
    assert aged.status == "expired"
    assert aged.decided_at == aged.created_at + timedelta(days=30)  # when its time ran out
    assert not Proposal.objects.filter(pk=gone.pk).exists()
    with pytest.raises(NotFound):
        registry.namespace().read(gone_receipt)
    assert registry.namespace().read(aged_receipt).body["status"] == "expired"
    assert Proposal.objects.get(pk=decided.pk).status == "rejected"  # decided ones stay
    assert Proposal.objects.get(pk=fresh.pk).status == "open"
    assert registry.namespace().read(fresh_receipt).body["status"] == "open"
    again = io.StringIO()
    call_command("tm_proposals", "expire", stdout=again)
    assert again.getvalue().startswith("expired 0 open proposals")
