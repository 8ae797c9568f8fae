"""A maintainer's decision on a proposal: approve (apply its change) or reject (change nothing).

Approving applies the prepared change in one transaction, through the path a maintainer's own
change takes: a correction through the admin's correction path (history kept), a curated link
into the links every read of its ends carries, a trail as a trail correction (served by the
trail mount, exported by ``manage.py tm_trails export``); an address is a note and changes
nothing. Every approval also draws ``tm:changed-by`` from each address it changed to the
decided proposal. A change that no longer applies (:func:`stale`: the address resolves now,
the entry moved or changed, a step went) cannot be approved as is.

Spec: PROP1, PROP2, PROP3.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from tmsite.core.errors import Refusal
from tmsite.core.uri import TmUri, parse
from tmsite.mounts.registry import namespace
from tmsite.operations import intake
from tmsite.proposals import targets
from tmsite.proposals.models import CuratedLink, Proposal
from tmsite.trails import corrections as trail_corrections
from tmsite.trails import index as trails


class NotApplied(Exception):
    """The proposal cannot be decided so: not open, or its change no longer applies."""


def _resolves(text: str) -> bool:
    try:
        intake.read_quietly(parse(text))
    except Refusal:
        return False
    return True


def _stale_address(proposal: Proposal) -> str:
    uri = proposal.change["note"]["uri"]
    return f"{uri} resolves now" if _resolves(uri) else ""


def _stale_link(proposal: Proposal) -> str:
    first = proposal.change["links"][0]
    for end in (first["from"], first["to"]):
        if not _resolves(end):
            return f"{end} does not resolve now"
    if intake.served_link(first["rel"], first["from"], first["to"]):
        return "the link is served already"
    return ""


def _stale_correction(proposal: Proposal) -> str:
    change = proposal.change
    row = change["correction"]
    target = targets.refind(row, namespace().host)
    if target is None:
        return "the entry it corrects moved or went"
    now = target.value(row["field"])
    if now != change["old"]:
        return f"{row['field']} reads {now!r} now, not {change['old']!r} as when proposed"
    return ""


def _stale_trail(proposal: Proposal) -> str:
    name = proposal.change["trail"]["name"]
    if trails.current(settings.TM_CHECKOUT).known.get(name) is not None:
        return f"a trail named {name!r} is known now"
    for step in proposal.proposed["steps"]:
        if not _resolves(step["uri"]):
            return f"the step {step['uri']} does not resolve now"
    return ""


STALE = {
    "address": _stale_address,
    "link": _stale_link,
    "correction": _stale_correction,
    "trail": _stale_trail,
}


def stale(proposal: Proposal) -> str:
    """Why the prepared change no longer applies as is ("" when it does)."""
    return STALE[proposal.kind](proposal)


def changed_addresses(proposal: Proposal) -> list[str]:
    """The addresses approving ``proposal`` changes (what links ``tm:changed-by`` to it)."""
    host = namespace().host
    change = proposal.change
    if proposal.kind == "link":
        first = change["links"][0]
        return sorted({first["from"], first["to"]})
    if proposal.kind == "correction":
        return [str(targets.address_of(change["correction"], host))]
    if proposal.kind == "trail":
        return [str(TmUri(host, "trail", (change["trail"]["name"],)))]
    return []


def decided_uri(proposal: Proposal) -> str:
    """``tm://<host>/proposals/<id>``: a decided proposal's public address."""
    return intake.public_uri(proposal)


def _apply(proposal: Proposal, user: Any, by: str) -> dict[str, Any]:
    change = proposal.change
    host = namespace().host
    applied: dict[str, Any] = {}
    if proposal.kind == "link":
        first = change["links"][0]
        CuratedLink.objects.create(
            rel=first["rel"], source=first["from"], target=first["to"], proposal=proposal
        )
        applied["links"] = change["links"]
    elif proposal.kind == "correction":
        row = change["correction"]
        target = targets.refind(row, host)
        assert target is not None  # not stale
        applied["changed"] = target.apply(row["field"], change["new"], user)
    elif proposal.kind == "trail":
        name = change["trail"]["name"]
        value = {k: proposal.proposed[k] for k in ("title", "description", "steps")}
        trail_corrections.correct(name, value, user, by, checkout=settings.TM_CHECKOUT)
        applied["trail"] = name
    me = decided_uri(proposal)
    for address in changed_addresses(proposal):
        CuratedLink.objects.get_or_create(
            rel="tm:changed-by", source=address, target=me, defaults={"proposal": proposal}
        )
    return applied


def decide(proposal_id: int, approve: bool, reason: str, user: Any) -> Proposal:
    """Approve (apply) or reject one open proposal with ``reason``, in one transaction.

    Raises:
        NotApplied: it is not open (decided, or older than ``TM_PROPOSALS_EXPIRE_DAYS``), or
            (approving) its change no longer applies.
    """
    reason = reason.strip()
    by = user.get_username() if getattr(user, "is_authenticated", False) else ""
    with transaction.atomic():
        proposal = Proposal.objects.select_for_update().get(pk=proposal_id)
        if proposal.state != "open":  # decided, or expired (marked so yet or not)
            raise NotApplied(f"proposal {proposal.pk} is {proposal.state}, not open")
        if approve:
            problem = stale(proposal)
            if problem:
                raise NotApplied(f"proposal {proposal.pk} is stale: {problem}")
            proposal.applied = _apply(proposal, user, by)
        proposal.status = "approved" if approve else "rejected"
        proposal.reason = reason
        proposal.decided_at = timezone.now()
        proposal.decided_by_name = by
        proposal.save()
        intake.announce(proposal, changed_addresses(proposal) if approve else ())
    return proposal
