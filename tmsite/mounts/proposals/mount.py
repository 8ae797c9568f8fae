"""The ``proposals`` mount: decided proposals, a proposer's receipt, and the curated links.

``proposals/`` lists the decided proposals (approved and rejected) only; ``proposals/<id>``
reads one. ``proposals/<token>`` is a receipt (``propose`` answers with it): the one address an
open proposal is read at, by whoever holds the signed, unguessable token — its status, the
prepared change as a diff, the decision and its reason (an open proposal older than
``TM_PROPOSALS_EXPIRE_DAYS`` reads as expired, marked so yet or not). A token that does not
verify, or whose expired proposal was deleted past its retention, reads as ``not-found``.
Unreviewed text is served to nobody but the holder of its receipt.

Every read of any address carries the curated links a maintainer approved about it
(:class:`~tmsite.proposals.models.CuratedLink`, ``confidence: exact``, ``provenance:
curated``), from this process's memo of them (:mod:`tmsite.proposals.curated`: no query while
their version was asked less than a second ago): the link itself on a read of its ``from``,
its inverse (where the relation has one) on a read of its ``to``; an address an approved
proposal changed links ``tm:changed-by`` to it, and the proposal ``tm:changes`` back.

Spec: PROP1, PROP2, LK2.
"""

from __future__ import annotations

import builtins
from collections.abc import Hashable, Iterator, Mapping
from datetime import datetime
from functools import partial
from typing import Any

from django.db.models import Count, Max
from typing_extensions import override

from tmsite.core.errors import NotFound
from tmsite.core.links import INVERSE, Link
from tmsite.core.types import (
    Content,
    Document,
    Entry,
    JsonValue,
    Listing,
    Request,
    Stat,
    Template,
    vnd,
)
from tmsite.core.uri import TmUri
from tmsite.mounts.base import Mount, whole_stat
from tmsite.proposals import curated, diff, receipts
from tmsite.proposals.models import DECIDED, Proposal
from tmsite.search.passages import digest, words

CURATED = "curated"
MAX_KEY = 1000


class ProposalsMount(Mount):
    """``proposals/``: decided proposals by id; receipts by token."""

    name = "proposals"
    title = "Proposals"
    what = (
        "What clients proposed and maintainers decided: approved and rejected proposals, "
        "each with its change and the reason. Propose with the propose tool."
    )

    @override
    def list(self, req: Request) -> Listing:
        if req.uri.path:
            raise NotFound(req.text, "proposals/ holds proposals only, no collections")
        decided = Proposal.objects.filter(status__in=DECIDED).order_by("id")
        return Listing(
            [
                Entry(
                    str(self.uri(str(p.pk))),
                    str(p.pk),
                    False,
                    vnd("proposal"),
                    title=f"{p.kind} proposal, {p.status}",
                    extra={"kind": p.kind, "status": p.status},
                    modified=p.decided_at,
                )
                for p in decided
            ]
        )

    def _find(self, req: Request, name: str) -> tuple[Proposal, bool]:
        """The proposal ``name`` reads, and whether it was read by its receipt."""
        if name.isdigit() and len(name) < 19:
            found = Proposal.objects.filter(pk=int(name), status__in=DECIDED).first()
            if found is not None:
                return found, False
            raise NotFound(req.text, f"no decided proposal numbered {name}")
        receipt = receipts.receipt_of(self.host, name)
        found = Proposal.objects.filter(receipt=receipt).first() if receipt else None
        if found is None:
            raise NotFound(req.text, "no proposal has this receipt", nearest=[str(self.root)])
        return found, True

    @override
    def read(self, req: Request) -> Content:
        name = self.flat_leaf(req, "a proposal")
        proposal, by_receipt = self._find(req, name)
        me = self.uri(name)
        links = [*self.up_links(req.uri), Link("describedby", str(me.with_params({"as": "stat"})))]
        public = self.uri(str(proposal.pk))
        if not by_receipt:
            links.append(Link("collection", str(self.root)))
        elif proposal.decided:
            links.append(Link("alternate", str(public), title="the decided proposal"))
        own: dict[str, JsonValue] = {"kind": proposal.kind, "status": proposal.state}
        if req.facets.facet == "stat":
            whole_stat(req)
            stat = Stat(str(me), name, vnd("proposal"), modified=_decided_at(proposal), extra=own)
            return stat.content(req.text, [*links, Link("alternate", str(me))])
        body: dict[str, JsonValue] = {
            "uri": str(me),
            **own,
            "count": proposal.count,
            "proposed": proposal.proposed,
            "change": proposal.change,
            "diff": diff.of(proposal.kind, proposal.change),
            "proposedAt": proposal.created_at.isoformat(),
            "decision": _decision(proposal),
        }
        if proposal.decided:
            body["decided"] = str(public)
        return Content(req.text, vnd("proposal"), body, links, kind="proposal")

    @override
    def documents_stamp(self) -> Hashable:
        """The decided proposals, in brief: how many, and the newest decision."""
        decided = Proposal.objects.filter(status__in=DECIDED)
        return tuple(decided.aggregate(n=Count("id"), last=Max("decided_at")).values())

    @override
    def documents(self) -> Iterator[Document]:
        """Each decided proposal: what was proposed, the change and the decision's reason.

        An open proposal is never offered: its text is unreviewed, read by its receipt alone.
        """
        decided = Proposal.objects.filter(status__in=DECIDED).order_by("id")
        for proposal in decided.iterator(chunk_size=500):
            shown = [proposal.kind, proposal.status, proposal.proposed, proposal.change]
            text = "\n".join(words([*shown, proposal.reason])) + "\n"
            yield Document(
                str(self.uri(str(proposal.pk))),
                f"{proposal.kind} proposal {proposal.pk}, {proposal.status}",
                "proposal",
                digest(text),
                vnd("proposal"),
                partial(str, text),
            )

    @override
    def links_stamp(self) -> Hashable:
        """How many times this process dropped its curated links (a link approved here)."""
        return curated.forgotten()

    @override
    def links_into(self, uri: TmUri) -> builtins.list[Link]:
        """The curated links about ``uri`` (a plain address): its own, and inverses into it."""
        if uri.is_hosts or uri.host != self.host or uri.params:
            return []
        key = str(uri)
        if len(key) > MAX_KEY:
            return []
        links = []
        for rel, source, target in curated.about(key):
            if source == key:
                links.append(Link(rel, target, "exact", provenance=CURATED))
            if target == key and rel in INVERSE:
                links.append(Link(INVERSE[rel], source, "exact", provenance=CURATED))
        return links

    @override
    def complete(self, argument: str, value: str, context: Mapping[str, str]) -> builtins.list[str]:
        return self.complete_flat_leaf(
            argument,
            value,
            lambda: [
                str(pk)
                for pk in Proposal.objects.filter(status__in=DECIDED)
                .order_by("id")
                .values_list("pk", flat=True)
            ],
        )

    @override
    def templates(self) -> builtins.list[Template]:
        return [
            Template(
                "proposal",
                f"tm://{self.host}/proposals/{{name}}",
                "A decided proposal, or a receipt",
                "A proposal by its number once decided (approved or rejected; proposals/ lists "
                "them), or by the receipt token the propose tool answered with: its status, the "
                "change prepared for review as a diff, and the decision with its reason.",
                ("name", "as"),
                vnd("proposal"),
            )
        ]


def _decided_at(proposal: Proposal) -> datetime | None:
    """When it was decided, or expired (an open one past its age: when its time ran out)."""
    if proposal.status == "open":
        return proposal.expires_at if proposal.state == "expired" else None
    return proposal.decided_at


def _decision(proposal: Proposal) -> dict[str, Any] | None:
    state = proposal.state
    if state == "open":
        return None
    at = _decided_at(proposal)
    return {
        "status": state,
        "reason": proposal.reason,
        "at": at.isoformat() if at else None,
    }
