"""Fill the entity tables from the validated records.

Two steps, kept apart so the entity mount can read a record "as it stood" at an older commit:

* :func:`~tmsite.entities.record_files.parse_records` is pure: the contents of
  ``data/autopsy.json`` and ``data/lessons.json`` become plain frozen records, or a
  :class:`RecordError` naming the file and the field path.
* :func:`fill` writes validated records into the models in one transaction with a constant
  number of bulk statements (bulk upserts keyed by the records' keys, then one delete per table
  for what the records no longer hold), applying maintainers' corrections again, so a reload is
  idempotent and corrections outlive it. It loops over the kinds of
  :mod:`tmsite.entities.kinds`: each kind's rows, then each relation's link rows. Each row
  keeps when the record files its read is made from last changed (``data_modified``, from
  :attr:`Records.modified`), so what is served is dated by the files as loaded, not as they
  are now.

:func:`load_checkout` does both for a checkout directory; ``manage.py tm_load_records`` calls it.

Spec: ENT, OP4.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.apps import apps
from django.db import connection, transaction

from tmsite.entities import kinds as K
from tmsite.entities import models as m
from tmsite.entities.record_files import (
    AUTOPSY_FILE,
    BYTE_FIELDS,
    LESSONS_FILE,
    LINEAGE_FILE,
    OffboxRecord,
    RecordError,
    Records,
    parse_lineage,
    parse_records,
)
from tmsite.entities.records import correction_key

__all__ = [
    "BYTE_FIELDS",
    "LINEAGE_FILE",
    "LoadReport",
    "OffboxRecord",
    "RecordError",
    "Records",
    "fill",
    "latest_corrections",
    "load_checkout",
    "parse_lineage",
    "parse_records",
    "read_checkout",
]


@dataclass(frozen=True)
class LoadReport:
    """What one fill wrote: rows per kind (by plural) and per relation's link rows."""

    written: dict[str, int]
    corrections_applied: int
    removed: dict[str, int] = field(default_factory=dict)
    #: The record files the checkout does not have (their kinds hold nothing).
    absent: tuple[str, ...] = ()

    @property
    def patterns(self) -> int:
        """Pattern rows written."""
        return self.written.get("patterns", 0)

    @property
    def games(self) -> int:
        """Game rows written."""
        return self.written.get("games", 0)

    @property
    def routines(self) -> int:
        """Routine rows written."""
        return self.written.get("routines", 0)

    @property
    def lessons(self) -> int:
        """Lesson rows written."""
        return self.written.get("lessons", 0)

    @property
    def instances(self) -> int:
        """Routine pattern instances written (a routine's pattern with its evidence)."""
        return self.written.get("instances", 0)


def latest_corrections() -> dict[tuple[str, str, str], m.Correction]:
    """The correction in force for each (entity, key, field): the latest one. One query."""
    latest: dict[tuple[str, str, str], m.Correction] = {}
    for row in m.Correction.objects.order_by("corrected_at", "id"):
        latest[(row.entity, row.key, row.field)] = row
    return latest


def _apply(
    obj: Any,
    entity: str,
    key: str,
    corrections: Mapping[tuple[str, str, str], m.Correction],
) -> int:
    """Set the record's values of the correctable fields, then any corrections; count them."""
    correctable = getattr(obj, "CORRECTABLE", ())
    obj.recorded = {name: getattr(obj, name) for name in correctable}
    applied = 0
    for name in correctable:
        row = corrections.get((entity, key, name))
        if row is not None:
            setattr(obj, name, row.value)
            applied += 1
    return applied


class _Fill:
    """One fill: the load token, the corrections in force, the ids of the rows written."""

    def __init__(self, records: Records) -> None:
        self.records = records
        self.token = uuid.uuid4().hex
        self.corrections = latest_corrections()
        self.ids: dict[tuple[str, K.Key], int] = {}
        self.written: dict[str, int] = {}
        self.applied = 0

    def id_of(self, kind: str, key: K.Key) -> int:
        return self.ids[(kind, key)]

    def kind(self, kind: K.Kind) -> None:
        """Upsert the kind's rows (ids kept across reloads), then read their ids. Two queries."""
        if kind.row is None:
            return
        rows = []
        modified = K.data_modified(kind.name, self.records.modified)
        for entry in kind.entries(self.records):
            obj = kind.row(entry.record, entry.parent, self.id_of)
            obj.load_token = self.token  # type: ignore[attr-defined]
            obj.data_modified = modified  # type: ignore[attr-defined]
            key = correction_key(kind.name, (entry.key, entry.parent))
            self.applied += _apply(obj, kind.name, key, self.corrections)
            rows.append(obj)
        kind.model._default_manager.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=list(kind.unique),
            update_fields=[*kind.updates, "recorded", "load_token", "data_modified"],
        )
        self.written[kind.plural] = len(rows)
        written = kind.model._default_manager.filter(load_token=self.token)
        for pk, *values in written.values_list("pk", *kind.columns()):
            self.ids[(kind.name, kind.key_of(values))] = pk

    def links(self, kind: K.Kind, relation: K.Relation) -> None:
        """Replace a relation's link rows wholesale (they carry no identity of their own)."""
        storage = relation.storage
        if not isinstance(storage, K.Through):
            return
        manager = storage.model._default_manager
        manager.all().delete()
        made = [
            storage.model(
                **{
                    f"{storage.near}_id": self.id_of(kind.name, edge.near),
                    f"{storage.far}_id": self.id_of(relation.member, edge.far),
                    **edge.values,
                }
            )
            for edge in relation.edges(self.records)
        ]
        manager.bulk_create(made)
        self.written[storage.rows] = len(made)

    def remove_stale(self) -> dict[str, int]:
        """One delete per kind, the kinds pointed to last."""
        removed = {}
        for kind in reversed(K.KINDS.values()):
            if kind.row is not None:
                stale = kind.model._default_manager.exclude(load_token=self.token)
                removed[kind.plural] = stale.delete()[0]
        return removed


@transaction.atomic
def fill(records: Records) -> LoadReport:
    """Make the entity tables hold exactly ``records`` (plus corrections in force).

    Upserts keyed by the records' keys keep the rows' ids across reloads; one delete per table
    removes what the records no longer hold. The number of statements does not depend on how
    many entities there are (beyond the database's batch size).
    """
    run = _Fill(records)
    for kind in K.KINDS.values():
        run.kind(kind)
    for kind in K.KINDS.values():
        for relation in kind.relations:
            run.links(kind, relation)
    removed = run.remove_stale()
    _refresh_statistics()
    absent = tuple(records.file_name(source) for source in sorted(records.absent))
    return LoadReport(
        written=run.written, corrections_applied=run.applied, removed=removed, absent=absent
    )


def _refresh_statistics() -> None:
    """Tell PostgreSQL's planner what the tables now hold.

    A load changes the tables wholesale; until autovacuum gets to them (and never inside the
    load's own transaction) the planner keeps the old row counts, and a member page of a pattern
    in thousands of routines was planned as a nested loop of seconds. One ``ANALYZE`` of the
    entity tables, a constant number of statements, keeps every page in milliseconds.
    """
    if connection.vendor != "postgresql":
        return
    tables = [model._meta.db_table for model in apps.get_app_config("tm_entities").get_models()]
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE " + ", ".join(connection.ops.quote_name(t) for t in tables))


def _read_dated(path: Path) -> tuple[bytes | None, datetime | None]:
    """A file's bytes and its modification time as they were read (``fstat`` of the open file).

    ``(None, None)`` when the checkout has no such file: the records are optional.
    """
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        return None, None
    with handle:
        content = handle.read()
        mtime = os.fstat(handle.fileno()).st_mtime
    return content, datetime.fromtimestamp(mtime, UTC)


def read_checkout(checkout: Path) -> Records:
    """Parse the record files of a checkout directory, dated by their modification times.

    A file the checkout does not have holds nothing (:attr:`Records.absent` names it).
    """
    autopsy, autopsy_modified = _read_dated(checkout / AUTOPSY_FILE)
    lessons, lessons_modified = _read_dated(checkout / LESSONS_FILE)
    dated = {"autopsy": autopsy_modified, "lessons": lessons_modified}
    modified = {source: when for source, when in dated.items() if when is not None}
    return parse_records(autopsy, lessons, modified=modified)


def load_checkout(checkout: Path) -> LoadReport:
    """Parse a checkout's records and fill the tables from them."""
    return fill(read_checkout(checkout))
