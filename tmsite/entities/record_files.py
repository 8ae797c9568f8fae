"""The record files as pydantic models: ``data/autopsy.json``, ``data/lessons.json``, lineage.

:func:`parse_records` is pure: it takes the contents of the two record files (bytes or text,
from the checkout or from any git revision) and returns plain frozen :class:`Records`, or raises
:class:`RecordError` naming the file and the field path, e.g.
``data/autopsy.json: games[3].routine_list[7].addr: must be an integer 0..65535``.

Each field is checked by one validator that says what is wrong in the records' own words; the
first problem pydantic reports becomes the :class:`RecordError` (each entry's fields in document
order, then the checks across fields: a key that is not its digest's prefix, duplicates,
totals). :func:`parse_lineage` validates ``data/lineage.json`` for the offbox mount.

Spec: ENT, OFFBOX, ANY1.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    model_validator,
)
from pydantic_core import PydanticCustomError

#: The kinds of routine the autopsy distinguishes.
ROUTINE_KINDS = ("call", "dispatch", "reset", "irq", "nmi")

AUTOPSY_FILE = "data/autopsy.json"
LESSONS_FILE = "data/lessons.json"
LINEAGE_FILE = "data/lineage.json"

#: Pattern and lesson keys; game keys; a routine's ``bank`` field in the record (0..255).
KEY_RE = re.compile(r"[a-z0-9][a-z0-9-]{0,63}", re.ASCII)
GAME_KEY_RE = re.compile(r"[0-9a-f]{12}", re.ASCII)
SHA256_RE = re.compile(r"[0-9a-f]{64}", re.ASCII)
BANK_NUMBER = r"(0|[1-9][0-9]?|1[0-9]{2}|2[0-4][0-9]|25[0-5])"
BANK_RE = re.compile(rf"prg{BANK_NUMBER}", re.ASCII)
DATE_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", re.ASCII)
WRITER_RE = re.compile(r"scripts/[A-Za-z0-9_.-]+\.py", re.ASCII)
TREE_RE = re.compile(r"[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*/", re.ASCII)
SCRIPT_PATH_RE = re.compile(
    r"[A-Za-z0-9_-][A-Za-z0-9_.-]*(/[A-Za-z0-9_-][A-Za-z0-9_.-]*)*", re.ASCII
)
KIND_RE = re.compile(r"[a-z][a-z0-9-]{0,39}", re.ASCII)
KEY_HINT = "^[a-z0-9][a-z0-9-]{0,63}$"

#: Fields that would carry cartridge bytes; the records never publish them.
BYTE_FIELDS = frozenset({"rom", "prg_bytes", "chr_bytes", "image"})

MAX_RECORD_BYTES = 64 * 1024 * 1024
_MAX_COUNT = 2**31 - 1


class RecordError(ValueError):
    """A record that does not validate: which file, which field, what is wrong."""

    def __init__(self, file: str, path: str, message: str) -> None:
        self.file = file
        self.path = path
        self.message = message
        super().__init__(f"{file}: {path}: {message}")


# --- problems, and how pydantic's report of them becomes a RecordError -----------------------


def _issue(message: str, at: str = "", *, sibling: str = "") -> PydanticCustomError:
    """A problem in the records' words; ``at`` is the path below the validated value.

    ``sibling``: the problem is the named field's beside the one validated (a key that is not
    the prefix of the digest validated after it).
    """
    ctx = {"message": message, "at": at, "sibling": sibling}
    return PydanticCustomError("record", "{message}", ctx)


def _quoted(name: object) -> str:
    return f"[{json.dumps(name, ensure_ascii=True)}]"


#: pydantic's own error types, in the records' words.
_PYDANTIC_WORDS = {
    "missing": "is required",
    "model_type": "must be an object",
    "dict_type": "must be an object",
    "list_type": "must be an array",
    "tuple_type": "must be an array",
}


def _first_problem(exc: ValidationError) -> tuple[str, str]:
    """The first problem pydantic found: its message, and its path (``.a[3].b``)."""
    first = exc.errors(include_url=False)[0]
    ctx = first.get("ctx") or {}
    message = ctx["message"] if first["type"] == "record" else _PYDANTIC_WORDS[first["type"]]
    loc = list(first["loc"])
    if ctx.get("sibling"):
        loc[-1] = ctx["sibling"]
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)
    return message, path + ctx.get("at", "")


def _record_error(file: str, exc: ValidationError) -> RecordError:
    message, path = _first_problem(exc)
    return RecordError(file, path.removeprefix(".") or "(top level)", message)


Model = TypeVar("Model", bound=BaseModel)


def _validate(model: type[Model], value: Any, file: str, context: dict[str, Any]) -> Model:
    try:
        return model.model_validate(value, context=context)
    except ValidationError as exc:
        raise _record_error(file, exc) from None


# --- the field checks --------------------------------------------------------------------------


def _text_problem(
    value: Any, max_len: int, pattern: re.Pattern[str] | None, hint: str, one_line: bool
) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return "must be a non-empty string"
    if len(value) > max_len:
        return f"must be at most {max_len} characters"
    if "\x00" in value or (one_line and ("\n" in value or "\r" in value)):
        return "must be one line of text"
    if pattern is not None and not pattern.fullmatch(value):
        return f"must match {hint or pattern.pattern}"
    return None


def _check_text(
    value: Any,
    at: str = "",
    *,
    max_len: int = 200,
    pattern: re.Pattern[str] | None = None,
    hint: str = "",
    one_line: bool = True,
) -> str:
    problem = _text_problem(value, max_len, pattern, hint, one_line)
    if problem is not None:
        raise _issue(problem, at)
    return str(value)


def text(
    *,
    max_len: int = 200,
    pattern: re.Pattern[str] | None = None,
    hint: str = "",
    one_line: bool = True,
) -> PlainValidator:
    """A non-empty string of at most ``max_len`` characters, one line, matching ``pattern``."""
    return PlainValidator(
        lambda value: _check_text(
            value, max_len=max_len, pattern=pattern, hint=hint, one_line=one_line
        )
    )


def _check_integer(value: Any, low: int, high: int, at: str = "") -> int:
    if type(value) is not int or not low <= value <= high:
        raise _issue(f"must be an integer {low}..{high}", at)
    return value


def integer(low: int, high: int) -> PlainValidator:
    """An integer ``low..high`` (not a bool, not a float)."""
    return PlainValidator(lambda value: _check_integer(value, low, high))


def _object(value: Any, at: str = "") -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _issue("must be an object", at)
    return value


def _no_dot_segments(path: str, at: str = "") -> str:
    if any(part in {".", ".."} for part in path.split("/")):
        raise _issue("must not contain . or .. segments", at)
    return path


def _writer(expected: str) -> PlainValidator:
    def check(value: Any) -> str:
        found = WRITER_RE.search(_check_text(value, max_len=1000))
        if found is None:
            raise _issue(f"must name its writer script ({expected})")
        return found.group(0)

    return PlainValidator(check)


def _date(value: Any) -> str:
    day = _check_text(value, max_len=10, pattern=DATE_RE, hint="YYYY-MM-DD")
    try:
        datetime.date.fromisoformat(day)
    except ValueError:
        raise _issue("must be a real date YYYY-MM-DD") from None
    return day


def _counts(name_the_file: bool) -> PlainValidator:
    """Pattern name → count; the names must be patterns of ``data/autopsy.json``."""

    def check(value: Any, info: ValidationInfo) -> dict[str, int]:
        known = _context(info)["patterns"]
        elsewhere = f" in {_context(info)['autopsy_file']}" if name_the_file else ""
        counts: dict[str, int] = {}
        for name, count in _object(value).items():
            if name not in known:
                raise _issue(f"no pattern with this name{elsewhere}", _quoted(name))
            counts[name] = _check_integer(count, 0, _MAX_COUNT, _quoted(name))
        return counts

    return PlainValidator(check)


def _context(info: ValidationInfo) -> dict[str, Any]:
    context = info.context
    assert isinstance(context, dict), "the record models validate with a context"
    return context


# --- the validated records: plain frozen objects ----------------------------------------------


class _Entry(BaseModel):
    """One entry of a record file: its typed fields, the rest kept as written (``extra``)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    #: The record's names this model types; every other name is kept in ``extra``.
    TYPED: ClassVar[frozenset[str]] = frozenset()

    _extra: dict[str, Any] = PrivateAttr(default_factory=dict)
    _position: int = PrivateAttr(default=0)

    @model_validator(mode="wrap")
    @classmethod
    def _keep_the_rest(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        if isinstance(data, dict):
            for name in sorted(BYTE_FIELDS & data.keys()):
                raise _issue("cartridge bytes are never published", f".{name}")
        made = handler(data)
        if isinstance(data, dict):
            made._extra = {k: v for k, v in data.items() if k not in cls.TYPED}
        return made

    @property
    def extra(self) -> dict[str, Any]:
        """The record's other fields, as written."""
        return self._extra

    @property
    def position(self) -> int:
        """Index in the list that holds it."""
        return self._position


E = TypeVar("E", bound=_Entry)


def _numbered(entries: tuple[E, ...]) -> tuple[E, ...]:
    for position, entry in enumerate(entries):
        entry._position = position
    return tuple(entries)


class PatternRecord(BaseModel):
    """One entry of ``patterns`` in ``data/autopsy.json``."""

    model_config = ConfigDict(frozen=True)

    key: str
    description: str
    position: int


def _patterns(value: Any) -> tuple[PatternRecord, ...]:
    entries = _object(value)
    if not entries:
        raise _issue("must name at least one pattern")
    out = []
    for position, (key, description) in enumerate(entries.items()):
        if not isinstance(key, str) or not KEY_RE.fullmatch(key):
            raise _issue(f"pattern name must match {KEY_HINT}", _quoted(key))
        checked = _check_text(description, _quoted(key), max_len=500)
        out.append(PatternRecord(key=key, description=checked, position=position))
    return tuple(out)


def _known_pattern(value: Any, info: ValidationInfo) -> str:
    if not isinstance(value, str) or value not in _context(info)["patterns"]:
        raise _issue("no pattern with this name in patterns")
    return value


def _evidence(value: Any) -> dict[str, Any]:
    evidence = _object(value)
    if "by" not in evidence:
        raise _issue("is required", ".by")
    _check_text(evidence["by"], ".by")
    return evidence


class InstanceRecord(BaseModel):
    """One entry of a routine's ``is[]``: the pattern it shows and the rule's evidence."""

    model_config = ConfigDict(frozen=True)

    pattern: Annotated[str, PlainValidator(_known_pattern)]
    evidence: Annotated[dict[str, Any], PlainValidator(_evidence)]


def _bank(value: Any) -> int:
    bank = _check_text(value, max_len=6, pattern=BANK_RE, hint="prg<N> with N 0..255")
    return int(bank[3:])


def _routine_kind(value: Any) -> str:
    if value not in ROUTINE_KINDS:
        raise _issue(f"must be one of {', '.join(ROUTINE_KINDS)}")
    return str(value)


def _instances(found: tuple[InstanceRecord, ...]) -> tuple[InstanceRecord, ...]:
    if not found:
        raise _issue("must name at least one pattern")
    seen: set[str] = set()
    for index, instance in enumerate(found):
        if instance.pattern in seen:
            raise _issue(f"{instance.pattern} is named twice in this routine", f"[{index}].pattern")
        seen.add(instance.pattern)
    return tuple(found)


def routine_key(bank: int, addr: int) -> str:
    """``(0, 0x8E5C)`` → ``b0-8E5C``."""
    return f"b{bank}-{addr:04X}"


class RoutineRecord(_Entry):
    """One entry of a game's ``routine_list``."""

    TYPED = frozenset({"name", "bank", "addr", "kind", "is"})

    name: Annotated[str, text(max_len=100)]
    bank: Annotated[int, PlainValidator(_bank)]
    addr: Annotated[int, integer(0, 65535)]
    kind: Annotated[str, PlainValidator(_routine_kind)]
    instances: Annotated[tuple[InstanceRecord, ...], AfterValidator(_instances)] = Field(alias="is")

    @property
    def key(self) -> str:
        """The routine's key inside its game, e.g. ``b0-8E5C``."""
        return routine_key(self.bank, self.addr)


def _routines(found: tuple[RoutineRecord, ...]) -> tuple[RoutineRecord, ...]:
    seen: set[tuple[int, int]] = set()
    for index, routine in enumerate(found):
        if (routine.bank, routine.addr) in seen:
            raise _issue(f"duplicate routine {routine.key} in this game", f"[{index}].addr")
        seen.add((routine.bank, routine.addr))
    return _numbered(found)


def _sha256(value: Any, info: ValidationInfo) -> str:
    sha = _check_text(value, pattern=SHA256_RE, hint="64 lowercase hex digits")
    key = info.data.get("key")
    if isinstance(key, str) and not sha.startswith(key):
        raise _issue("must be the first 12 hex digits of sha256", sibling="key")
    return sha


class GameRecord(_Entry):
    """One entry of ``games`` in ``data/autopsy.json``."""

    TYPED = frozenset({"key", "name", "sha256", "mapper", "prg", "chr", "routine_list"})

    key: Annotated[str, text(pattern=GAME_KEY_RE, hint="12 hex digits")]
    sha256: Annotated[str, PlainValidator(_sha256)]
    name: Annotated[str, text()]
    mapper: Annotated[int, integer(0, 4095)]
    prg: Annotated[int, integer(0, 4095)]
    chr: Annotated[int, integer(0, 4095)]
    patterns: Annotated[dict[str, int], _counts(name_the_file=False)] = Field(default_factory=dict)
    routines: Annotated[tuple[RoutineRecord, ...], AfterValidator(_routines)] = Field(
        alias="routine_list"
    )


def _lesson_game(value: Any, info: ValidationInfo) -> str:
    game = _check_text(value, pattern=GAME_KEY_RE, hint="12 hex digits")
    if game not in _context(info)["games"]:
        raise _issue(f"no game with this key in {_context(info)['autopsy_file']}")
    return game


def _tree(value: Any) -> str:
    tree = _check_text(value, pattern=TREE_RE, hint="a relative directory path ending in /")
    return _no_dot_segments(tree)


class LessonRecord(_Entry):
    """One entry of ``lessons`` in ``data/lessons.json``."""

    TYPED = frozenset({"key", "title", "kind", "description", "game", "tree"})

    key: Annotated[str, text(max_len=64, pattern=KEY_RE, hint=KEY_HINT)]
    title: Annotated[str, text()]
    kind: Annotated[str, text(max_len=40, pattern=KIND_RE, hint="^[a-z][a-z0-9-]{0,39}$")]
    description: Annotated[str, text(max_len=4000, one_line=False)]
    game: Annotated[str, PlainValidator(_lesson_game)]
    tree: Annotated[str, PlainValidator(_tree)]
    patterns: Annotated[dict[str, int], _counts(name_the_file=True)]


def _unique(what: str) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    def check(entries: tuple[Any, ...]) -> tuple[Any, ...]:
        seen: set[str] = set()
        for index, entry in enumerate(entries):
            if entry.key in seen:
                raise _issue(f"duplicate {what} key {entry.key}", f"[{index}].key")
            seen.add(entry.key)
        return _numbered(entries)

    return check


def _totals(value: Any) -> dict[str, int]:
    return {
        name: _check_integer(count, 0, 2**53, _quoted(name))
        for name, count in _object(value).items()
    }


class _File(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class AutopsyFile(_File):
    """``data/autopsy.json``: its writer, when it was boarded, the patterns and the games."""

    note: Annotated[str, _writer("scripts/board-autopsy.py")]
    boarded_on: Annotated[str, PlainValidator(_date)]
    patterns: Annotated[tuple[PatternRecord, ...], PlainValidator(_patterns)]
    games: Annotated[tuple[GameRecord, ...], AfterValidator(_unique("game"))]
    totals: Annotated[dict[str, int], PlainValidator(_totals)]

    @model_validator(mode="after")
    def _totals_hold(self) -> AutopsyFile:
        measured = {
            "games": len(self.games),
            "named_routines": sum(len(g.routines) for g in self.games),
            "instances": sum(len(r.instances) for g in self.games for r in g.routines),
        }
        for name, actual in measured.items():
            if name in self.totals and self.totals[name] != actual:
                said = self.totals[name]
                raise _issue(f"says {said} but the record holds {actual}", f"totals.{name}")
        return self


class LessonsFile(_File):
    """``data/lessons.json``: its writer and the lessons."""

    note: Annotated[str, _writer("scripts/board-lessons.py")]
    boarded_on: Annotated[str | None, PlainValidator(_date)] = None
    lessons: Annotated[tuple[LessonRecord, ...], AfterValidator(_unique("lesson"))]


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
    #: When each record file's content last changed (UTC), by source (``autopsy``,
    #: ``lessons``), where the reader knew it: a checkout file's modification time as it was
    #: read, a revision's the time of the commit that last changed the file. Empty when the
    #: contents came from elsewhere.
    modified: Mapping[str, datetime.datetime] = field(default_factory=dict)
    #: The sources (``autopsy``, ``lessons``) whose file the checkout does not have: records
    #: are optional, and a checkout without them serves no entity of their kinds.
    absent: frozenset[str] = frozenset()

    def file_name(self, source: str) -> str:
        """The name these records give the file ``source`` (e.g. ``data/autopsy.json@1a2b3c4``)."""
        return {"autopsy": self.autopsy_file, "lessons": self.lessons_file}[source]


def file_path(source: str) -> str:
    """The checkout path of the record file ``source`` (``autopsy`` or ``lessons``)."""
    return {"autopsy": AUTOPSY_FILE, "lessons": LESSONS_FILE}[source]


# --- decoding, and the pure parse --------------------------------------------------------------


def _pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in items:
        if name in out:
            raise ValueError(f"duplicate object key {name!r}")
        out[name] = value
    return out


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def decode(content: bytes | str, file: str) -> Any:
    """Strict JSON (no duplicate keys, no NaN), at most :data:`MAX_RECORD_BYTES`."""

    def fail(message: str) -> RecordError:
        return RecordError(file, "(top level)", message)

    if len(content) > MAX_RECORD_BYTES:
        raise fail(f"larger than {MAX_RECORD_BYTES} bytes")
    if isinstance(content, bytes):
        try:
            content = content.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise fail(f"not UTF-8 (byte {exc.start})") from None
    try:
        return json.loads(content, object_pairs_hook=_pairs, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        raise fail(f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except (ValueError, RecursionError) as exc:
        raise fail(f"not JSON: {exc}") from None


def _raw_keys(document: Any, name: str) -> Mapping[str, Any]:
    """The raw names under ``name`` that later fields are checked against."""
    found = document.get(name) if isinstance(document, dict) else None
    return found if isinstance(found, dict) else {}


def parse_records(
    autopsy: bytes | str | None,
    lessons: bytes | str | None,
    *,
    autopsy_file: str = AUTOPSY_FILE,
    lessons_file: str = LESSONS_FILE,
    modified: Mapping[str, datetime.datetime] | None = None,
) -> Records:
    """Validate the two record files' contents and return them as plain objects.

    Pure: no database, no file system. The contents may come from the checkout or from a git
    revision; ``autopsy_file``/``lessons_file`` are the names errors use, ``modified`` when
    each file last changed, by source, if the caller knows (:attr:`Records.modified`). A
    content of ``None`` is a file the checkout does not have: it holds nothing, and
    :attr:`Records.absent` names it.

    Raises:
        RecordError: the first problem found, naming the file and the field path.
    """
    context = {"patterns": frozenset[str](), "autopsy_file": autopsy_file, "games": frozenset()}
    found = None
    if autopsy is not None:
        top = decode(autopsy, autopsy_file)
        context["patterns"] = _raw_keys(top, "patterns")
        found = _validate(AutopsyFile, top, autopsy_file, context)
        context["games"] = frozenset(g.key for g in found.games)
    then = None
    if lessons is not None:
        then = _validate(LessonsFile, decode(lessons, lessons_file), lessons_file, context)
    absent = {"autopsy": found is None, "lessons": then is None}
    return Records(
        autopsy_writer=found.note if found else "",
        lessons_writer=then.note if then else "",
        boarded_on=found.boarded_on if found else "",
        totals=found.totals if found else {},
        patterns=found.patterns if found else (),
        games=found.games if found else (),
        lessons=then.lessons if then else (),
        autopsy_file=autopsy_file,
        lessons_file=lessons_file,
        modified=dict(modified or {}),
        absent=frozenset(source for source, missing in absent.items() if missing),
    )


# --- the lineage record ------------------------------------------------------------------------


def _script_paths(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise _issue("must be an array")
    return tuple(
        _no_dot_segments(
            _check_text(
                item,
                f"[{index}]",
                max_len=300,
                pattern=SCRIPT_PATH_RE,
                hint="a relative path inside the repository",
            ),
            f"[{index}]",
        )
        for index, item in enumerate(value)
    )


@dataclass(frozen=True)
class OffboxRecord:
    """One node of ``offbox`` in ``data/lineage.json``."""

    name: str
    what: str
    why: str
    generated_by: tuple[str, ...]
    input_of: tuple[str, ...]


class _Node(_File):
    what: Annotated[str, text(max_len=500)]
    why: Annotated[str, text(max_len=500)]
    generated_by: Annotated[tuple[str, ...], PlainValidator(_script_paths)] = ()
    input_of: Annotated[tuple[str, ...], PlainValidator(_script_paths)] = ()


def _nodes(value: Any) -> tuple[OffboxRecord, ...]:
    out = []
    for name, raw in _object(value).items():
        if not isinstance(name, str) or not KEY_RE.fullmatch(name):
            raise _issue(f"node name must match {KEY_HINT}", _quoted(name))
        try:
            node = _Node.model_validate(raw)
        except ValidationError as exc:
            message, below = _first_problem(exc)
            raise _issue(message, _quoted(name) + below) from None
        out.append(OffboxRecord(name, node.what, node.why, node.generated_by, node.input_of))
    return tuple(out)


class LineageFile(_File):
    """``data/lineage.json``: the nodes of the work done off this box."""

    offbox: Annotated[tuple[OffboxRecord, ...], PlainValidator(_nodes)]


def parse_lineage(content: bytes | str, *, file: str = LINEAGE_FILE) -> tuple[OffboxRecord, ...]:
    """Validate ``data/lineage.json`` and return its ``offbox`` nodes in record order.

    Raises:
        RecordError: naming the file and the field path.
    """
    return _validate(LineageFile, decode(content, file), file, {}).offbox


def pointer(*parts: str | int) -> str:
    """An RFC 6901 JSON pointer from its reference tokens."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)
