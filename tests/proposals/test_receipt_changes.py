"""A receipt can be listened to: a decision, an expiry or a count publishes what reads differently.

Published on the change bus once the transaction commits (never before, never on a rollback):
the receipt, the decided proposal's public address, and what an approval changed (a link's two
ends, a corrected entry's address). End to end, a ``subscriptions/listen`` stream on the box
served by ``tmsite.serve.app`` over loopback is told of its receipt when a maintainer approves
it through the admin's queue.
"""

from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from django.core.management import call_command
from django.db import transaction
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
from tests.subscriptions.helpers import SUB_ID, Events, listen_body, listen_headers
from tmsite.bus import changes
from tmsite.core.errors import Refusal
from tmsite.mounts import registry
from tmsite.operations import decide
from tmsite.proposals.models import Proposal

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.spec("PROP2", "SUB3")]

QUEUE = "/admin/tm_proposals/proposal/"


class Heard:
    """What the bus told, in order, each with what the receipt read as when it was told."""

    def __init__(self, receipt: str = "") -> None:
        self.receipt = receipt
        self.uris: list[str] = []
        self.statuses: list[str] = []

    def __call__(self, change: changes.Change) -> None:
        assert change.kind == "updated" and change.uri is not None
        self.uris.append(change.uri)
        if self.receipt:
            try:
                body = registry.namespace().read(self.receipt).body
            except Refusal as refusal:
                self.statuses.append(f"refused: {refusal}")
            else:
                self.statuses.append(str(body["status"]) if isinstance(body, dict) else "?")


@pytest.fixture
def heard() -> Iterator[Heard]:
    listener = Heard()
    remove = changes.add_listener(listener)
    yield listener
    remove()


def _link() -> tuple[Proposal, str]:
    receipt = answer(propose(kind="link", **{"from": A}, rel="tm:generated-by", to=B, why="w"))[
        "receipt"
    ]
    return Proposal.objects.get(), receipt


def test_an_approval_publishes_the_receipt_and_what_changed_after_the_commit(
    box: Any, heard: Heard
) -> None:
    proposal, receipt = _link()
    assert heard.uris == []  # a new proposal: no receipt anyone holds reads differently
    heard.receipt = receipt
    with transaction.atomic():
        decide.decide(proposal.pk, True, "yes", maintainer())
        assert heard.uris == []  # decided, not committed: nothing told
    assert heard.uris == [receipt, f"{BASE}/proposals/{proposal.pk}", A, B]
    assert heard.statuses == ["approved"] * 4  # a listener that reads again sees the decision


def test_nothing_is_published_when_the_decision_rolls_back(box: Any, heard: Heard) -> None:
    proposal, _ = _link()
    heard.uris.clear()
    with pytest.raises(RuntimeError), transaction.atomic():
        decide.decide(proposal.pk, True, "yes", maintainer())
        raise RuntimeError("the request failed after the decision")
    assert heard.uris == []
    assert Proposal.objects.get().status == "open"


def test_a_rejection_a_correction_a_count_and_an_expiry_publish(box: Any, heard: Heard) -> None:
    proposal, receipt = _link()
    assert heard.uris == []  # a new proposal is no change to a receipt anyone holds yet
    assert (
        answer(propose(kind="link", **{"from": A}, rel="tm:generated-by", to=B, why="w"))["receipt"]
        == receipt
    )
    assert heard.uris == [receipt]  # its count grew
    heard.uris.clear()
    decide.decide(proposal.pk, False, "no", None)
    assert heard.uris == [receipt, f"{BASE}/proposals/{proposal.pk}"]  # rejected: nothing else

    heard.uris.clear()
    made = propose(
        kind="correction", uri=PATTERN, field="description", value="Sharper words.", why="w"
    )
    correction = Proposal.objects.get(kind="correction")
    decide.decide(correction.pk, True, "yes", maintainer())
    assert heard.uris == [answer(made)["receipt"], f"{BASE}/proposals/{correction.pk}", PATTERN]

    heard.uris.clear()
    old = answer(propose(kind="address", uri=f"{BASE}/fs/docs/missing.md", expected="x"))
    at = timezone.now() - timedelta(days=31)
    Proposal.objects.filter(kind="address").update(created_at=at, last_proposed_at=at)
    heard.uris.clear()
    call_command("tm_proposals", "expire", stdout=io.StringIO())
    assert heard.uris == [old["receipt"]]  # expired: not public, only its receipt reads anew


def _open(http: httpx.Client, url: str, rid: int, uri: str) -> Iterator[Events]:
    body = listen_body(rid, resourceSubscriptions=[uri])
    with http.stream("POST", url, json=body, headers=listen_headers()) as response:
        assert response.status_code == 200
        events = Events(response)
        ack = events.message()
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"] == {
            "notifications": {"resourceSubscriptions": [uri]},
            "_meta": {SUB_ID: rid},
        }  # nothing refused
        deadline = time.monotonic() + 10
        while not changes.interests(uri).get(uri):
            assert time.monotonic() < deadline, "the stream never listened"
            time.sleep(0.02)
        yield events


def test_a_listen_stream_on_a_receipt_is_told_when_a_maintainer_approves_it(
    box: Any, listen_url: str
) -> None:
    """The receipt's holder is told; a listener of ``proposals/`` is told the public address
    only, never the receipt (its token is what reads the unreviewed text)."""
    proposal, receipt = _link()
    assert registry.namespace().read(receipt).body["status"] == "open"  # it reads for its holder
    client = browser(maintainer())
    with (
        httpx.Client(timeout=httpx.Timeout(20, read=20)) as http,
        contextlib.contextmanager(_open)(http, listen_url, 7, receipt) as holder,
        contextlib.contextmanager(_open)(http, listen_url, 8, f"{BASE}/proposals/") as everyone,
    ):
        token = form(client, QUEUE)["csrfmiddlewaretoken"]
        reply = client.post(
            QUEUE,
            {
                "csrfmiddlewaretoken": token,
                "action": "approve_selected",
                "_selected_action": [proposal.pk],
                "reason": "good",
            },
        )
        assert reply.status_code == 302
        assert holder.message() == {
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"uri": receipt, "_meta": {SUB_ID: 7}},
        }
        # the receipt is published first: had it reached the collection, it would come first
        assert everyone.message()["params"] == {
            "uri": f"{BASE}/proposals/{proposal.pk}",
            "_meta": {SUB_ID: 8},
        }
    assert Proposal.objects.get().status == "approved"
