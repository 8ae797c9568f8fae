"""Read the autopsy records, validate them, and fill the entity tables.

Two steps, kept apart so the entity mount can read a record "as it stood" at an older commit:

* :func:`parse_records` is pure: it takes the contents of ``data/autopsy.json`` and
  ``data/lessons.json`` (bytes or text, from the checkout or from any git revision) and returns
  plain frozen :class:`Records`, or raises :class:`RecordError` naming the file and the field
  path, e.g. ``data/autopsy.json: games[3].routine_list[7].addr: must be an integer 0..65535``.
* :func:`fill` writes validated records into the models in one transaction with a constant
  number of bulk statements (bulk upserts keyed by the records' keys, then one delete per table
  for what the records no longer hold), applying maintainers' corrections again, so a reload is
  idempotent and corrections outlive it.

:func:`load_checkout` does both for a checkout directory; ``manage.py tm_load_records`` calls it.
:func:`parse_lineage` validates ``data/lineage.json`` for the offbox mount.
"""

from __future__ import annotations

import datetime
import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction

from tmsite.entities import models as m

AUTOPSY_FILE = "data/autopsy.json"
LESSONS_FILE = "data/lessons.json"
LINEAGE_FILE = "data/lineage.json"

#: Pattern and lesson keys; game keys; a routine's ``bank`` field in the record.
KEY_RE = re.compile(r"[a-z0-9][a-z0-9-]{0,63}", re.ASCII)
GAME_KEY_RE = re.compile(r"[0-9a-f]{12}", re.ASCII)
SHA256_RE = re.compile(r"[0-9a-f]{64}", re.ASCII)
BANK_RE = re.compile(r"prg(0|[1-9][0-9]{0,2})", re.ASCII)
DATE_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", re.ASCII)
WRITER_RE = re.compile(r"scripts/[A-Za-z0-9_.-]+\.py", re.ASCII)
TREE_RE = re.compile(r"[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*/", re.ASCII)
SCRIPT_PATH_RE = re.compile(
    r"[A-Za-z0-9_-][A-Za-z0-9_.-]*(/[A-Za-z0-9_-][A-Za-z0-9_.-]*)*", re.ASCII
)
KIND_RE = re.compile(r"[a-z][a-z0-9-]{0,39}", re.ASCII)

#: Fields that would carry cartridge bytes; the records never publish them.
BYTE_FIELDS = frozenset({"rom", "prg_bytes", "chr_bytes", "image"})

MAX_RECORD_BYTES = 64 * 1024 * 1024


class RecordError(ValueError):
    """A record that does not validate: which file, which field, what is wrong."""

    def __init__(self, file: str, path: str, message: str) -> None:
        self.file = file
        self.path = path
        self.message = message
        super().__init__(f"{file}: {path}: {message}")


# --- the validated records: plain frozen objects ----------------------------------------------


@dataclass(frozen=True)
class PatternRecord:
    """One entry of ``patterns`` in ``data/autopsy.json``."""

    key: str
    description: str
    position: int


@dataclass(frozen=True)
class InstanceRecord:
    """One entry of a routine's ``is[]``: the pattern it shows and the rule's evidence."""

    pattern: str
    evidence: dict[str, Any]


@dataclass(frozen=True)
class RoutineRecord:
    """One entry of a game's ``routine_list``."""

    name: str
    bank: int
    addr: int
    kind: str
    instances: tuple[InstanceRecord, ...]
    extra: dict[str, Any]
    position: int

    @property
    def key(self) -> str:
        """The routine's key inside its game, e.g. ``b0-8E5C``."""
        return f"b{self.bank}-{self.addr:04X}"


@dataclass(frozen=True)
class GameRecord:
    """One entry of ``games`` in ``data/autopsy.json``."""

    key: str
    name: str
    sha256: str
    mapper: int
    prg: int
    chr: int
    patterns: dict[str, int]
    routines: tuple[RoutineRecord, ...]
    extra: dict[str, Any]
    position: int


@dataclass(frozen=True)
class LessonRecord:
    """One entry of ``lessons`` in ``data/lessons.json``."""

    key: str
    title: str
    kind: str
    description: str
    game: str
    tree: str
    patterns: dict[str, int]
    extra: dict[str, Any]
    position: int


@dataclass(frozen=True)
class Records:
    """Both record files, validated against each other."""

    autopsy_writer: str
    lessons_writer: str
    boarded_on: str
    totals: dict[str, int]
    patterns: tuple[PatternRecord, ...]
    games: tuple[GameRecord, ...]
    lessons: tuple[LessonRecord, ...]
    autopsy_file: str = AUTOPSY_FILE
    lessons_file: str = LESSONS_FILE


@dataclass(frozen=True)
class OffboxRecord:
    """One node of ``offbox`` in ``data/lineage.json``."""

    name: str
    what: str
    why: str
    generated_by: tuple[str, ...]
    input_of: tuple[str, ...]


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


# --- validation helpers -----------------------------------------------------------------------


class _Reader:
    """Validation of one file: every error names the file and the field path."""

    def __init__(self, file: str) -> None:
        self.file = file

    def fail(self, path: str, message: str) -> RecordError:
        return RecordError(self.file, path or "(top level)", message)

    def decode(self, content: bytes | str) -> Any:
        if isinstance(content, bytes):
            if len(content) > MAX_RECORD_BYTES:
                raise self.fail("", f"larger than {MAX_RECORD_BYTES} bytes")
            try:
                content = content.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise self.fail("", f"not UTF-8 (byte {exc.start})") from None
        elif len(content) > MAX_RECORD_BYTES:
            raise self.fail("", f"larger than {MAX_RECORD_BYTES} bytes")

        def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
            out: dict[str, Any] = {}
            for name, value in items:
                if name in out:
                    raise ValueError(f"duplicate object key {name!r}")
                out[name] = value
            return out

        def constant(name: str) -> Any:
            raise ValueError(f"{name} is not JSON")

        try:
            return json.loads(content, object_pairs_hook=pairs, parse_constant=constant)
        except json.JSONDecodeError as exc:
            raise self.fail(
                "", f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
            ) from None
        except (ValueError, RecursionError) as exc:
            raise self.fail("", f"not JSON: {exc}") from None

    def obj(self, value: Any, path: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(path, "must be an object")
        return value

    def array(self, value: Any, path: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(path, "must be an array")
        return value

    def need(self, parent: Mapping[str, Any], name: str, path: str) -> Any:
        if name not in parent:
            raise self.fail(_join(path, name), "is required")
        return parent[name]

    def text(
        self,
        value: Any,
        path: str,
        *,
        max_len: int = 200,
        pattern: re.Pattern[str] | None = None,
        hint: str = "",
        one_line: bool = True,
    ) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.fail(path, "must be a non-empty string")
        if len(value) > max_len:
            raise self.fail(path, f"must be at most {max_len} characters")
        if "\x00" in value or (one_line and ("\n" in value or "\r" in value)):
            raise self.fail(path, "must be one line of text")
        if pattern is not None and not pattern.fullmatch(value):
            raise self.fail(path, f"must match {hint or pattern.pattern}")
        return value

    def integer(self, value: Any, path: str, low: int, high: int) -> int:
        if type(value) is not int or not low <= value <= high:
            raise self.fail(path, f"must be an integer {low}..{high}")
        return value

    def no_bytes(self, record: Mapping[str, Any], path: str) -> None:
        for name in sorted(BYTE_FIELDS & record.keys()):
            raise self.fail(_join(path, name), "cartridge bytes are never published")

    def counts(
        self, value: Any, path: str, known: Mapping[str, Any], known_file: str = ""
    ) -> dict[str, int]:
        counts: dict[str, int] = {}
        for name, count in self.obj(value, path).items():
            where = f"{path}[{json.dumps(name, ensure_ascii=True)}]"
            if name not in known:
                elsewhere = f" in {known_file}" if known_file else ""
                raise self.fail(where, f"no pattern with this name{elsewhere}")
            counts[name] = self.integer(count, where, 0, 2**31 - 1)
        return counts


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _writer(reader: _Reader, top: Mapping[str, Any], expected_hint: str) -> str:
    note = reader.text(reader.need(top, "note", ""), "note", max_len=1000)
    found = WRITER_RE.search(note)
    if found is None:
        raise reader.fail("note", f"must name its writer script ({expected_hint})")
    return found.group(0)


def _boarded_on(reader: _Reader, value: Any, path: str) -> str:
    text = reader.text(value, path, max_len=10, pattern=DATE_RE, hint="YYYY-MM-DD")
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        raise reader.fail(path, "must be a real date YYYY-MM-DD") from None
    return text


# --- the pure parse ---------------------------------------------------------------------------


def parse_records(
    autopsy: bytes | str,
    lessons: bytes | str,
    *,
    autopsy_file: str = AUTOPSY_FILE,
    lessons_file: str = LESSONS_FILE,
) -> Records:
    """Validate the two record files' contents and return them as plain objects.

    Pure: no database, no file system. The contents may come from the checkout or from a git
    revision; ``autopsy_file``/``lessons_file`` are the names errors use.

    Raises:
        RecordError: the first problem found, naming the file and the field path.
    """
    reader = _Reader(autopsy_file)
    top = reader.obj(reader.decode(autopsy), "")
    writer = _writer(reader, top, "scripts/board-autopsy.py")
    boarded_on = _boarded_on(reader, reader.need(top, "boarded_on", ""), "boarded_on")

    patterns: list[PatternRecord] = []
    pattern_map = reader.obj(reader.need(top, "patterns", ""), "patterns")
    if not pattern_map:
        raise reader.fail("patterns", "must name at least one pattern")
    for position, (key, description) in enumerate(pattern_map.items()):
        where = f"patterns[{json.dumps(key, ensure_ascii=True)}]"
        if not isinstance(key, str) or not KEY_RE.fullmatch(key):
            raise reader.fail(where, "pattern name must match ^[a-z0-9][a-z0-9-]{0,63}$")
        text = reader.text(description, where, max_len=500)
        patterns.append(PatternRecord(key=key, description=text, position=position))

    games_raw = reader.array(reader.need(top, "games", ""), "games")
    games: list[GameRecord] = []
    seen_games: set[str] = set()
    for position, raw in enumerate(games_raw):
        game = _game(reader, raw, f"games[{position}]", position, pattern_map)
        if game.key in seen_games:
            raise reader.fail(f"games[{position}].key", f"duplicate game key {game.key}")
        seen_games.add(game.key)
        games.append(game)

    totals_raw = reader.obj(reader.need(top, "totals", ""), "totals")
    totals = {}
    for name, value in totals_raw.items():
        where = f"totals[{json.dumps(name, ensure_ascii=True)}]"
        totals[name] = reader.integer(value, where, 0, 2**53)
    measured = {
        "games": len(games),
        "named_routines": sum(len(g.routines) for g in games),
        "instances": sum(len(r.instances) for g in games for r in g.routines),
    }
    for name, actual in measured.items():
        if name in totals and totals[name] != actual:
            raise reader.fail(
                f"totals.{name}", f"says {totals[name]} but the record holds {actual}"
            )

    game_keys = {g.key for g in games}
    lessons_reader = _Reader(lessons_file)
    ltop = lessons_reader.obj(lessons_reader.decode(lessons), "")
    lessons_writer = _writer(lessons_reader, ltop, "scripts/board-lessons.py")
    if "boarded_on" in ltop:
        _boarded_on(lessons_reader, ltop["boarded_on"], "boarded_on")
    lessons_raw = lessons_reader.array(lessons_reader.need(ltop, "lessons", ""), "lessons")
    lesson_list: list[LessonRecord] = []
    seen_lessons: set[str] = set()
    for position, raw in enumerate(lessons_raw):
        path = f"lessons[{position}]"
        lesson = _lesson(lessons_reader, raw, path, position, pattern_map, game_keys, autopsy_file)
        if lesson.key in seen_lessons:
            raise lessons_reader.fail(f"{path}.key", f"duplicate lesson key {lesson.key}")
        seen_lessons.add(lesson.key)
        lesson_list.append(lesson)

    return Records(
        autopsy_writer=writer,
        lessons_writer=lessons_writer,
        boarded_on=boarded_on,
        totals=totals,
        patterns=tuple(patterns),
        games=tuple(games),
        lessons=tuple(lesson_list),
        autopsy_file=autopsy_file,
        lessons_file=lessons_file,
    )


_GAME_TYPED = ("key", "name", "sha256", "mapper", "prg", "chr", "routine_list")


def _game(
    reader: _Reader, raw: Any, path: str, position: int, known: Mapping[str, Any]
) -> GameRecord:
    record = reader.obj(raw, path)
    reader.no_bytes(record, path)
    key = reader.text(
        reader.need(record, "key", path), f"{path}.key", pattern=GAME_KEY_RE, hint="12 hex digits"
    )
    sha = reader.text(
        reader.need(record, "sha256", path),
        f"{path}.sha256",
        pattern=SHA256_RE,
        hint="64 lowercase hex digits",
    )
    if not sha.startswith(key):
        raise reader.fail(f"{path}.key", "must be the first 12 hex digits of sha256")
    name = reader.text(reader.need(record, "name", path), f"{path}.name")
    mapper = reader.integer(reader.need(record, "mapper", path), f"{path}.mapper", 0, 4095)
    prg = reader.integer(reader.need(record, "prg", path), f"{path}.prg", 0, 4095)
    chr_ = reader.integer(reader.need(record, "chr", path), f"{path}.chr", 0, 4095)
    patterns = reader.counts(record.get("patterns", {}), f"{path}.patterns", known)

    routines: list[RoutineRecord] = []
    seen: set[tuple[int, int]] = set()
    listing = reader.array(reader.need(record, "routine_list", path), f"{path}.routine_list")
    for index, item in enumerate(listing):
        routine = _routine(reader, item, f"{path}.routine_list[{index}]", index, known)
        if (routine.bank, routine.addr) in seen:
            raise reader.fail(
                f"{path}.routine_list[{index}].addr",
                f"duplicate routine {routine.key} in this game",
            )
        seen.add((routine.bank, routine.addr))
        routines.append(routine)
    extra = {k: v for k, v in record.items() if k not in _GAME_TYPED}
    return GameRecord(
        key=key,
        name=name,
        sha256=sha,
        mapper=mapper,
        prg=prg,
        chr=chr_,
        patterns=patterns,
        routines=tuple(routines),
        extra=extra,
        position=position,
    )


_ROUTINE_TYPED = ("name", "bank", "addr", "kind", "is")


def _routine(
    reader: _Reader, raw: Any, path: str, position: int, known: Mapping[str, Any]
) -> RoutineRecord:
    record = reader.obj(raw, path)
    reader.no_bytes(record, path)
    name = reader.text(reader.need(record, "name", path), f"{path}.name", max_len=100)
    bank_text = reader.text(
        reader.need(record, "bank", path),
        f"{path}.bank",
        max_len=6,
        pattern=BANK_RE,
        hint="prg<N> with N 0..255",
    )
    bank = int(bank_text[3:])
    if bank > 255:
        raise reader.fail(f"{path}.bank", "must match prg<N> with N 0..255")
    addr = reader.integer(reader.need(record, "addr", path), f"{path}.addr", 0, 65535)
    kind = reader.need(record, "kind", path)
    if kind not in m.ROUTINE_KINDS:
        raise reader.fail(f"{path}.kind", f"must be one of {', '.join(m.ROUTINE_KINDS)}")
    instances: list[InstanceRecord] = []
    found = reader.array(reader.need(record, "is", path), f"{path}.is")
    if not found:
        raise reader.fail(f"{path}.is", "must name at least one pattern")
    seen: set[str] = set()
    for index, item in enumerate(found):
        where = f"{path}.is[{index}]"
        entry = reader.obj(item, where)
        pattern = reader.need(entry, "pattern", where)
        if not isinstance(pattern, str) or pattern not in known:
            raise reader.fail(f"{where}.pattern", "no pattern with this name in patterns")
        if pattern in seen:
            raise reader.fail(f"{where}.pattern", f"{pattern} is named twice in this routine")
        seen.add(pattern)
        evidence = reader.obj(reader.need(entry, "evidence", where), f"{where}.evidence")
        reader.text(reader.need(evidence, "by", f"{where}.evidence"), f"{where}.evidence.by")
        instances.append(InstanceRecord(pattern=pattern, evidence=evidence))
    extra = {k: v for k, v in record.items() if k not in _ROUTINE_TYPED}
    return RoutineRecord(
        name=name,
        bank=bank,
        addr=addr,
        kind=kind,
        instances=tuple(instances),
        extra=extra,
        position=position,
    )


_LESSON_TYPED = ("key", "title", "kind", "description", "game", "tree")


def _lesson(
    reader: _Reader,
    raw: Any,
    path: str,
    position: int,
    known: Mapping[str, Any],
    game_keys: set[str],
    autopsy_file: str,
) -> LessonRecord:
    record = reader.obj(raw, path)
    reader.no_bytes(record, path)
    key = reader.text(
        reader.need(record, "key", path),
        f"{path}.key",
        max_len=64,
        pattern=KEY_RE,
        hint="^[a-z0-9][a-z0-9-]{0,63}$",
    )
    title = reader.text(reader.need(record, "title", path), f"{path}.title")
    kind = reader.text(
        reader.need(record, "kind", path),
        f"{path}.kind",
        max_len=40,
        pattern=KIND_RE,
        hint="^[a-z][a-z0-9-]{0,39}$",
    )
    description = reader.text(
        reader.need(record, "description", path),
        f"{path}.description",
        max_len=4000,
        one_line=False,
    )
    game = reader.text(
        reader.need(record, "game", path),
        f"{path}.game",
        pattern=GAME_KEY_RE,
        hint="12 hex digits",
    )
    if game not in game_keys:
        raise reader.fail(f"{path}.game", f"no game with this key in {autopsy_file}")
    tree = reader.text(
        reader.need(record, "tree", path),
        f"{path}.tree",
        pattern=TREE_RE,
        hint="a relative directory path ending in /",
    )
    if any(part in {".", ".."} for part in tree.split("/")):
        raise reader.fail(f"{path}.tree", "must not contain . or .. segments")
    patterns = reader.counts(
        reader.need(record, "patterns", path), f"{path}.patterns", known, autopsy_file
    )
    extra = {k: v for k, v in record.items() if k not in _LESSON_TYPED}
    return LessonRecord(
        key=key,
        title=title,
        kind=kind,
        description=description,
        game=game,
        tree=tree,
        patterns=patterns,
        extra=extra,
        position=position,
    )


def parse_lineage(content: bytes | str, *, file: str = LINEAGE_FILE) -> tuple[OffboxRecord, ...]:
    """Validate ``data/lineage.json`` and return its ``offbox`` nodes in record order.

    Raises:
        RecordError: naming the file and the field path.
    """
    reader = _Reader(file)
    top = reader.obj(reader.decode(content), "")
    nodes = reader.obj(reader.need(top, "offbox", ""), "offbox")
    out: list[OffboxRecord] = []
    for name, raw in nodes.items():
        path = f"offbox[{json.dumps(name, ensure_ascii=True)}]"
        if not isinstance(name, str) or not KEY_RE.fullmatch(name):
            raise reader.fail(path, "node name must match ^[a-z0-9][a-z0-9-]{0,63}$")
        node = reader.obj(raw, path)
        what = reader.text(reader.need(node, "what", path), f"{path}.what", max_len=500)
        why = reader.text(reader.need(node, "why", path), f"{path}.why", max_len=500)
        lists: dict[str, tuple[str, ...]] = {}
        for field_name in ("generated_by", "input_of"):
            where = f"{path}.{field_name}"
            items = reader.array(node.get(field_name, []), where)
            checked = []
            for index, item in enumerate(items):
                text = reader.text(
                    item,
                    f"{where}[{index}]",
                    max_len=300,
                    pattern=SCRIPT_PATH_RE,
                    hint="a relative path inside the repository",
                )
                if any(part in {".", ".."} for part in text.split("/")):
                    raise reader.fail(f"{where}[{index}]", "must not contain . or .. segments")
                checked.append(text)
            lists[field_name] = tuple(checked)
        out.append(OffboxRecord(name, what, why, lists["generated_by"], lists["input_of"]))
    return tuple(out)


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


def pointer(*parts: str | int) -> str:
    """An RFC 6901 JSON pointer from its reference tokens."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)
