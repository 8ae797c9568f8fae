"""The trails as served, and every maintainer's correction of one, with who and when.

* :class:`TrailCorrection` — one correction of one trail: the whole trail as it should read
  (title, description, steps), a trail added that has no file, a trail retired, or a trail
  given back to its file. Rows are never edited or deleted; the latest row of a trail is the
  one served, over its file (:mod:`tmsite.trails.index`).
* :class:`Trail` — one row per trail known, from its file or from a correction, as the index
  last saw it: what the admin lists, searches and filters. Rebuilt with the index; never the
  truth.
* :class:`TrailsVersion` — one row: a stamp written afresh by every correction, which every
  worker's memo of the trails compares on each read, and the stamp the index was built at.

Spec: OP4, TRAILS.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.conf import settings
from django.db import models, transaction
from django.utils import timezone

from tmsite import version_rows

STATES = [
    ("file", "from its file"),
    ("corrected", "corrected"),
    ("added", "added (no file)"),
    ("retired", "retired"),
    ("broken", "its file does not parse"),
]


class Trail(models.Model):
    """A trail as served (or retired), as the index last saw the files and the corrections."""

    name = models.CharField(max_length=64, primary_key=True, help_text="The file's stem.")
    title = models.CharField(max_length=2000, blank=True)
    description = models.TextField(blank=True)
    steps = models.JSONField(default=list, help_text="The steps served: [{uri, note}, …].")
    step_count = models.PositiveIntegerField(default=0)
    state = models.CharField(max_length=10, choices=STATES)
    has_file = models.BooleanField(default=False, help_text="notes/trails/<name>.json exists.")
    problem = models.TextField(blank=True, help_text="Why its file does not parse, if it does not.")
    file_modified = models.DateTimeField(null=True, blank=True)
    corrected_at = models.DateTimeField(null=True, blank=True)
    corrected_by_name = models.CharField(max_length=150, blank=True)

    class Meta:
        ordering = ("name",)

    def __str__(self) -> str:
        return self.name


class TrailCorrection(models.Model):
    """A maintainer's correction of one trail, kept whole: the latest of a trail is served."""

    ACTIONS: ClassVar[list[tuple[str, str]]] = [
        ("correct", "correct"),
        ("add", "add"),
        ("retire", "retire"),
        ("revert", "back to its file"),
    ]

    trail = models.CharField(max_length=64)
    action = models.CharField(max_length=10, choices=ACTIONS)
    changed = models.CharField(
        max_length=100, blank=True, help_text="What changed: title, description, steps, retired."
    )
    value = models.JSONField(
        null=True,
        help_text="The trail as corrected: title, description, steps (retired: as it was "
        "served when retired; back to its file: empty).",
    )
    file_value = models.JSONField(
        null=True,
        help_text="What its file said when corrected (empty: no file, or it did not parse).",
    )
    corrected_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    corrected_by_name = models.CharField(max_length=150, help_text="Kept if the user goes.")
    corrected_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("corrected_at", "id")
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=("trail", "corrected_at"), name="tm_trailcorr_lookup")
        ]

    def __str__(self) -> str:
        return f"{self.trail} {self.action}"


class TrailsVersion(models.Model):
    """One row (``pk=1``): the trails' change stamp and the stamp the index was built at."""

    version = models.CharField(
        max_length=32,
        blank=True,
        help_text="Written afresh whenever a trail correction is saved: the stamp every "
        "worker's memo of the trails checks.",
    )
    indexed = models.CharField(
        max_length=32, blank=True, help_text="The version the trail index was last built at."
    )

    def __str__(self) -> str:
        return self.version


def bump(using: str = "default") -> str:
    """Write a fresh version: every worker's memo of the trails is stale from its next read."""
    return version_rows.bump(TrailsVersion, using)


def _bump_version(sender: type[models.Model], instance: Any, using: str, **kwargs: Any) -> None:
    """A correction was saved: the version moves on, on the connection that saved it.

    This process forgets the trails it read, now and again once the save is committed.
    """
    from tmsite.trails import index

    bump(using)
    index.forget()
    transaction.on_commit(index.forget, using=using)


models.signals.post_save.connect(
    _bump_version, sender=TrailCorrection, dispatch_uid="trails-version"
)
models.signals.post_delete.connect(
    _bump_version, sender=TrailCorrection, dispatch_uid="trails-version-gone"
)
