"""Proposals, the curated links approved from them, and the per-caller daily counts.

* :class:`Proposal` — one proposal as prepared for review: its kind, what was proposed (plain
  text, normalised), the prepared change, how many times it was proposed, and the decision.
  Of who proposed it, it holds only its ``source`` on the UTC day it was made: the day's keyed
  hash of the caller (the daily count's key, meaningless the next day), by which the full queue
  is shared between sources, blanked once the day is over. An open one older than
  ``TM_PROPOSALS_EXPIRE_DAYS`` is expired (:attr:`Proposal.state`) whether or not the row says
  so yet.
* :class:`CuratedLink` — a link a maintainer approved: every read of ``source`` carries it,
  and every read of ``target`` its inverse where the relation has one.
* :class:`CuratedVersion` — one row: a stamp written afresh whenever a curated link is saved
  or deleted, which every worker's memo of the curated links (:mod:`tmsite.proposals.curated`)
  compares, at most once a second.
* :class:`CallerDay` — how many proposals one caller made on one UTC day, keyed by the rate
  limit's daily keyed hash (meaningless the next day) and deleted once the day is over.

Spec: PROP1, PROP2, PROP3.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, ClassVar

from django.conf import settings
from django.db import models, transaction
from django.utils import timezone

from tmsite import version_rows

KINDS = [
    ("address", "an address that does not resolve"),
    ("link", "a link the namespace does not draw"),
    ("correction", "a correction of a map entry or an entity field"),
    ("trail", "a trail through the namespace"),
]
STATUSES = [
    ("open", "open"),
    ("approved", "approved"),
    ("rejected", "rejected"),
    ("expired", "expired"),
]
DECIDED = ("approved", "rejected")


def lifetime() -> timedelta:
    """How long an open proposal waits for a decision: ``TM_PROPOSALS_EXPIRE_DAYS``."""
    return timedelta(days=float(settings.TM_PROPOSALS_EXPIRE_DAYS))


def expiry_cutoff(now: datetime | None = None) -> datetime:
    """Open proposals made before this are expired."""
    return (now or timezone.now()) - lifetime()


class Proposal(models.Model):
    """One proposal: what was asked, the change prepared for it, and what was decided."""

    receipt = models.CharField(
        max_length=32, unique=True, help_text="The receipt's random id (the token signs it)."
    )
    fingerprint = models.CharField(
        max_length=64, help_text="SHA-256 of the kind and what was proposed: identical ones."
    )
    kind = models.CharField(max_length=10, choices=KINDS)
    status = models.CharField(max_length=10, choices=STATUSES, default="open")
    proposed = models.JSONField(help_text="What was proposed, normalised (plain text).")
    change = models.JSONField(help_text="The change prepared for review.")
    nearest = models.JSONField(default=list, help_text="The nearest existing addresses.")
    mount = models.CharField(max_length=32, blank=True, help_text="The mount it concerns.")
    count = models.PositiveIntegerField(default=1, help_text="How many times it was proposed.")
    source = models.CharField(
        max_length=32,
        blank=True,
        default="",
        help_text="The day's keyed hash of the caller that made it (the daily count's key), "
        "kept only on the UTC day it was made: how a full queue is shared between sources.",
    )
    created_at = models.DateTimeField(default=timezone.now)
    last_proposed_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by_name = models.CharField(max_length=150, blank=True)
    reason = models.TextField(blank=True, help_text="Why it was approved or rejected.")
    applied = models.JSONField(null=True, blank=True, help_text="What approving it changed.")

    class Meta:
        ordering = ("-last_proposed_at", "id")
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(
                fields=("fingerprint",),
                condition=~models.Q(status="expired"),
                name="tm_prop_one_live",
            )
        ]
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=("status", "created_at"), name="tm_prop_status"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} ({self.status})"

    @property
    def expires_at(self) -> datetime:
        """When this proposal expires if it is still open then."""
        return self.created_at + lifetime()

    @property
    def state(self) -> str:
        """The status as served: an open proposal past its age is expired, marked or not."""
        if self.status == "open" and self.created_at < expiry_cutoff():
            return "expired"
        return self.status

    @property
    def decided(self) -> bool:
        """Approved or rejected: public under ``proposals/<id>``."""
        return self.status in DECIDED


class CuratedLink(models.Model):
    """A link a maintainer approved from a proposal: ``source`` → ``target`` as ``rel``."""

    rel = models.CharField(max_length=40)
    source = models.CharField(max_length=1000)
    target = models.CharField(max_length=1000)
    proposal = models.ForeignKey(Proposal, on_delete=models.PROTECT, related_name="links")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("rel", "target", "id")
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(fields=("rel", "source", "target"), name="tm_curated_unique")
        ]
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=("source",), name="tm_curated_source"),
            models.Index(fields=("target",), name="tm_curated_target"),
        ]

    def __str__(self) -> str:
        return f"{self.source} {self.rel} {self.target}"


class CuratedVersion(models.Model):
    """One row (``pk=1``): the curated links' change stamp."""

    version = models.CharField(
        max_length=32,
        blank=True,
        help_text="Written afresh whenever a curated link is saved or deleted: the stamp every "
        "worker's memo of the curated links checks.",
    )

    def __str__(self) -> str:
        return self.version


def bump(using: str = "default") -> str:
    """Write a fresh version: every worker's memo of the curated links is stale within a second."""
    return version_rows.bump(CuratedVersion, using)


def _bump_version(sender: type[models.Model], instance: Any, using: str, **kwargs: Any) -> None:
    """A curated link was saved or deleted: the version moves on, on the connection that saved it.

    This process forgets the curated links it read, now and again once the save is committed.
    """
    from tmsite.proposals import curated

    bump(using)
    curated.forget()
    transaction.on_commit(curated.forget, using=using)


models.signals.post_save.connect(_bump_version, sender=CuratedLink, dispatch_uid="curated-version")
models.signals.post_delete.connect(
    _bump_version, sender=CuratedLink, dispatch_uid="curated-version-gone"
)


class CallerDay(models.Model):
    """Proposals one caller made on one UTC day; ``key`` is the day's keyed hash."""

    key = models.CharField(max_length=32)
    day = models.IntegerField(help_text="Days since the epoch, UTC.")
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(fields=("key", "day"), name="tm_callerday_unique")
        ]

    def __str__(self) -> str:
        return f"{self.day}: {self.count}"
