"""The entity kinds as one table: one :class:`Kind` declaration per kind.

A declaration says everything the records API (:mod:`tmsite.entities.records`), the loader
(:mod:`tmsite.entities.loaders`), the entity mount, its ``?as=set`` and its ``?at=`` snapshots
need to know of a kind: its model, the shape of its key (and the kind it lives under, if any),
its record file and JSON pointer, its fields from a row and from a record, the row a record
entry fills, and its relations, each with both directions named. A relation is declared once,
on one kind; the other kind gets the inverse direction from the table. Adding a kind is one
:func:`declare` call.

Relations, by kind (``rel`` → member kind; the link the entity mount gives each member):

========  ===================  =========  ======================  ======================
kind      rel                  members    link                    member extras
========  ===================  =========  ======================  ======================
pattern   ``found-in``         game       ``tm:found-in``         ``count``
pattern   ``instance``         routine    ``tm:instance``         ``game``, ``evidence``
pattern   ``demonstrated-by``  lesson     ``tm:demonstrated-by``  ``count``
game      ``pattern``          pattern    ``tm:exhibits``         ``count``
game      ``routine``          routine    (a listing: children)   ``game``
game      ``measured-by``      lesson     ``tm:measured-by``
routine   ``instance-of``      pattern    ``tm:instance-of``      ``evidence``
routine   ``game``             game       (its parent)
lesson    ``pattern``          pattern    ``tm:demonstrates``     ``count``
lesson    ``measures``         game       ``tm:measures``
========  ===================  =========  ======================  ======================

Spec: ENT.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import models

from tmsite.entities import models as m
from tmsite.entities.record_files import (
    BANK_NUMBER,
    GAME_KEY_RE,
    KEY_HINT,
    KEY_RE,
    GameRecord,
    LessonRecord,
    PatternRecord,
    Records,
    RoutineRecord,
    routine_key,
)

#: A thing's identity inside its kind: its key, and the key of the thing it lives under.
Key = tuple[str, str | None]
#: The id of a loaded row, by kind and :data:`Key`.
IdOf = Callable[[str, Key], int]
#: The member extras a link carries (the rest only a set or a read of the relation carries).
LINK_EXTRAS = ("count",)


@dataclass(frozen=True)
class KeyShape:
    """The ASCII shape a key must have before any query, and what to say when it does not."""

    pattern: re.Pattern[str]
    reason: str


@dataclass(frozen=True)
class Slot:
    """A pointer token filled from a column of the row (``game__position``: through a key)."""

    column: str
    number: bool = True


@dataclass(frozen=True)
class Entry:
    """One thing in the records: its key, its parent's key, the record, its pointer tokens."""

    key: str
    parent: str | None
    record: Any
    where: tuple[str | int, ...]


@dataclass(frozen=True)
class Edge:
    """One pair of a relation as the records state it: declaring side, member side, values."""

    near: Key
    far: Key
    values: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Side:
    """One direction of a relation: its name, its link rel, and how its members are ordered.

    ``listed``: in the order the record lists them there (the link row's ``position``), not in
    the members' own record order.
    """

    name: str
    link: str | None = None
    listed: bool = False


@dataclass(frozen=True)
class Through:
    """The relation is rows of a link model, one per pair, carrying ``extras``."""

    model: type[models.Model]
    near: str
    far: str
    rows: str
    extras: tuple[str, ...] = ()


@dataclass(frozen=True)
class Child:
    """The member's row holds a foreign key ``field`` to the declaring kind's row.

    ``related`` is the name the declaring model reaches the members by.
    """

    field: str
    related: str


@dataclass(frozen=True)
class Relation:
    """A relation declared on one kind: its member kind, storage, both sides, and its pairs."""

    member: str
    storage: Through | Child
    out: Side
    back: Side
    edges: Callable[[Records], Iterable[Edge]]


@dataclass(frozen=True)
class Attach:
    """Rows of another table a kind's fields list (a routine's ``is``), in record order."""

    model: type[models.Model]
    fk: str
    select: tuple[str, ...] = ()
    order: tuple[str, ...] = ("position",)


def _by_key(key: str) -> dict[str, Any]:
    return {"key": key}


def _the_key(*values: Any) -> str:
    return str(values[0])


@dataclass(frozen=True)
class Kind:
    """Everything the entity code knows of one kind.

    ``model`` holds its rows, ordered by ``order`` (``select``: what a row's fields need
    joined). ``shape`` is checked before any query. ``source`` names its record file
    (:func:`~tmsite.entities.record_files.file_path`) and ``where`` its JSON pointer there, a
    template filled from the row. ``fields`` gives its fields from a row (and the ``attach``
    rows, if any), ``record_fields`` from a record entry, ``entries`` its entries in a
    :class:`Records`, ``row`` the model row an entry fills (``None``: rows not loaded from the
    records), upserted by ``unique`` with ``updates``. ``parent`` is the kind it lives under
    (its key is unique only there); ``key_columns``/``key_from`` give its key from a row's
    columns, ``lookup`` the columns from its key.
    """

    name: str
    plural: str
    model: type[models.Model]
    shape: KeyShape
    source: str
    where: tuple[str | Slot, ...]
    fields: Callable[[Any, Sequence[Any]], dict[str, Any]]
    record_fields: Callable[[Any], dict[str, Any]]
    entries: Callable[[Records], Iterable[Entry]]
    row: Callable[[Any, str | None, IdOf], models.Model] | None = None
    unique: tuple[str, ...] = ("key",)
    updates: tuple[str, ...] = ()
    parent: str | None = None
    key_columns: tuple[str, ...] = ("key",)
    key_from: Callable[..., str] = _the_key
    lookup: Callable[[str], dict[str, Any]] = _by_key
    order: tuple[str, ...] = ("position",)
    select: tuple[str, ...] = ()
    attach: Attach | None = None
    relations: tuple[Relation, ...] = ()

    def columns(self, prefix: str = "") -> tuple[str, ...]:
        """The columns that give a row's :data:`Key` (``prefix``: through a foreign key)."""
        parent = (f"{self.parent}__key",) if self.parent else ()
        return tuple(prefix + c for c in (*self.key_columns, *parent))

    def key_of(self, values: Sequence[Any]) -> Key:
        """The :data:`Key` from the values of :meth:`columns`."""
        count = len(self.key_columns)
        key = self.key_from(*values[:count])
        return key, (str(values[count]) if self.parent else None)

    def row_key(self, row: Any) -> Key:
        """The :data:`Key` of a model row (its parent loaded, else one more query)."""
        return self.key_of([column_value(row, c) for c in self.columns()])

    def pointer_tokens(self, row: Any) -> tuple[str | int, ...]:
        """Where the record holds the row's thing, as pointer tokens."""
        return tuple(column_value(row, p.column) if isinstance(p, Slot) else p for p in self.where)


def column_value(row: Any, column: str) -> Any:
    """``game__position`` of a row: ``row.game.position``."""
    for name in column.split("__"):
        row = getattr(row, name)
    return row


@dataclass(frozen=True)
class Direction:
    """A relation as read from one kind: ``forward`` if that kind declared it."""

    owner: str
    member: str
    side: Side
    relation: Relation
    forward: bool

    @property
    def name(self) -> str:
        """The relation's name on the owner's kind."""
        return self.side.name

    @property
    def child(self) -> bool:
        """Whether the members live under the owner (they read as a listing, not as links)."""
        return KINDS[self.member].parent == self.owner and isinstance(self.relation.storage, Child)


#: The kinds, in the order they are loaded (a kind after the kinds its rows point to).
KINDS: dict[str, Kind] = {}


def declare(kind: Kind) -> Kind:
    """Add a kind to the table; its relations' inverse sides appear on their member kinds."""
    if kind.name in KINDS:
        raise ValueError(f"the kind {kind.name!r} is declared already")
    KINDS[kind.name] = kind
    directions.cache_clear()
    sources.cache_clear()
    return kind


def forget(name: str) -> None:
    """Take a kind out of the table again (a kind declared for a while, as in a test)."""
    del KINDS[name]
    directions.cache_clear()
    sources.cache_clear()


@functools.cache
def directions(kind: str) -> tuple[Direction, ...]:
    """The relations of ``kind``: those it declares, then the inverses of the others'."""
    own = [Direction(kind, r.member, r.out, r, True) for r in KINDS[kind].relations]
    inverse = [
        Direction(kind, other.name, r.back, r, False)
        for other in KINDS.values()
        for r in other.relations
        if r.member == kind
    ]
    return (*own, *inverse)


@functools.cache
def sources(kind: str) -> tuple[str, ...]:
    """The record files a read of ``kind`` is made from: its own, then those stating its pairs.

    A relation's pairs are stated where its rows come from: a link model's by the entries of
    the kind that declares the relation (a game's ``patterns``), a child's foreign key by the
    child's own entry (a lesson's ``game``). So a pattern is made from both files (lessons
    state which demonstrate it), a routine from ``autopsy`` alone.
    """
    out = [KINDS[kind].source]
    for d in directions(kind):
        declaring = d.owner if d.forward else d.member
        holder = d.relation.member if isinstance(d.relation.storage, Child) else declaring
        out.append(KINDS[holder].source)
    return tuple(dict.fromkeys(out))


def data_modified(kind: str, modified: Mapping[str, datetime]) -> datetime | None:
    """When the records a read of ``kind`` is made from last changed, or None if unknown.

    The latest of its :func:`sources`' times in ``modified`` (by source); None if any of them
    is not there.
    """
    times = [modified.get(source) for source in sources(kind)]
    known = [t for t in times if t is not None]
    return max(known) if known and len(known) == len(times) else None


def direction(kind: str, rel: str) -> Direction:
    """The relation ``rel`` of ``kind``; :class:`ValueError` if it has none of that name."""
    for one in directions(kind):
        if one.name == rel:
            return one
    names = ", ".join(d.name for d in directions(kind))
    raise ValueError(f"no relation {rel!r} on a {kind}; one of {names}")


def top_kinds() -> tuple[str, ...]:
    """The kinds that live under no other kind, in table order."""
    return tuple(k.name for k in KINDS.values() if k.parent is None)


def children(kind: str) -> tuple[str, ...]:
    """The kinds that live under ``kind``."""
    return tuple(k.name for k in KINDS.values() if k.parent == kind)


# --- the four kinds of the autopsy ----------------------------------------------------------


def _pattern_fields(row: Any, attached: Sequence[Any] = ()) -> dict[str, Any]:
    return {"key": row.key, "description": row.description}


def _patterns(records: Records) -> Iterator[Entry]:
    for p in records.patterns:
        yield Entry(p.key, None, p, ("patterns", p.key))


def _pattern_row(p: PatternRecord, parent: str | None, id_of: IdOf) -> models.Model:
    return m.Pattern(key=p.key, description=p.description, position=p.position)


def game_fields(row: Any, attached: Sequence[Any] = ()) -> dict[str, Any]:
    """The fields of a game, from its row or its record: the columns, then the extras."""
    return {
        "key": row.key,
        "name": row.name,
        "sha256": row.sha256,
        "mapper": row.mapper,
        "prg": row.prg,
        "chr": row.chr,
        **row.extra,
    }


def _games(records: Records) -> Iterator[Entry]:
    for g in records.games:
        yield Entry(g.key, None, g, ("games", g.position))


def _game_row(g: GameRecord, parent: str | None, id_of: IdOf) -> models.Model:
    return m.Game(
        key=g.key,
        name=g.name,
        sha256=g.sha256,
        mapper=g.mapper,
        prg=g.prg,
        chr=g.chr,
        extra=g.extra,
        position=g.position,
    )


def _game_patterns(records: Records) -> Iterator[Edge]:
    for g in records.games:
        for name, count in g.patterns.items():
            yield Edge((g.key, None), (name, None), {"count": count})


def _game_routines(records: Records) -> Iterator[Edge]:
    for g in records.games:
        for r in g.routines:
            yield Edge((g.key, None), (r.key, g.key))


def _game_lessons(records: Records) -> Iterator[Edge]:
    for x in records.lessons:
        yield Edge((x.game, None), (x.key, None))


def _routine_fields(row: Any, attached: Sequence[Any]) -> dict[str, Any]:
    """``attached``: the routine's pattern instances with their patterns, in record order."""
    return {
        "name": row.name,
        "bank": f"prg{row.bank}",
        "addr": row.addr,
        "kind": row.kind,
        **row.extra,
        "is": [{"pattern": i.pattern.key, "evidence": i.evidence} for i in attached],
    }


def _routine_record_fields(r: RoutineRecord) -> dict[str, Any]:
    return {
        "name": r.name,
        "bank": f"prg{r.bank}",
        "addr": r.addr,
        "kind": r.kind,
        **r.extra,
        "is": [{"pattern": i.pattern, "evidence": i.evidence} for i in r.instances],
    }


def _routines(records: Records) -> Iterator[Entry]:
    for g in records.games:
        for r in g.routines:
            yield Entry(r.key, g.key, r, ("games", g.position, "routine_list", r.position))


def _routine_row(r: RoutineRecord, game: str | None, id_of: IdOf) -> models.Model:
    return m.Routine(
        game_id=id_of("game", (str(game), None)),
        bank=r.bank,
        addr=r.addr,
        name=r.name,
        kind=r.kind,
        extra=r.extra,
        position=r.position,
    )


def _routine_lookup(key: str) -> dict[str, Any]:
    bank, addr = key[1:].split("-")
    return {"bank": int(bank), "addr": int(addr, 16)}


def _routine_instances(records: Records) -> Iterator[Edge]:
    for g in records.games:
        for r in g.routines:
            for index, i in enumerate(r.instances):
                values = {"evidence": i.evidence, "position": index}
                yield Edge((r.key, g.key), (i.pattern, None), values)


def lesson_fields(row: Any, attached: Sequence[Any] = ()) -> dict[str, Any]:
    """The fields of a lesson, from its row (``game`` loaded, else one more query)."""
    return {**_lesson_record_fields(row), "game": row.game.key}


def _lesson_record_fields(x: Any) -> dict[str, Any]:
    return {
        "key": x.key,
        "title": x.title,
        "kind": x.kind,
        "description": x.description,
        "game": x.game,
        "tree": x.tree,
        **x.extra,
    }


def _lessons(records: Records) -> Iterator[Entry]:
    for x in records.lessons:
        yield Entry(x.key, None, x, ("lessons", x.position))


def _lesson_row(x: LessonRecord, parent: str | None, id_of: IdOf) -> models.Model:
    return m.Lesson(
        key=x.key,
        title=x.title,
        kind=x.kind,
        description=x.description,
        game_id=id_of("game", (x.game, None)),
        tree=x.tree,
        extra=x.extra,
        position=x.position,
    )


def _lesson_patterns(records: Records) -> Iterator[Edge]:
    for x in records.lessons:
        for name, count in x.patterns.items():
            yield Edge((x.key, None), (name, None), {"count": count})


NAME_SHAPE = KeyShape(KEY_RE, f"must match {KEY_HINT}")

declare(
    Kind(
        name="pattern",
        plural="patterns",
        model=m.Pattern,
        shape=NAME_SHAPE,
        source="autopsy",
        where=("patterns", Slot("key", number=False)),
        fields=_pattern_fields,
        record_fields=_pattern_fields,
        entries=_patterns,
        row=_pattern_row,
        updates=("description", "position"),
    )
)
declare(
    Kind(
        name="game",
        plural="games",
        model=m.Game,
        shape=KeyShape(GAME_KEY_RE, "must be 12 lowercase hex digits"),
        source="autopsy",
        where=("games", Slot("position")),
        fields=game_fields,
        record_fields=game_fields,
        entries=_games,
        row=_game_row,
        updates=("name", "sha256", "mapper", "prg", "chr", "extra", "position"),
        relations=(
            Relation(
                "pattern",
                Through(m.GamePattern, "game", "pattern", "game_patterns", ("count",)),
                Side("pattern", "tm:exhibits"),
                Side("found-in", "tm:found-in"),
                _game_patterns,
            ),
            Relation(
                "routine",
                Child("game", "routines"),
                Side("routine"),
                Side("game"),
                _game_routines,
            ),
            Relation(
                "lesson",
                Child("game", "lessons"),
                Side("measured-by", "tm:measured-by"),
                Side("measures", "tm:measures"),
                _game_lessons,
            ),
        ),
    )
)
declare(
    Kind(
        name="routine",
        plural="routines",
        model=m.Routine,
        shape=KeyShape(
            re.compile(rf"b{BANK_NUMBER}-([0-9A-F]{{4}})", re.ASCII),
            "must be b<bank>-<ADDR>: bank 0..255, 4 uppercase hex digits",
        ),
        source="autopsy",
        where=("games", Slot("game__position"), "routine_list", Slot("position")),
        fields=_routine_fields,
        record_fields=_routine_record_fields,
        entries=_routines,
        row=_routine_row,
        unique=("game", "bank", "addr"),
        updates=("name", "kind", "extra", "position"),
        parent="game",
        key_columns=("bank", "addr"),
        key_from=routine_key,
        lookup=_routine_lookup,
        order=("game__position", "position"),
        select=("game",),
        attach=Attach(m.RoutinePattern, "routine", ("pattern",)),
        relations=(
            Relation(
                "pattern",
                Through(m.RoutinePattern, "routine", "pattern", "instances", ("evidence",)),
                Side("instance-of", "tm:instance-of", listed=True),
                Side("instance", "tm:instance"),
                _routine_instances,
            ),
        ),
    )
)
declare(
    Kind(
        name="lesson",
        plural="lessons",
        model=m.Lesson,
        shape=NAME_SHAPE,
        source="lessons",
        where=("lessons", Slot("position")),
        fields=lesson_fields,
        record_fields=_lesson_record_fields,
        entries=_lessons,
        row=_lesson_row,
        updates=("title", "kind", "description", "game", "tree", "extra", "position"),
        select=("game",),
        relations=(
            Relation(
                "pattern",
                Through(m.LessonPattern, "lesson", "pattern", "lesson_patterns", ("count",)),
                Side("pattern", "tm:demonstrates"),
                Side("demonstrated-by", "tm:demonstrated-by"),
                _lesson_patterns,
            ),
        ),
    )
)
