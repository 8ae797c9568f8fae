"""The read API the entity mount uses: entities by key, their relations in pages.

Every entity comes back as an :class:`Entity`: its kind and key, the record's fields as JSON
(with maintainers' corrections applied), the first page of each relation with the relation's
size, the record file it lives in and its JSON pointer there. Relations are read in pages with
:func:`related`; every read is a constant number of SQL queries, whatever the size.

Keys are checked against ASCII patterns before any query (:func:`check_key`,
:func:`parse_routine_key`); a key that does not match raises :class:`InvalidKey`, and a key that
matches but names nothing returns ``None``.

The same shapes are built from plain :class:`~tmsite.entities.record_files.Records` (an older
revision's record, parsed with :func:`~tmsite.entities.record_files.parse_records`) by
:class:`Snapshot`, so an entity "as its record stood" reads like the current one.

What varies by kind — models, key shapes, pointers, fields, relations — is the table of
:mod:`tmsite.entities.kinds`; every function here reads it, none names a kind.

Spec: ENT.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Max, Model, QuerySet

from tmsite.entities import kinds as K
from tmsite.entities import models as m
from tmsite.entities.record_files import Records, file_path, pointer
from tmsite.entities.record_files import routine_key as routine_key

#: How many members of each relation an entity read carries inline.
INLINE_LIMIT = 50
#: The largest page :func:`related` and :func:`list_entities` give.
MAX_LIMIT = 500

_MAX_KEY_LEN = 64


def kinds() -> tuple[str, ...]:
    """The kinds, in table order."""
    return tuple(K.KINDS)


def relations(kind: str) -> tuple[str, ...]:
    """The names of the relations of ``kind``, in table order."""
    return tuple(d.name for d in K.directions(kind))


class InvalidKey(ValueError):
    """A key that is not of its kind's shape; no query was made."""

    def __init__(self, kind: str, key: object, reason: str) -> None:
        self.kind = kind
        self.key = key
        self.reason = reason
        super().__init__(f"invalid {kind} key {key!r}: {reason}")


def check_key(kind: str, key: object) -> str:
    """Return ``key`` if it has the shape of a ``kind`` key, else raise :class:`InvalidKey`.

    The check is on ASCII patterns with a length cap, before any query: SQL-shaped text,
    non-ASCII digits, ``1_000``, NUL, overlong or non-string keys all fail here.
    """
    declared = K.KINDS.get(kind)
    if declared is None:
        raise InvalidKey(kind, key, f"unknown kind; one of {', '.join(K.KINDS)}")
    if not isinstance(key, str):
        raise InvalidKey(kind, key, "must be a string")
    if len(key) > _MAX_KEY_LEN:
        raise InvalidKey(kind, key, f"longer than {_MAX_KEY_LEN} characters")
    if declared.shape.pattern.fullmatch(key) is None:
        raise InvalidKey(kind, key, declared.shape.reason)
    return key


def parse_routine_key(key: object) -> tuple[int, int]:
    """``b0-8E5C`` → ``(0, 0x8E5C)``; raises :class:`InvalidKey` for anything else."""
    found = K.KINDS["routine"].lookup(check_key("routine", key))
    return found["bank"], found["addr"]


# --- shapes -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ref:
    """Which entity: a kind, a key, and for a routine the key of its game."""

    kind: str
    key: str
    game: str | None = None

    @classmethod
    def of(cls, kind: str, key: object, game: object = None) -> Ref:
        """A checked reference; raises :class:`InvalidKey` before any query.

        ``game`` is the key of the thing a kind lives under (a routine's game).
        """
        checked = check_key(kind, key)
        parent = K.KINDS[kind].parent
        if parent is not None:
            return cls(kind, checked, check_key(parent, game))
        if game is not None:
            raise InvalidKey(kind, key, "only a thing that lives under another has a game")
        return cls(kind, checked)

    @classmethod
    def at(cls, kind: str, key: K.Key) -> Ref:
        """The reference to the thing of ``kind`` with this :data:`~tmsite.entities.kinds.Key`."""
        return cls(kind, key[0], key[1])

    @property
    def ident(self) -> K.Key:
        """Its :data:`~tmsite.entities.kinds.Key`."""
        return self.key, self.game


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
        """The page as JSON, with ``next_offset`` (null after the last page)."""
        return {
            "items": [i.as_json() for i in self.items],
            "total": self.total,
            "offset": self.offset,
            "limit": self.limit,
            "next_offset": self.next_offset,
        }


@dataclass(frozen=True)
class Entity:
    """An entity as read: fields, first page of each relation, where its record is.

    ``modified`` is when what a read of it says last changed, where known (:func:`later`).
    """

    kind: str
    key: str
    game: str | None
    fields: dict[str, Any]
    related: dict[str, Page]
    file: str
    pointer: str
    corrections: tuple[dict[str, Any], ...] = field(default=())
    modified: datetime | None = None

    @property
    def counts(self) -> dict[str, int]:
        """The size of each relation."""
        return {rel: page.total for rel, page in self.related.items()}

    def as_json(self) -> dict[str, Any]:
        """The entity as JSON: its fields, a first page of each relation, its record's place."""
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


def _member(kind: str, key: K.Key, row: Any, extras: Sequence[str]) -> Member:
    values = {name: getattr(row, name) for name in extras}
    return Member(kind, key[0], key[1], **values)


def _page(qs: QuerySet[Any], make: Callable[[Any], Member], offset: int, limit: int) -> Page:
    """Two queries: the size, then the slice."""
    total = qs.count()
    items = tuple(make(row) for row in qs[offset : offset + limit]) if offset < total else ()
    return Page(items=items, total=total, offset=offset, limit=limit)


@dataclass(frozen=True)
class _Read:
    """How one direction of a relation reads from the tables, from the owner's primary key."""

    model: type[Model]
    filter: str
    hop: str
    order: tuple[str, ...]
    extras: tuple[str, ...]

    def rows(self, owner_id: int, member: K.Kind) -> QuerySet[Any]:
        prefix = f"{self.hop}__" if self.hop else ""
        related = [self.hop] if self.hop else []
        related += [prefix + name for name in member.select]
        qs = self.model._default_manager.filter(**{self.filter: owner_id})
        return (
            qs.select_related(*related).order_by(*self.order)
            if related
            else qs.order_by(*self.order)
        )


def _read_of(d: K.Direction) -> _Read:
    member = K.KINDS[d.member]
    storage = d.relation.storage
    if isinstance(storage, K.Through):
        near, far = (storage.near, storage.far) if d.forward else (storage.far, storage.near)
        order = ("position",) if d.side.listed else tuple(f"{far}__{o}" for o in member.order)
        return _Read(storage.model, f"{near}_id", far, order, storage.extras)
    if d.forward:
        return _Read(member.model, f"{storage.field}_id", "", member.order, ())
    return _Read(member.model, f"{storage.related}__id", "", member.order, ())


def relation(ref: Ref, rel: str, owner_id: int) -> tuple[QuerySet[Any], Callable[[Any], Member]]:
    """The queryset of one relation, ordered as the record orders it, and its member maker.

    ``owner_id`` is the primary key of ``ref``'s row (see :func:`owner`); nothing is queried
    until the queryset is evaluated. Raises :class:`ValueError` for a relation ``ref``'s kind
    does not have.
    """
    d = K.direction(ref.kind, rel)
    read = _read_of(d)
    member = K.KINDS[d.member]

    def make(row: Any) -> Member:
        target = getattr(row, read.hop) if read.hop else row
        return _member(d.member, member.row_key(target), row, read.extras)

    return read.rows(owner_id, member), make


def light_members(ref: Ref, rel: str, owner_id: int) -> list[Member]:
    """Every member of one relation as keys and counts only (one query, no model rows).

    The same rows, in the same order, as :func:`related` pages; only the columns a link needs
    are read, so a pattern in thousands of routines stays cheap.
    """
    d = K.direction(ref.kind, rel)
    read = _read_of(d)
    member = K.KINDS[d.member]
    prefix = f"{read.hop}__" if read.hop else ""
    columns = member.columns(prefix)
    extras = [name for name in read.extras if name in K.LINK_EXTRAS]
    qs = read.model._default_manager.filter(**{read.filter: owner_id}).order_by(*read.order)
    out = []
    for values in qs.values_list(*columns, *extras):
        key = member.key_of(values)
        carried = dict(zip(extras, values[len(columns) :], strict=True))
        out.append(Member(d.member, key[0], key[1], **carried))
    return out


def _attached(kind: K.Kind, ids: Sequence[int]) -> dict[int, list[Any]]:
    """The rows each of ``ids`` lists in its fields (one query, none if the kind lists none)."""
    attach = kind.attach
    if attach is None or not ids:
        return {}
    rows = (
        attach.model._default_manager.filter(**{f"{attach.fk}_id__in": list(ids)})
        .select_related(*attach.select)
        .order_by(f"{attach.fk}_id", *attach.order)
    )
    out: dict[int, list[Any]] = {}
    for row in rows:
        out.setdefault(getattr(row, f"{attach.fk}_id"), []).append(row)
    return out


def set_page(
    ref: Ref, rel: str, owner_id: int, offset: int, limit: int
) -> tuple[int, list[tuple[Member, dict[str, Any]]]]:
    """One page of a relation with each member whole: three queries at most.

    The size, the page of relation rows (with the members' rows joined), and the rows the
    members' fields list (a routine's pattern instances) in one batch.
    """
    qs, make = relation(ref, rel, owner_id)
    total = qs.count()
    if offset >= total:
        return total, []
    d = K.direction(ref.kind, rel)
    hop = _read_of(d).hop
    member = K.KINDS[d.member]
    rows = list(qs[offset : offset + limit])
    targets = [getattr(row, hop) if hop else row for row in rows]
    attached = _attached(member, [t.pk for t in targets])
    return total, [
        (make(row), member.fields(target, attached.get(target.pk, ())))
        for row, target in zip(rows, targets, strict=True)
    ]


def _filter(ref: Ref) -> dict[str, Any]:
    kind = K.KINDS[ref.kind]
    parent = {f"{kind.parent}__key": ref.game} if kind.parent else {}
    return {**kind.lookup(ref.key), **parent}


def owner(ref: Ref) -> Any:
    """The entity's row (one query), or ``None``."""
    kind = K.KINDS[ref.kind]
    qs = kind.model._default_manager.filter(**_filter(ref))
    return (qs.select_related(*kind.select) if kind.select else qs).first()


def correction_key(kind: str, key: K.Key) -> str:
    """The key corrections name a thing by: ``<parent>/<key>`` for a thing under another."""
    return f"{key[1]}/{key[0]}" if K.KINDS[kind].parent else key[0]


def _corrections(ref: Ref) -> tuple[tuple[dict[str, Any], ...], datetime | None]:
    """The thing's corrections in time order, and when the latest was made (one query)."""
    key = correction_key(ref.kind, ref.ident)
    rows = list(
        m.Correction.objects.filter(entity=ref.kind, key=key).order_by("corrected_at", "id")
    )
    shown = tuple(
        {
            "field": row.field,
            "value": row.value,
            "record_value": row.record_value,
            "by": row.corrected_by_name,
            "at": row.corrected_at.isoformat(),
        }
        for row in rows
    )
    return shown, max((row.corrected_at for row in rows), default=None)


def later(data: datetime | None, corrected: datetime | None) -> datetime | None:
    """When a thing last changed: the later of its records' time (as loaded) and its correction's.

    Unknown if the records' time is unknown: a correction alone does not date a thing, which
    may have changed since with its records.
    """
    if data is None:
        return None
    return data if corrected is None or corrected < data else corrected


def corrected_at(kind: str, keys: Sequence[K.Key]) -> dict[K.Key, datetime]:
    """The time of the latest correction of each of ``keys`` that has one: one query."""
    if not keys:
        return {}
    by_key = {correction_key(kind, key): key for key in keys}
    rows = (
        m.Correction.objects.filter(entity=kind, key__in=list(by_key))
        .order_by()
        .values("key")
        .annotate(at=Max("corrected_at"))
    )
    return {by_key[row["key"]]: row["at"] for row in rows}


def get(ref: Ref) -> Entity | None:
    """The entity ``ref`` names, or ``None``. A constant number of queries.

    One for the row, two per relation (size and first page), one for the rows its fields list
    (if its kind lists any), one for its corrections (which also date it, with the row's
    ``data_modified``).
    """
    row = owner(ref)
    if row is None:
        return None
    related = {}
    for rel in relations(ref.kind):
        qs, make = relation(ref, rel, row.pk)
        related[rel] = _page(qs, make, 0, INLINE_LIMIT)
    kind = K.KINDS[ref.kind]
    attached = _attached(kind, [row.pk]).get(row.pk, []) if kind.attach else []
    corrections, latest = _corrections(ref)
    return Entity(
        kind=ref.kind,
        key=ref.key,
        game=ref.game,
        fields=kind.fields(row, attached),
        related=related,
        file=file_path(kind.source),
        pointer=pointer(*kind.pointer_tokens(row)),
        corrections=corrections,
        modified=later(row.data_modified, latest),
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
    K.direction(ref.kind, rel)
    row = owner(ref)
    if row is None:
        return None
    qs, make = relation(ref, rel, row.pk)
    return _page(qs, make, offset, limit)


def keys(kind: str, game: str | None = None, *, dated: bool = False) -> QuerySet[Any]:
    """The :meth:`~tmsite.entities.kinds.Kind.columns` of ``kind``'s rows, in record order.

    ``game``: the key of the thing they live under, for a kind that lives under another.
    ``dated``: each row's ``data_modified`` after its columns.
    """
    declared = K.KINDS[kind]
    qs = declared.model._default_manager.order_by(*declared.order)
    if declared.parent is not None:
        qs = qs.filter(**{f"{declared.parent}__key": game})
    return qs.values_list(*declared.columns(), *(("data_modified",) if dated else ()))


def dated_keys(
    kind: str, game: str | None, start: int, stop: int
) -> list[tuple[str, datetime | None]]:
    """The keys of ``kind``'s rows ``start:stop`` in record order, each with its :func:`later`.

    Two queries, whatever the page's size: the rows with their ``data_modified``, then the
    latest correction of each, grouped.
    """
    declared = K.KINDS[kind]
    rows = [
        (declared.key_of(values), values[-1]) for values in keys(kind, game, dated=True)[start:stop]
    ]
    corrected = corrected_at(kind, [key for key, _ in rows])
    return [(key[0], later(data, corrected.get(key))) for key, data in rows]


def list_entities(kind: str, *, game: str | None = None, offset: int = 0, limit: int = 100) -> Page:
    """A page of the entities of ``kind`` in record order; routines are listed per game.

    Two queries: the size and the page.
    """
    offset, limit = _window(offset, limit)
    declared = K.KINDS.get(kind)
    if declared is None:
        raise InvalidKey(kind, "", f"unknown kind; one of {', '.join(K.KINDS)}")
    parent = check_key(declared.parent, game) if declared.parent else None
    return _page(
        keys(kind, parent),
        lambda values: Member(kind, *declared.key_of(values)),
        offset,
        limit,
    )


# --- the same shapes from plain records (an older revision) ----------------------------------


class Snapshot:
    """Entities read from plain :class:`Records`, as their record stood; no database.

    Shapes match :func:`get` and :func:`related`, except that corrections (which live in the
    database, not the record) are never applied.
    """

    def __init__(self, records: Records) -> None:
        self.records = records
        self.entries: dict[str, dict[K.Key, K.Entry]] = {
            kind.name: {(e.key, e.parent): e for e in kind.entries(records)}
            for kind in K.KINDS.values()
        }
        self.rank = {
            (kind, key): index
            for kind, entries in self.entries.items()
            for index, key in enumerate(entries)
        }
        self.places = {
            (file_path(K.KINDS[kind].source), tuple(str(t) for t in e.where)): Ref.at(kind, key)
            for kind, entries in self.entries.items()
            for key, e in entries.items()
        }
        self._members: dict[tuple[str, str, K.Key], list[Member]] = {}
        for kind in K.KINDS.values():
            for relation in kind.relations:
                self._pair(kind.name, relation)

    def _pair(self, kind: str, relation: K.Relation) -> None:
        extras = relation.storage.extras if isinstance(relation.storage, K.Through) else ()
        out, back = relation.out.name, relation.back.name
        for edge in relation.edges(self.records):
            values = {name: edge.values[name] for name in extras}
            far = Member(relation.member, edge.far[0], edge.far[1], **values)
            near = Member(kind, edge.near[0], edge.near[1], **values)
            self._members.setdefault((kind, out, edge.near), []).append(far)
            self._members.setdefault((relation.member, back, edge.far), []).append(near)

    def keys(self, kind: str, parent: str | None = None) -> list[str]:
        """The keys of ``kind`` in record order.

        For a kind that lives under another, only those under ``parent``.
        """
        return [key for key, under in self.entries[kind] if under == parent]

    def members(self, ref: Ref, rel: str) -> list[Member]:
        """Every member of the relation ``rel`` of ``ref``, in record order, unpaged.

        ``ref`` must exist in the snapshot (see :meth:`exists`); raises :class:`ValueError`
        for a relation its kind does not have.
        """
        d = K.direction(ref.kind, rel)
        found = self._members.get((ref.kind, rel, ref.ident), [])
        if d.side.listed:
            return list(found)
        return sorted(found, key=lambda one: self.rank[(one.kind, (one.key, one.game))])

    def exists(self, ref: Ref) -> bool:
        """Whether the record holds the entity."""
        return ref.ident in self.entries.get(ref.kind, {})

    def at_pointer(self, file: str, tokens: Sequence[str]) -> Ref | None:
        """The entity the record part at ``tokens`` of ``file`` held, if any."""
        return self.places.get((file, tuple(tokens)))

    def related(self, ref: Ref, rel: str, *, offset: int = 0, limit: int = 100) -> Page | None:
        """One page of a relation, as :func:`related` gives it."""
        offset, limit = _window(offset, limit)
        K.direction(ref.kind, rel)
        if not self.exists(ref):
            return None
        members = self.members(ref, rel)
        return Page(tuple(members[offset : offset + limit]), len(members), offset, limit)

    def get(self, ref: Ref) -> Entity | None:
        """The entity as its record stood, as :func:`get` gives it (without corrections)."""
        if not self.exists(ref):
            return None
        related = {}
        for rel in relations(ref.kind):
            page = self.related(ref, rel, limit=INLINE_LIMIT)
            assert page is not None
            related[rel] = page
        kind = K.KINDS[ref.kind]
        entry = self.entries[ref.kind][ref.ident]
        fields = kind.record_fields(entry.record)
        file = self.records.file_name(kind.source)
        return Entity(
            ref.kind,
            ref.key,
            ref.game,
            fields,
            related,
            file,
            pointer(*entry.where),
            modified=self.modified(ref.kind),
        )

    def modified(self, kind: str) -> datetime | None:
        """When the records a read of ``kind`` is made from had last changed, or None if unknown.

        From :attr:`Records.modified`; no corrections apply to a read at a revision.
        """
        return K.data_modified(kind, self.records.modified)


def places_in_tables(file: str, tokens: Sequence[str]) -> Ref | None:
    """The entity the record part at ``tokens`` of ``file`` holds now (one query)."""
    for kind in K.KINDS.values():
        lookup = _pointer_filter(kind, file, tokens)
        if lookup is not None:
            values = kind.model._default_manager.filter(**lookup).values_list(*kind.columns())
            found = values.first()
            return Ref.at(kind.name, kind.key_of(found)) if found else None
    return None


def _pointer_filter(kind: K.Kind, file: str, tokens: Sequence[str]) -> dict[str, Any] | None:
    if file_path(kind.source) != file or len(kind.where) != len(tokens):
        return None
    lookup: dict[str, Any] = {}
    for part, token in zip(kind.where, tokens, strict=True):
        if not isinstance(part, K.Slot):
            if part != token:
                return None
            continue
        value = _index(token) if part.number else token
        if value is None:
            return None
        lookup[part.column] = value
    return lookup


def _index(token: str) -> int | None:
    if not token.isascii() or not token.isdigit() or len(token) > 9:
        return None
    if token != "0" and token.startswith("0"):
        return None
    return int(token)
