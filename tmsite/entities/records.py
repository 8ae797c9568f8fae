"""The read API the entity mount uses: entities by key, their relations in pages.

Every entity comes back as an :class:`Entity`: its kind and key, the record's fields as JSON
(with maintainers' corrections applied), the first page of each relation with the relation's
size, the record file it lives in and its JSON pointer there. Relations are read in pages with
:func:`related`; every read is a constant number of SQL queries, whatever the size.

Keys are checked against ASCII patterns before any query (:func:`check_key`,
:func:`parse_routine_key`); a key that does not match raises :class:`InvalidKey`, and a key that
matches but names nothing returns ``None``.

The same shapes are built from plain :class:`~tmsite.entities.loaders.Records` (an older
revision's record, parsed with :func:`~tmsite.entities.loaders.parse_records`) by
:class:`Snapshot`, so an entity "as its record stood" reads like the current one.

Relations, by kind (``rel`` → member kind):

========  ===================  =========  ============================
kind      rel                  members    member extras
========  ===================  =========  ============================
pattern   ``found-in``         game       ``count``
pattern   ``instance``         routine    ``game``, ``evidence``
pattern   ``demonstrated-by``  lesson     ``count``
game      ``pattern``          pattern    ``count``
game      ``routine``          routine    ``game``
game      ``measured-by``      lesson
routine   ``instance-of``      pattern    ``evidence``
routine   ``game``             game
lesson    ``pattern``          pattern    ``count``
lesson    ``measures``         game
========  ===================  =========  ============================
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db.models import QuerySet

from tmsite.entities import models as m
from tmsite.entities.loaders import (
    AUTOPSY_FILE,
    LESSONS_FILE,
    GameRecord,
    Records,
    RoutineRecord,
    pointer,
)

KINDS = ("pattern", "game", "routine", "lesson")

RELATIONS: dict[str, tuple[str, ...]] = {
    "pattern": ("found-in", "instance", "demonstrated-by"),
    "game": ("pattern", "routine", "measured-by"),
    "routine": ("instance-of", "game"),
    "lesson": ("pattern", "measures"),
}

#: How many members of each relation an entity read carries inline.
INLINE_LIMIT = 50
#: The largest page :func:`related` and :func:`list_entities` give.
MAX_LIMIT = 500

_PATTERN_KEY = re.compile(r"[a-z0-9][a-z0-9-]{0,63}", re.ASCII)
_GAME_KEY = re.compile(r"[0-9a-f]{12}", re.ASCII)
_ROUTINE_KEY = re.compile(r"b(0|[1-9][0-9]{0,2})-([0-9A-F]{4})", re.ASCII)
_MAX_KEY_LEN = 64


class InvalidKey(ValueError):
    """A key that is not of its kind's shape; no query was made."""

    def __init__(self, kind: str, key: object, reason: str) -> None:
        self.kind = kind
        self.key = key
        self.reason = reason
        super().__init__(f"invalid {kind} key {key!r}: {reason}")


_SHAPES = {
    "pattern": (_PATTERN_KEY, "must match ^[a-z0-9][a-z0-9-]{0,63}$"),
    "lesson": (_PATTERN_KEY, "must match ^[a-z0-9][a-z0-9-]{0,63}$"),
    "game": (_GAME_KEY, "must be 12 lowercase hex digits"),
    "routine": (_ROUTINE_KEY, "must be b<bank>-<ADDR>: bank 0..255, 4 uppercase hex digits"),
}


def check_key(kind: str, key: object) -> str:
    """Return ``key`` if it has the shape of a ``kind`` key, else raise :class:`InvalidKey`.

    The check is on ASCII patterns with a length cap, before any query: SQL-shaped text,
    non-ASCII digits, ``1_000``, NUL, overlong or non-string keys all fail here.
    """
    if kind not in _SHAPES:
        raise InvalidKey(kind, key, f"unknown kind; one of {', '.join(KINDS)}")
    if not isinstance(key, str):
        raise InvalidKey(kind, key, "must be a string")
    if len(key) > _MAX_KEY_LEN:
        raise InvalidKey(kind, key, f"longer than {_MAX_KEY_LEN} characters")
    shape, reason = _SHAPES[kind]
    found = shape.fullmatch(key)
    if found is None:
        raise InvalidKey(kind, key, reason)
    if kind == "routine" and int(found.group(1)) > 255:
        raise InvalidKey(kind, key, reason)
    return key


def parse_routine_key(key: object) -> tuple[int, int]:
    """``b0-8E5C`` → ``(0, 0x8E5C)``; raises :class:`InvalidKey` for anything else."""
    checked = check_key("routine", key)
    bank, addr = checked[1:].split("-")
    return int(bank), int(addr, 16)


def routine_key(bank: int, addr: int) -> str:
    """``(0, 0x8E5C)`` → ``b0-8E5C``."""
    return f"b{bank}-{addr:04X}"


# --- shapes -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ref:
    """Which entity: a kind, a key, and for a routine the key of its game."""

    kind: str
    key: str
    game: str | None = None

    @classmethod
    def of(cls, kind: str, key: object, game: object = None) -> Ref:
        """A checked reference; raises :class:`InvalidKey` before any query."""
        if kind == "routine":
            return cls(kind, check_key("routine", key), check_key("game", game))
        if game is not None:
            raise InvalidKey(kind, key, "only a routine has a game")
        return cls(kind, check_key(kind, key))


@dataclass(frozen=True)
class Member:
    """One member of a relation."""

    kind: str
    key: str
    game: str | None = None
    count: int | None = None
    evidence: dict[str, Any] | None = None

    def as_json(self) -> dict[str, Any]:
        """The member as JSON, without the fields its relation does not carry."""
        out: dict[str, Any] = {"kind": self.kind, "key": self.key}
        for name in ("game", "count", "evidence"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out


@dataclass(frozen=True)
class Page:
    """A page of a relation or a collection: ``total`` members in all."""

    items: tuple[Member, ...]
    total: int
    offset: int
    limit: int

    @property
    def next_offset(self) -> int | None:
        """Where the next page starts, or ``None`` after the last."""
        end = self.offset + len(self.items)
        return end if end < self.total and self.items else None

    def as_json(self) -> dict[str, Any]:
        return {
            "items": [i.as_json() for i in self.items],
            "total": self.total,
            "offset": self.offset,
            "limit": self.limit,
            "next_offset": self.next_offset,
        }


@dataclass(frozen=True)
class Entity:
    """An entity as read: fields, first page of each relation, where its record is."""

    kind: str
    key: str
    game: str | None
    fields: dict[str, Any]
    related: dict[str, Page]
    file: str
    pointer: str
    corrections: tuple[dict[str, Any], ...] = field(default=())

    @property
    def counts(self) -> dict[str, int]:
        """The size of each relation."""
        return {rel: page.total for rel, page in self.related.items()}

    def as_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "key": self.key,
            **({"game": self.game} if self.game else {}),
            "fields": self.fields,
            "related": {rel: page.as_json() for rel, page in self.related.items()},
            "file": self.file,
            "pointer": self.pointer,
            "corrections": list(self.corrections),
        }


def _window(offset: int, limit: int) -> tuple[int, int]:
    if type(offset) is not int or offset < 0:
        raise ValueError("offset must be an integer >= 0")
    if type(limit) is not int or not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be an integer 1..{MAX_LIMIT}")
    return offset, limit


# --- the database side ------------------------------------------------------------------------


def game_fields(game: m.Game) -> dict[str, Any]:
    """The fields of a game entity, from its row: the columns, then the record's extras."""
    return {
        "key": game.key,
        "name": game.name,
        "sha256": game.sha256,
        "mapper": game.mapper,
        "prg": game.prg,
        "chr": game.chr,
        **game.extra,
    }


def routine_fields(routine: m.Routine, instances: Sequence[m.RoutinePattern]) -> dict[str, Any]:
    """The fields of a routine entity, from its row and its pattern instances.

    ``instances`` are the routine's :class:`~tmsite.entities.models.RoutinePattern` rows with
    their patterns loaded, in record order; they become the ``is`` list. No query is made.
    """
    return {
        "name": routine.name,
        "bank": f"prg{routine.bank}",
        "addr": routine.addr,
        "kind": routine.kind,
        **routine.extra,
        "is": [{"pattern": i.pattern.key, "evidence": i.evidence} for i in instances],
    }


def lesson_fields(lesson: m.Lesson) -> dict[str, Any]:
    """The fields of a lesson entity, from its row (with ``game`` loaded, else one more query)."""
    return {
        "key": lesson.key,
        "title": lesson.title,
        "kind": lesson.kind,
        "description": lesson.description,
        "game": lesson.game.key,
        "tree": lesson.tree,
        **lesson.extra,
    }


def _page(qs: QuerySet[Any], make: Callable[[Any], Member], offset: int, limit: int) -> Page:
    """Two queries: the size, then the slice."""
    total = qs.count()
    items = tuple(make(row) for row in qs[offset : offset + limit]) if offset < total else ()
    return Page(items=items, total=total, offset=offset, limit=limit)


def relation(ref: Ref, rel: str, owner_id: int) -> tuple[QuerySet[Any], Callable[[Any], Member]]:
    """The queryset of one relation, ordered as the record orders it, and its member maker.

    ``owner_id`` is the primary key of ``ref``'s row (see :func:`owner`); nothing is queried
    until the queryset is evaluated. Raises :class:`ValueError` for a relation ``ref``'s kind
    does not have.
    """
    if ref.kind == "pattern":
        if rel == "found-in":
            return (
                m.GamePattern.objects.filter(pattern_id=owner_id)
                .select_related("game")
                .order_by("game__position"),
                lambda r: Member("game", r.game.key, count=r.count),
            )
        if rel == "instance":
            return (
                m.RoutinePattern.objects.filter(pattern_id=owner_id)
                .select_related("routine__game")
                .order_by("routine__game__position", "routine__position"),
                lambda r: Member(
                    "routine",
                    r.routine.routine_key,
                    game=r.routine.game.key,
                    evidence=r.evidence,
                ),
            )
        if rel == "demonstrated-by":
            return (
                m.LessonPattern.objects.filter(pattern_id=owner_id)
                .select_related("lesson")
                .order_by("lesson__position"),
                lambda r: Member("lesson", r.lesson.key, count=r.count),
            )
    if ref.kind == "game":
        if rel == "pattern":
            return (
                m.GamePattern.objects.filter(game_id=owner_id)
                .select_related("pattern")
                .order_by("pattern__position"),
                lambda r: Member("pattern", r.pattern.key, count=r.count),
            )
        if rel == "routine":
            return (
                m.Routine.objects.filter(game_id=owner_id).order_by("position"),
                lambda r: Member("routine", r.routine_key, game=ref.key),
            )
        if rel == "measured-by":
            return (
                m.Lesson.objects.filter(game_id=owner_id).order_by("position"),
                lambda r: Member("lesson", r.key),
            )
    if ref.kind == "routine":
        if rel == "instance-of":
            return (
                m.RoutinePattern.objects.filter(routine_id=owner_id)
                .select_related("pattern")
                .order_by("position"),
                lambda r: Member("pattern", r.pattern.key, evidence=r.evidence),
            )
        if rel == "game":
            return (
                m.Game.objects.filter(routines__id=owner_id),
                lambda r: Member("game", r.key),
            )
    if ref.kind == "lesson":
        if rel == "pattern":
            return (
                m.LessonPattern.objects.filter(lesson_id=owner_id)
                .select_related("pattern")
                .order_by("pattern__position"),
                lambda r: Member("pattern", r.pattern.key, count=r.count),
            )
        if rel == "measures":
            return (
                m.Game.objects.filter(lessons__id=owner_id),
                lambda r: Member("game", r.key),
            )
    raise ValueError(
        f"no relation {rel!r} on a {ref.kind}; one of {', '.join(RELATIONS[ref.kind])}"
    )


def owner(ref: Ref) -> Any:
    """The entity's row (one query), or ``None``."""
    if ref.kind == "pattern":
        return m.Pattern.objects.filter(key=ref.key).first()
    if ref.kind == "game":
        return m.Game.objects.filter(key=ref.key).first()
    if ref.kind == "lesson":
        return m.Lesson.objects.filter(key=ref.key).select_related("game").first()
    bank, addr = parse_routine_key(ref.key)
    return (
        m.Routine.objects.filter(game__key=ref.game, bank=bank, addr=addr)
        .select_related("game")
        .first()
    )


def _corrections(ref: Ref) -> tuple[dict[str, Any], ...]:
    key = f"{ref.game}/{ref.key}" if ref.kind == "routine" else ref.key
    rows = m.Correction.objects.filter(entity=ref.kind, key=key).order_by("corrected_at", "id")
    return tuple(
        {
            "field": row.field,
            "value": row.value,
            "record_value": row.record_value,
            "by": row.corrected_by_name,
            "at": row.corrected_at.isoformat(),
        }
        for row in rows
    )


def get(ref: Ref) -> Entity | None:
    """The entity ``ref`` names, or ``None``. A constant number of queries.

    One for the row, two per relation (size and first page), one for its corrections.
    """
    row = owner(ref)
    if row is None:
        return None
    related = {}
    for rel in RELATIONS[ref.kind]:
        qs, make = relation(ref, rel, row.id)
        related[rel] = _page(qs, make, 0, INLINE_LIMIT)
    if ref.kind == "pattern":
        fields: dict[str, Any] = {"key": row.key, "description": row.description}
        file, where = AUTOPSY_FILE, pointer("patterns", row.key)
    elif ref.kind == "game":
        fields = game_fields(row)
        file, where = AUTOPSY_FILE, pointer("games", row.position)
    elif ref.kind == "lesson":
        fields = lesson_fields(row)
        file, where = LESSONS_FILE, pointer("lessons", row.position)
    else:
        instances = list(
            m.RoutinePattern.objects.filter(routine_id=row.id)
            .select_related("pattern")
            .order_by("position")
        )
        fields = routine_fields(row, instances)
        file = AUTOPSY_FILE
        where = pointer("games", row.game.position, "routine_list", row.position)
    return Entity(
        kind=ref.kind,
        key=ref.key,
        game=ref.game,
        fields=fields,
        related=related,
        file=file,
        pointer=where,
        corrections=_corrections(ref),
    )


def get_pattern(key: str) -> Entity | None:
    """The pattern ``key`` (e.g. ``pad-poll``), or ``None``."""
    return get(Ref.of("pattern", key))


def get_game(key: str) -> Entity | None:
    """The game ``key`` (12 hex digits), or ``None``."""
    return get(Ref.of("game", key))


def get_routine(game: str, key: str) -> Entity | None:
    """The routine ``key`` (e.g. ``b0-8E5C``) of game ``game``, or ``None``."""
    return get(Ref.of("routine", key, game))


def get_lesson(key: str) -> Entity | None:
    """The lesson ``key`` (e.g. ``jump``), or ``None``."""
    return get(Ref.of("lesson", key))


def related(ref: Ref, rel: str, *, offset: int = 0, limit: int = 100) -> Page | None:
    """One page of the relation ``rel`` of ``ref``; ``None`` if the entity does not exist.

    Three queries whatever the size: the entity, the relation's size, the page.
    """
    offset, limit = _window(offset, limit)
    if rel not in RELATIONS[ref.kind]:
        raise ValueError(
            f"no relation {rel!r} on a {ref.kind}; one of {', '.join(RELATIONS[ref.kind])}"
        )
    row = owner(ref)
    if row is None:
        return None
    qs, make = relation(ref, rel, row.id)
    return _page(qs, make, offset, limit)


def list_entities(kind: str, *, game: str | None = None, offset: int = 0, limit: int = 100) -> Page:
    """A page of the entities of ``kind`` in record order; routines are listed per game.

    Two queries: the size and the page.
    """
    offset, limit = _window(offset, limit)
    if kind == "pattern":
        return _page(
            m.Pattern.objects.order_by("position"), lambda r: Member(kind, r.key), offset, limit
        )
    if kind == "game":
        return _page(
            m.Game.objects.order_by("position"), lambda r: Member(kind, r.key), offset, limit
        )
    if kind == "lesson":
        return _page(
            m.Lesson.objects.order_by("position"), lambda r: Member(kind, r.key), offset, limit
        )
    if kind == "routine":
        game_key = check_key("game", game)
        return _page(
            m.Routine.objects.filter(game__key=game_key).order_by("position"),
            lambda r: Member(kind, r.routine_key, game=game_key),
            offset,
            limit,
        )
    raise InvalidKey(kind, "", f"unknown kind; one of {', '.join(KINDS)}")


# --- the same shapes from plain records (an older revision) ----------------------------------


class Snapshot:
    """Entities read from plain :class:`Records`, as their record stood; no database.

    Shapes match :func:`get` and :func:`related`, except that corrections (which live in the
    database, not the record) are never applied.
    """

    def __init__(self, records: Records) -> None:
        self.records = records
        self.patterns = {p.key: p for p in records.patterns}
        self.games = {g.key: g for g in records.games}
        self.lessons = {x.key: x for x in records.lessons}
        self.routines: dict[tuple[str, str], RoutineRecord] = {
            (g.key, r.key): r for g in records.games for r in g.routines
        }
        self.order = {p.key: p.position for p in records.patterns}

    def members(self, ref: Ref, rel: str) -> list[Member]:
        """Every member of the relation ``rel`` of ``ref``, in record order, unpaged.

        ``ref`` must exist in the snapshot (see :meth:`exists`); raises :class:`ValueError`
        for a relation its kind does not have.
        """
        recs = self.records
        if ref.kind == "pattern":
            if rel == "found-in":
                return [
                    Member("game", g.key, count=g.patterns[ref.key])
                    for g in recs.games
                    if ref.key in g.patterns
                ]
            if rel == "instance":
                return [
                    Member("routine", r.key, game=g.key, evidence=i.evidence)
                    for g in recs.games
                    for r in g.routines
                    for i in r.instances
                    if i.pattern == ref.key
                ]
            if rel == "demonstrated-by":
                return [
                    Member("lesson", x.key, count=x.patterns[ref.key])
                    for x in recs.lessons
                    if ref.key in x.patterns
                ]
        if ref.kind == "game":
            game = self.games[ref.key]
            if rel == "pattern":
                names = sorted(game.patterns, key=self.order.__getitem__)
                return [Member("pattern", n, count=game.patterns[n]) for n in names]
            if rel == "routine":
                return [Member("routine", r.key, game=game.key) for r in game.routines]
            if rel == "measured-by":
                return [Member("lesson", x.key) for x in recs.lessons if x.game == ref.key]
        if ref.kind == "routine":
            routine = self.routines[(str(ref.game), ref.key)]
            if rel == "instance-of":
                return [
                    Member("pattern", i.pattern, evidence=i.evidence) for i in routine.instances
                ]
            if rel == "game":
                return [Member("game", str(ref.game))]
        if ref.kind == "lesson":
            lesson = self.lessons[ref.key]
            if rel == "pattern":
                names = sorted(lesson.patterns, key=self.order.__getitem__)
                return [Member("pattern", n, count=lesson.patterns[n]) for n in names]
            if rel == "measures":
                return [Member("game", lesson.game)]
        raise ValueError(
            f"no relation {rel!r} on a {ref.kind}; one of {', '.join(RELATIONS[ref.kind])}"
        )

    def exists(self, ref: Ref) -> bool:
        """Whether the record holds the entity."""
        if ref.kind == "pattern":
            return ref.key in self.patterns
        if ref.kind == "game":
            return ref.key in self.games
        if ref.kind == "lesson":
            return ref.key in self.lessons
        return (str(ref.game), ref.key) in self.routines

    def related(self, ref: Ref, rel: str, *, offset: int = 0, limit: int = 100) -> Page | None:
        """One page of a relation, as :func:`related` gives it."""
        offset, limit = _window(offset, limit)
        if rel not in RELATIONS[ref.kind]:
            raise ValueError(
                f"no relation {rel!r} on a {ref.kind}; one of {', '.join(RELATIONS[ref.kind])}"
            )
        if not self.exists(ref):
            return None
        members = self.members(ref, rel)
        return Page(tuple(members[offset : offset + limit]), len(members), offset, limit)

    def get(self, ref: Ref) -> Entity | None:
        """The entity as its record stood, as :func:`get` gives it (without corrections)."""
        if not self.exists(ref):
            return None
        recs = self.records
        related = {}
        for rel in RELATIONS[ref.kind]:
            page = self.related(ref, rel, limit=INLINE_LIMIT)
            assert page is not None
            related[rel] = page
        fields: dict[str, Any]
        if ref.kind == "pattern":
            p = self.patterns[ref.key]
            fields = {"key": p.key, "description": p.description}
            file, where = recs.autopsy_file, pointer("patterns", p.key)
        elif ref.kind == "game":
            g = self.games[ref.key]
            fields = _record_game_fields(g)
            file, where = recs.autopsy_file, pointer("games", g.position)
        elif ref.kind == "lesson":
            x = self.lessons[ref.key]
            fields = {
                "key": x.key,
                "title": x.title,
                "kind": x.kind,
                "description": x.description,
                "game": x.game,
                "tree": x.tree,
                **x.extra,
            }
            file, where = recs.lessons_file, pointer("lessons", x.position)
        else:
            game = self.games[str(ref.game)]
            r = self.routines[(game.key, ref.key)]
            fields = {
                "name": r.name,
                "bank": f"prg{r.bank}",
                "addr": r.addr,
                "kind": r.kind,
                **r.extra,
                "is": [{"pattern": i.pattern, "evidence": i.evidence} for i in r.instances],
            }
            file = recs.autopsy_file
            where = pointer("games", game.position, "routine_list", r.position)
        return Entity(ref.kind, ref.key, ref.game, fields, related, file, where)


def _record_game_fields(g: GameRecord) -> dict[str, Any]:
    return {
        "key": g.key,
        "name": g.name,
        "sha256": g.sha256,
        "mapper": g.mapper,
        "prg": g.prg,
        "chr": g.chr,
        **g.extra,
    }
