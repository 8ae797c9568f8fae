"""The proposals world: two decided proposals, and an open one no listing or refusal shows.

The collection is ``proposals/`` (decided proposals only, no collection below it); the leaf is
a decided proposal, read as ``application/vnd.tm.proposal+json``. The open proposal's text is
the secret: it is read by its receipt alone.
"""

from __future__ import annotations

from pathlib import Path

from django.utils import timezone

from tests.conformance.worlds import HOST, SECRET, World
from tmsite.core.types import vnd
from tmsite.mounts.proposals.mount import ProposalsMount
from tmsite.proposals import receipts
from tmsite.proposals.models import Proposal


def _proposal(n: int, status: str, expected: str) -> Proposal:
    uri = f"tm://{HOST}/nothing-{n}"
    proposed = {"uri": uri, "expected": expected}
    return Proposal.objects.create(
        receipt=receipts.new_id(),
        fingerprint=f"{n:064d}",
        kind="address",
        status=status,
        proposed=proposed,
        change={"note": {**proposed, "mount": "", "nearest": []}},
        decided_at=timezone.now() if status != "open" else None,
        reason="decided" if status != "open" else "",
    )


def world(tmp: Path) -> World:
    first = _proposal(1, "approved", "a thing")
    second = _proposal(2, "rejected", "another")
    hidden = _proposal(3, "open", SECRET)
    base = f"tm://{HOST}/proposals/"
    token = receipts.token(HOST, hidden.receipt)
    return World(
        mount=ProposalsMount(HOST),
        collection=base,
        leaf=f"{base}{first.pk}",
        typo=f"{base}{first.pk}0",
        hostile={
            f"{base}{hidden.pk}": "not-found",  # open: not by its number
            f"{base}{token[:-1]}{'A' if token[-1] != 'A' else 'B'}": "not-found",  # forged
            f"{base}{receipts.token('elsewhere', hidden.receipt)}": "not-found",  # another host's
            f"{base}..%2f{first.pk}": "not-found",
        },
        secret=SECRET,
        first_child=None,
        child_names=(str(first.pk), str(second.pk)),
        leaf_text=None,
        leaf_type=vnd("proposal"),
        leaf_pointer=("/status", "approved"),
        sub_collection=None,
        completion=("name", str(second.pk), [str(second.pk)]),
        indexed=True,
    )


world.needs_db = True  # type: ignore[attr-defined]
