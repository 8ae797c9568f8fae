"""The curated links every read carries cost no query while their version is trusted.

A process reads the curated links once and answers from memory; an approval in this process
is in the very next read, one on another machine (which runs no receiver here) once the
version is asked again, at most ``VERSION_RECHECK_SECONDS`` later.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from tests.proposals.conftest import A, B, C, propose, read
from tmsite.core.uri import parse
from tmsite.mounts.registry import namespace
from tmsite.operations import decide
from tmsite.proposals import curated
from tmsite.proposals.models import CuratedLink, Proposal

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.spec("PROP2", "LK2")]

CURATED = {"confidence": "exact", "provenance": "curated"}


def _curated(uri: str) -> list[tuple[str, str]]:
    return sorted(
        (lk["rel"], lk["href"]) for lk in read(uri)["links"] if lk.get("provenance") == "curated"
    )


def _approve(source: str, target: str) -> Proposal:
    link = {"kind": "link", "from": source, "rel": "tm:generated-by", "to": target, "why": "w"}
    result = propose(**link)
    assert not result["isError"], result
    proposal = Proposal.objects.get(status="open", kind="link")
    user = User.objects.create_user(f"m{proposal.pk}", is_staff=True)
    return decide.decide(proposal.pk, True, "yes", user)


def test_a_warm_read_costs_no_query_and_an_approval_here_is_read_at_once(
    box: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [1000.0]
    monkeypatch.setattr(curated, "_clock", lambda: now[0])
    monkeypatch.setattr(curated, "VERSION_RECHECK_SECONDS", 1.0)
    mount = namespace().mounts["proposals"]
    assert _curated(A) == []
    with CaptureQueriesContext(connection) as warm:
        assert mount.links_into(parse(A)) == []
        assert mount.links_into(parse(B)) == []
    assert warm.captured_queries == []  # within the second: from memory
    approved = _approve(A, B)  # the clock stands still: only forgetting makes it seen
    me = f"tm://{namespace().host}/proposals/{approved.pk}"
    assert _curated(A) == [("tm:changed-by", me), ("tm:generated-by", B)]
    assert _curated(B) == [("tm:changed-by", me), ("tm:generates", A)]
    with CaptureQueriesContext(connection) as again:
        assert len(mount.links_into(parse(A))) == 2
    assert again.captured_queries == []
    now[0] += curated.VERSION_RECHECK_SECONDS
    with CaptureQueriesContext(connection) as asked:
        assert len(mount.links_into(parse(B))) == 2
    assert len(asked.captured_queries) == 1  # the version, unchanged: the links are not read
    assert "tm_proposals_curatedversion" in asked[0]["sql"]


def test_an_approval_on_another_machine_is_seen_once_the_version_is_asked_again(
    box: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [1000.0]
    monkeypatch.setattr(curated, "_clock", lambda: now[0])
    monkeypatch.setattr(curated, "VERSION_RECHECK_SECONDS", 1.0)
    _approve(A, B)
    assert ("tm:generated-by", B) in _curated(A)
    proposal = Proposal.objects.get()
    other = connections.create_connection("default")
    connections["elsewhere"] = other
    # another machine's save runs no receiver in this process: only the version tells it
    monkeypatch.setattr(curated, "forget", lambda: None)
    try:
        CuratedLink.objects.using("elsewhere").create(
            rel="tm:generated-by", source=C, target=A, proposal=proposal
        )
    finally:
        del connections["elsewhere"]
        other.close()
    assert _curated(C) == []  # the version is trusted a while yet
    now[0] += curated.VERSION_RECHECK_SECONDS
    assert _curated(C) == [("tm:generated-by", A)]
    assert ("tm:generates", C) in _curated(A)
    inverse = {"rel": "tm:generates", "href": C, **CURATED}
    assert inverse in read(A)["links"]
