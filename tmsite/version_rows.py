"""One-row version tables, each the stamp a per-process memo checks.

A memo (the trails' corrections, the curated links) learns from it that another worker
changed what it keeps: :func:`bump` writes a new version, :func:`read` reads it.

Spec: OP4.
"""

from __future__ import annotations

import uuid

from django.db import DatabaseError, IntegrityError, connection, models, transaction


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


def read(model: type[models.Model], columns: tuple[str, ...]) -> tuple[str, ...] | None:
    """``columns`` of ``model``'s one row, in one query.

    ``""`` for each without the row; None without the table (not migrated yet). Asked on every
    read of a memo, so spelled out rather than built by the ORM each time (a tenth of the cost).
    """
    quote = connection.ops.quote_name
    sql = (
        f"SELECT {', '.join(quote(c) for c in columns)} "
        f"FROM {quote(model._meta.db_table)} WHERE {quote('id')} = 1"
    )
    try:
        with connection.cursor() as cursor:
            cursor.execute(sql)
            row = cursor.fetchone()
    except DatabaseError:
        return None
    return tuple(str(v) for v in row) if row is not None else ("",) * len(columns)
