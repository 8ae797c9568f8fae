"""One source cannot close the queue for everyone: callers are grouped, and share the queue.

Over real loopback HTTP from the live server, every proposal forwarded by the loopback proxy
(``X-Forwarded-For``): the addresses of one IPv6 /64 are one caller for the daily cap; once the
queue is full, the source that holds the most of today's open proposals gives up its oldest to
any source that holds fewer, and is itself answered ``queue-full`` (it had its share); when no
source holds any of today's, the oldest open proposal expires first. The proposal given up
reads ``expired`` on its receipt, with why. A forwarded caller that is no address is refused
and keeps nothing. The queue's key for a source is the day's keyed hash, blanked once the day
is over.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from django.utils import timezone

from tests.proposals.conftest import BASE
from tmsite.callers import buckets
from tmsite.mounts import registry
from tmsite.proposals.models import CallerDay, Proposal

pytestmark = [pytest.mark.spec("PROP1", "PROP3", "OP1"), pytest.mark.django_db(transaction=True)]

NET = "2001:db8:1:2"


@pytest.fixture
def served(box: Any, settings: Any, live_server: Any) -> Iterator[str]:
    settings.TM_RATE_LIMIT = True
    settings.TM_RATE_BURST = 100_000  # the budget is not what these tests meet
    buckets._stores.clear()
    registry.reset()
    yield live_server.url
    buckets._stores.clear()


def propose(base: str, forwarded: str, n: int) -> httpx.Response:
    body = {"kind": "address", "uri": f"{BASE}/fs/docs/missing-{n}.md", "expected": "x"}
    headers = {"X-Forwarded-For": forwarded}
    return httpx.post(f"{base}/api/v1/proposals", json=body, headers=headers, timeout=30)


def kept(reply: httpx.Response) -> str:
    assert reply.status_code == 200, reply.content
    receipt: str = reply.json()["receipt"]
    return receipt


def queue_full(reply: httpx.Response) -> None:
    assert reply.status_code == 503, reply.content
    body = reply.json()
    assert (body["reason"], body["retryAfter"]) == ("queue-full", 3600)


def status(base: str, receipt: str) -> dict[str, Any]:
    reply = httpx.get(f"{base}/api/v1/resolve", params={"uri": receipt}, timeout=30)
    assert reply.status_code == 200, reply.content
    value: dict[str, Any] = json.loads(reply.json()["text"])
    return value


def test_the_addresses_of_one_64_share_one_daily_cap(served: str) -> None:
    for n in range(20):
        kept(propose(served, f"{NET}::{n + 1:x}", n))
    capped = propose(served, f"{NET}::ff", 99)
    assert capped.status_code == 429, capped.content
    body = capped.json()
    assert body["reason"] == "rate-limited" and body["retryAfter"] > 0
    assert Proposal.objects.count() == 20 and CallerDay.objects.count() == 1
    kept(propose(served, "2001:db8:1:3::1", 100))  # another /64


def test_a_source_that_filled_the_queue_leaves_room_for_another(served: str, settings: Any) -> None:
    settings.TM_PROPOSALS_OPEN_MAX = 5
    first = [kept(propose(served, f"{NET}::{n + 1:x}", n)) for n in range(5)]
    queue_full(propose(served, f"{NET}::99", 5))  # the /64 has had its share: all of it
    late = kept(propose(served, "203.0.113.50", 6))
    given_up = status(served, first[0])
    assert given_up["status"] == "expired"
    assert "queue was full" in given_up["decision"]["reason"]
    assert status(served, first[1])["status"] == "open"
    assert status(served, late)["status"] == "open"
    assert Proposal.objects.filter(status="open").count() == 5
    kept(propose(served, "203.0.113.50", 7))  # 2 against the /64's 3
    kept(propose(served, "203.0.113.50", 8))  # 3 against 2: one more of the /64's goes
    queue_full(propose(served, "203.0.113.50", 9))  # now it holds the most
    assert [status(served, r)["status"] for r in first] == ["expired"] * 3 + ["open"] * 2
    kept(propose(served, f"{NET}::abc", 10))  # the /64 holds fewer now: it may again


def test_many_sources_that_filled_it_leave_room_for_one_more(served: str, settings: Any) -> None:
    settings.TM_PROPOSALS_OPEN_MAX = 6
    receipts = {
        source: [kept(propose(served, source, 10 * s + n)) for n in range(2)]
        for s, source in enumerate(["198.51.100.1", "198.51.100.2", "198.51.100.3"])
    }
    kept(propose(served, "203.0.113.77", 99))
    assert status(served, receipts["198.51.100.1"][0])["status"] == "expired"  # the oldest
    assert Proposal.objects.filter(status="open").count() == 6


def test_the_oldest_goes_first_once_the_day_of_the_others_is_over(
    served: str, settings: Any
) -> None:
    settings.TM_PROPOSALS_OPEN_MAX = 3
    first = [kept(propose(served, "198.51.100.1", n)) for n in range(3)]
    assert len(set(Proposal.objects.values_list("source", flat=True))) == 1
    assert len(Proposal.objects.first().source) == 32  # the day's keyed hash, not the address
    yesterday = timezone.now() - timedelta(days=1)
    Proposal.objects.update(created_at=yesterday, last_proposed_at=yesterday)
    kept(propose(served, "198.51.100.2", 3))
    assert [status(served, r)["status"] for r in first] == ["expired", "open", "open"]
    assert set(Proposal.objects.filter(created_at=yesterday).values_list("source", flat=True)) == {
        ""
    }  # the day is over: the key links to nothing, and is not kept
    queue_full(propose(served, "198.51.100.2", 4))  # it holds the most of today's


def test_a_forwarded_caller_that_is_no_address_keeps_nothing(served: str) -> None:
    for forwarded in ("unknown", "garbage"):
        reply = propose(served, forwarded, 1)
        assert reply.status_code == 400, reply.content
        body = reply.json()
        assert (body["reason"], body["field"]) == ("bad-argument", "X-Forwarded-For")
    assert not Proposal.objects.exists() and not CallerDay.objects.exists()
