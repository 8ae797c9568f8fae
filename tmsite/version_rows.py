"""One-row version tables, each the stamp a per-process memo checks.

A memo (the trails' corrections, the curated links) learns from it that another worker
changed what it keeps.

Spec: OP4.
"""

from __future__ import annotations

import uuid

from django.db import IntegrityError, models, transaction


def bump(model: type[models.Model], using: str = "default") -> str:
    """Write a fresh version into ``model``'s one row (made if missing); returns it."""
    stamp = uuid.uuid4().hex
    versions = model._default_manager.using(using)
    if not versions.filter(pk=1).update(version=stamp):
        try:
            with transaction.atomic(using=using):
                versions.create(pk=1, version=stamp)
        except IntegrityError:  # made by another writer just now
            versions.filter(pk=1).update(version=stamp)
    return stamp
