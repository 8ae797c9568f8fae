"""One row per kind of thing this host has served, since it began recording.

Spec: KINDS.
"""

from __future__ import annotations

from django.db import models


class KindCount(models.Model):
    """How often one kind was served, as what, carrying which link relations, and when.

    ``media_types`` and ``rels`` are objects of counts (``{"text/markdown": 3}``): a kind read
    as different types, or carrying a relation on some reads only, says so.
    """

    kind = models.CharField(max_length=64, unique=True)
    count = models.BigIntegerField(default=0)
    media_types = models.JSONField(default=dict)
    rels = models.JSONField(default=dict)
    first_served = models.DateTimeField()
    last_served = models.DateTimeField()

    class Meta:
        ordering = ("kind",)

    def __str__(self) -> str:
        return f"{self.kind}: {self.count}"
