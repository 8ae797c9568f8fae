"""Fill the entity tables from the validated records.

Two steps, kept apart so the entity mount can read a record "as it stood" at an older commit:

* :func:`~tmsite.entities.record_files.parse_records` is pure: the contents of
  ``data/autopsy.json`` and ``data/lessons.json`` become plain frozen records, or a
  :class:`RecordError` naming the file and the field path.
* :func:`fill` writes validated records into the models in one transaction with a constant
  number of bulk statements (bulk upserts keyed by the records' keys, then one delete per table
  for what the records no longer hold), applying maintainers' corrections again, so a reload is
  idempotent and corrections outlive it.

:func:`load_checkout` does both for a checkout directory; ``manage.py tm_load_records`` calls it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction

from tmsite.entities import models as m
from tmsite.entities.record_files import (
    AUTOPSY_FILE,
    BYTE_FIELDS,
    LESSONS_FILE,
    LINEAGE_FILE,
    GameRecord,
    InstanceRecord,
    LessonRecord,
    OffboxRecord,
    PatternRecord,
    RecordError,
    Records,
    RoutineRecord,
    parse_lineage,
    parse_records,
    pointer,
)

__all__ = [
    "AUTOPSY_FILE",
    "BYTE_FIELDS",
    "LESSONS_FILE",
    "LINEAGE_FILE",
    "GameRecord",
    "InstanceRecord",
    "LessonRecord",
    "LoadReport",
    "OffboxRecord",
    "PatternRecord",
    "RecordError",
    "Records",
    "RoutineRecord",
    "fill",
    "latest_corrections",
    "load_checkout",
    "parse_lineage",
    "parse_records",
    "pointer",
    "read_checkout",
]


@dataclass(frozen=True)
class LoadReport:
    """What one fill wrote."""

    patterns: int
    games: int
    routines: int
    lessons: int
    instances: int
    corrections_applied: int
    removed: dict[str, int] = field(default_factory=dict)


# --- filling the database ---------------------------------------------------------------------


def _routine_correction_key(game: str, routine: str) -> str:
    return f"{game}/{routine}"


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
    recorded = {name: getattr(obj, name) for name in obj.CORRECTABLE}
    obj.recorded = recorded
    applied = 0
    for name in obj.CORRECTABLE:
        row = corrections.get((entity, key, name))
        if row is not None:
            setattr(obj, name, row.value)
            applied += 1
    return applied


def _upsert(model: Any, rows: list[Any], unique_fields: list[str], fields: list[str]) -> None:
    """Insert ``rows``, or update an existing row with the same ``unique_fields`` in place.

    The update sets ``fields`` plus the recorded values and the load token; the row keeps its id.
    One statement per batch.
    """
    model.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=unique_fields,
        update_fields=[*fields, "recorded", "load_token"],
    )


def _ids_by_key(model: Any, token: str) -> dict[str, int]:
    """Key → id of the rows this load (``token``) wrote. One query."""
    return dict(model.objects.filter(load_token=token).values_list("key", "id"))


@transaction.atomic
def fill(records: Records) -> LoadReport:
    """Make the entity tables hold exactly ``records`` (plus corrections in force).

    Upserts keyed by the records' keys keep the rows' ids across reloads; one delete per table
    removes what the records no longer hold. The number of statements does not depend on how
    many entities there are (beyond the database's batch size).
    """
    token = uuid.uuid4().hex
    corrections = latest_corrections()
    applied = 0

    patterns = []
    for p in records.patterns:
        obj = m.Pattern(key=p.key, description=p.description, position=p.position, load_token=token)
        applied += _apply(obj, "pattern", p.key, corrections)
        patterns.append(obj)
    _upsert(m.Pattern, patterns, ["key"], ["description", "position"])
    pattern_ids = _ids_by_key(m.Pattern, token)

    games = []
    for g in records.games:
        game_obj = m.Game(
            key=g.key,
            name=g.name,
            sha256=g.sha256,
            mapper=g.mapper,
            prg=g.prg,
            chr=g.chr,
            extra=g.extra,
            position=g.position,
            load_token=token,
        )
        applied += _apply(game_obj, "game", g.key, corrections)
        games.append(game_obj)
    _upsert(m.Game, games, ["key"], ["name", "sha256", "mapper", "prg", "chr", "extra", "position"])
    game_ids = _ids_by_key(m.Game, token)

    routines = []
    for g in records.games:
        for r in g.routines:
            routine_obj = m.Routine(
                game_id=game_ids[g.key],
                bank=r.bank,
                addr=r.addr,
                name=r.name,
                kind=r.kind,
                extra=r.extra,
                position=r.position,
                load_token=token,
            )
            applied += _apply(
                routine_obj, "routine", _routine_correction_key(g.key, r.key), corrections
            )
            routines.append(routine_obj)
    _upsert(m.Routine, routines, ["game", "bank", "addr"], ["name", "kind", "extra", "position"])
    routine_ids = {
        (game, bank, addr): pk
        for pk, game, bank, addr in m.Routine.objects.filter(load_token=token).values_list(
            "id", "game_id", "bank", "addr"
        )
    }

    lessons = []
    for lesson in records.lessons:
        lesson_obj = m.Lesson(
            key=lesson.key,
            title=lesson.title,
            kind=lesson.kind,
            description=lesson.description,
            game_id=game_ids[lesson.game],
            tree=lesson.tree,
            extra=lesson.extra,
            position=lesson.position,
            load_token=token,
        )
        applied += _apply(lesson_obj, "lesson", lesson.key, corrections)
        lessons.append(lesson_obj)
    _upsert(
        m.Lesson,
        lessons,
        ["key"],
        ["title", "kind", "description", "game", "tree", "extra", "position"],
    )
    lesson_ids = _ids_by_key(m.Lesson, token)

    # The relations carry no identity of their own: replace them wholesale.
    m.GamePattern.objects.all().delete()
    m.RoutinePattern.objects.all().delete()
    m.LessonPattern.objects.all().delete()
    m.GamePattern.objects.bulk_create(
        m.GamePattern(game_id=game_ids[g.key], pattern_id=pattern_ids[name], count=count)
        for g in records.games
        for name, count in g.patterns.items()
    )
    instances = [
        m.RoutinePattern(
            routine_id=routine_ids[(game_ids[g.key], r.bank, r.addr)],
            pattern_id=pattern_ids[i.pattern],
            evidence=i.evidence,
            position=index,
        )
        for g in records.games
        for r in g.routines
        for index, i in enumerate(r.instances)
    ]
    m.RoutinePattern.objects.bulk_create(instances)
    m.LessonPattern.objects.bulk_create(
        m.LessonPattern(lesson_id=lesson_ids[x.key], pattern_id=pattern_ids[name], count=count)
        for x in records.lessons
        for name, count in x.patterns.items()
    )

    removed = {
        "lessons": _remove_stale(m.Lesson, token),
        "routines": _remove_stale(m.Routine, token),
        "games": _remove_stale(m.Game, token),
        "patterns": _remove_stale(m.Pattern, token),
    }
    return LoadReport(
        patterns=len(patterns),
        games=len(games),
        routines=len(routines),
        lessons=len(lessons),
        instances=len(instances),
        corrections_applied=applied,
        removed=removed,
    )


def _remove_stale(model: Any, token: str) -> int:
    deleted: int = model.objects.exclude(load_token=token).delete()[0]
    return deleted


def read_checkout(checkout: Path) -> Records:
    """Parse the two record files of a checkout directory."""
    autopsy = (checkout / AUTOPSY_FILE).read_bytes()
    lessons = (checkout / LESSONS_FILE).read_bytes()
    return parse_records(autopsy, lessons)


def load_checkout(checkout: Path) -> LoadReport:
    """Parse a checkout's records and fill the tables from them."""
    return fill(read_checkout(checkout))
