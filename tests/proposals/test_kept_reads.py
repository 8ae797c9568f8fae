"""A kept read gives what is saved here at once: a link approved, a trail corrected to name it.

The pattern's read is kept (the entity mount vouches for it by its records). A link approved or
a trail correction saved in this process moves the read's stamp (``Mount.links_stamp``), so it
is in the very next read; the links others give a kept read are never compared again here.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User

from tests.proposals.conftest import PATTERN, A, propose, read
from tmsite.mounts import namespace as namespace_module
from tmsite.mounts.registry import namespace
from tmsite.operations import decide
from tmsite.proposals.models import Proposal
from tmsite.trails import corrections

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.spec("T7", "PROP2", "LK2")]


@pytest.fixture
def kept(box: Any, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The pattern read once and kept; the links it was given trusted for an hour."""
    monkeypatch.setattr(namespace_module, "LINKS_RECHECK_SECONDS", 3600.0)
    first = read(PATTERN)
    assert namespace().kept(PATTERN) is not None, "the pattern's read is kept"
    assert read(PATTERN) == first
    return first


def test_a_link_approved_here_is_in_the_next_read(kept: dict[str, Any]) -> None:
    link = {"kind": "link", "from": A, "rel": "tm:generated-by", "to": PATTERN, "why": "w"}
    assert not propose(**link)["isError"]
    proposal = Proposal.objects.get(status="open", kind="link")
    decide.decide(proposal.pk, True, "yes", User.objects.create_user("m", is_staff=True))
    links = read(PATTERN)["links"]
    assert {"rel": "tm:generates", "href": A, "confidence": "exact", "provenance": "curated"} in (
        links
    )


def test_a_trail_corrected_here_to_name_it_is_in_the_next_read(kept: dict[str, Any]) -> None:
    assert not any(link["rel"] == "tm:step-of" for link in kept["links"])
    steps = [{"uri": A, "note": "first a"}, {"uri": PATTERN, "note": "then the pattern"}]
    value = {"title": "A walk", "description": "d", "steps": steps}
    assert corrections.correct("walk", json.loads(json.dumps(value)), None, "maintainer")
    steps_of = [link for link in read(PATTERN)["links"] if link["rel"] == "tm:step-of"]
    assert [link["href"] for link in steps_of] == [f"tm://{namespace().host}/trail/walk"]
