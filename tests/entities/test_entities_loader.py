"""The loader: exact errors naming file and field, idempotent reloads, bounded statements."""

from __future__ import annotations

import json
from collections.abc import Callable
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from tmsite.entities import models as m
from tmsite.entities.loaders import RecordError, Records, fill, parse_records

pytestmark = pytest.mark.spec("ENT")

Mutation = Callable[[dict[str, Any], dict[str, Any]], None]


def _set(path: list[Any], value: Any) -> Mutation:
    """Set a value inside the autopsy (first key "a") or lessons (first key "l") record."""

    def apply(autopsy: dict[str, Any], lessons: dict[str, Any]) -> None:
        target: Any = autopsy if path[0] == "a" else lessons
        for step in path[1:-1]:
            target = target[step]
        target[path[-1]] = value

    return apply


def _delete(path: list[Any]) -> Mutation:
    def apply(autopsy: dict[str, Any], lessons: dict[str, Any]) -> None:
        target: Any = autopsy if path[0] == "a" else lessons
        for step in path[1:-1]:
            target = target[step]
        del target[path[-1]]

    return apply


A = "data/autopsy.json"
L = "data/lessons.json"
ADDR = "must be an integer 0..65535"

CASES: list[tuple[str, Mutation, str, str, str]] = [
    ("addr too big", _set(["a", "games", 3, "routine_list", 7, "addr"], 65536),
     A, "games[3].routine_list[7].addr", ADDR),
    ("addr negative", _set(["a", "games", 3, "routine_list", 7, "addr"], -1),
     A, "games[3].routine_list[7].addr", ADDR),
    ("addr as text", _set(["a", "games", 3, "routine_list", 7, "addr"], "0x8E5C"),
     A, "games[3].routine_list[7].addr", ADDR),
    ("addr as bool", _set(["a", "games", 0, "routine_list", 0, "addr"], True),
     A, "games[0].routine_list[0].addr", ADDR),
    ("addr as float", _set(["a", "games", 0, "routine_list", 0, "addr"], 32768.0),
     A, "games[0].routine_list[0].addr", ADDR),
    ("bank out of range", _set(["a", "games", 1, "routine_list", 2, "bank"], "prg256"),
     A, "games[1].routine_list[2].bank", "must match prg<N> with N 0..255"),
    ("bank not prg", _set(["a", "games", 1, "routine_list", 2, "bank"], "chr0"),
     A, "games[1].routine_list[2].bank", "must match prg<N> with N 0..255"),
    ("unknown kind", _set(["a", "games", 0, "routine_list", 1, "kind"], "jsr"),
     A, "games[0].routine_list[1].kind", "must be one of call, dispatch, reset, irq, nmi"),
    ("unknown pattern in is", _set(["a", "games", 2, "routine_list", 0, "is", 0, "pattern"], "x"),
     A, "games[2].routine_list[0].is[0].pattern", "no pattern with this name in patterns"),
    ("evidence without by", _set(["a", "games", 2, "routine_list", 0, "is", 0, "evidence"], {}),
     A, "games[2].routine_list[0].is[0].evidence.by", "is required"),
    ("empty is", _set(["a", "games", 2, "routine_list", 0, "is"], []),
     A, "games[2].routine_list[0].is", "must name at least one pattern"),
    ("game key not hex", _set(["a", "games", 1, "key"], "XYZ"),
     A, "games[1].key", "must match 12 hex digits"),
    ("game key not the digest prefix", _set(["a", "games", 1, "key"], "0123456789ab"),
     A, "games[1].key", "must be the first 12 hex digits of sha256"),
    ("sha256 missing", _delete(["a", "games", 0, "sha256"]),
     A, "games[0].sha256", "is required"),
    ("mapper as text", _set(["a", "games", 4, "mapper"], "4"),
     A, "games[4].mapper", "must be an integer 0..4095"),
    ("cartridge bytes", _set(["a", "games", 0, "rom"], "TkVTGgIBAAAAAAAAAAAAAA=="),
     A, "games[0].rom", "cartridge bytes are never published"),
    ("game count of unknown pattern", _set(["a", "games", 0, "patterns", "moonwalk"], 1),
     A, 'games[0].patterns["moonwalk"]', "no pattern with this name"),
    ("bad pattern name", _set(["a", "patterns", "Pad Poll"], "Reads the pad."),
     A, 'patterns["Pad Poll"]', "pattern name must match ^[a-z0-9][a-z0-9-]{0,63}$"),
    ("two-line description", _set(["a", "patterns", "pad-poll"], "one\ntwo"),
     A, 'patterns["pad-poll"]', "must be one line of text"),
    ("totals disagree", _set(["a", "totals", "games"], 99),
     A, "totals.games", "says 99 but the record holds 7"),
    ("games not a list", _set(["a", "games"], {}), A, "games", "must be an array"),
    ("no writer", _set(["a", "note"], "Written by hand."),
     A, "note", "must name its writer script (scripts/board-autopsy.py)"),
    ("not a date", _set(["a", "boarded_on"], "2026-02-30"),
     A, "boarded_on", "must be a real date YYYY-MM-DD"),
    ("lesson of an unknown game", _set(["l", "lessons", 2, "game"], "000000000000"),
     L, "lessons[2].game", "no game with this key in data/autopsy.json"),
    ("lesson of an unknown pattern", _set(["l", "lessons", 0, "patterns", "nope"], 1),
     L, 'lessons[0].patterns["nope"]', "no pattern with this name in data/autopsy.json"),
    ("lesson tree escaping", _set(["l", "lessons", 1, "tree"], "lessons/../../etc/"),
     L, "lessons[1].tree", "must not contain . or .. segments"),
    ("lesson key with capitals", _set(["l", "lessons", 1, "key"], "Jump"),
     L, "lessons[1].key", "must match ^[a-z0-9][a-z0-9-]{0,63}$"),
    ("lesson rom", _set(["l", "lessons", 3, "rom"], "TkVTGg=="),
     L, "lessons[3].rom", "cartridge bytes are never published"),
    ("lesson title missing", _delete(["l", "lessons", 4, "title"]),
     L, "lessons[4].title", "is required"),
    ("lessons writer", _set(["l", "note"], "lessons"),
     L, "note", "must name its writer script (scripts/board-lessons.py)"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("mutate", "file", "path", "message"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_validation_errors_name_file_and_field(
    shipped_json: tuple[dict[str, Any], dict[str, Any]],
    mutate: Mutation,
    file: str,
    path: str,
    message: str,
) -> None:
    autopsy, lessons = shipped_json
    mutate(autopsy, lessons)
    with pytest.raises(RecordError) as caught:
        parse_records(json.dumps(autopsy).encode(), json.dumps(lessons).encode())
    assert (caught.value.file, caught.value.path, caught.value.message) == (file, path, message)
    assert file in str(caught.value) and path in str(caught.value)  # what a maintainer reads


def test_duplicate_routine_is_named_by_its_key(
    shipped_json: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    autopsy, lessons = shipped_json
    first, second = autopsy["games"][0]["routine_list"][:2]
    second["bank"], second["addr"] = first["bank"], first["addr"]
    key = f"b{int(first['bank'][3:])}-{first['addr']:04X}"
    with pytest.raises(RecordError) as caught:
        parse_records(json.dumps(autopsy), json.dumps(lessons))
    assert (caught.value.file, caught.value.path) == (
        "data/autopsy.json",
        "games[0].routine_list[1].addr",
    )
    assert key in caught.value.message


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{", "not JSON: Expecting property name enclosed in double quotes at line 1 column 2"),
        (b'{"a": NaN}', "not JSON: NaN is not JSON"),
        (b'{"a": 1, "a": 2}', "not JSON: duplicate object key 'a'"),
        (b"\xff\xfe", "not UTF-8 (byte 0)"),
        (b"[]", "must be an object"),
    ],
)
def test_documents_that_are_not_records(
    shipped_bytes: tuple[bytes, bytes], content: bytes, message: str
) -> None:
    with pytest.raises(RecordError) as caught:
        parse_records(content, shipped_bytes[1])
    assert (caught.value.file, caught.value.path, caught.value.message) == (
        "data/autopsy.json",
        "(top level)",
        message,
    )


def test_errors_name_the_revision_the_bytes_came_from(
    shipped_json: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    autopsy, lessons = shipped_json
    autopsy["games"][3]["routine_list"][7]["addr"] = 70000
    with pytest.raises(RecordError) as caught:
        parse_records(
            json.dumps(autopsy), json.dumps(lessons), autopsy_file="data/autopsy.json@1a2b3c4"
        )
    assert (caught.value.file, caught.value.path) == (
        "data/autopsy.json@1a2b3c4",
        "games[3].routine_list[7].addr",
    )


def test_an_older_revision_parses_without_the_database(
    shipped_json: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    """Pure: no database access is allowed in this test (no django_db mark)."""
    autopsy, lessons = shipped_json
    autopsy["games"][0]["name"] = "Lantern Drift (prototype)"
    del autopsy["games"][0]["routine_list"][5]
    autopsy["totals"]["named_routines"] -= 1
    autopsy["totals"].pop("instances")
    old = parse_records(json.dumps(autopsy).encode(), json.dumps(lessons).encode())
    assert old.games[0].name == "Lantern Drift (prototype)"
    assert len(old.games[0].routines) == len(autopsy["games"][0]["routine_list"])


def _table_state() -> dict[str, Any]:
    return {
        "patterns": list(m.Pattern.objects.values_list("id", "key", "description", "position")),
        "games": list(m.Game.objects.values_list("id", "key", "name", "extra", "position")),
        "routines": list(
            m.Routine.objects.values_list("id", "game_id", "bank", "addr", "name", "kind", "extra")
        ),
        "lessons": list(m.Lesson.objects.values_list("id", "key", "game_id", "title", "extra")),
        "game_patterns": sorted(
            m.GamePattern.objects.values_list("game_id", "pattern_id", "count")
        ),
        "instances": sorted(
            (r, p, json.dumps(e, sort_keys=True), i)
            for r, p, e, i in m.RoutinePattern.objects.values_list(
                "routine_id", "pattern_id", "evidence", "position"
            )
        ),
        "lesson_patterns": sorted(
            m.LessonPattern.objects.values_list("lesson_id", "pattern_id", "count")
        ),
    }


@pytest.mark.django_db
def test_reload_is_idempotent(shipped: Records) -> None:
    first = fill(shipped)
    before = _table_state()
    second = fill(shipped)
    assert _table_state() == before
    assert first == second
    assert (second.patterns, second.games, second.lessons) == (15, len(shipped.games), 7)
    assert second.routines == sum(len(g.routines) for g in shipped.games)
    assert m.Routine.objects.count() == second.routines
    assert m.RoutinePattern.objects.count() == second.instances
    assert sum(second.removed.values()) == 0


@pytest.mark.django_db
def test_reload_removes_what_the_record_dropped_and_keeps_ids(
    shipped_json: tuple[dict[str, Any], dict[str, Any]], shipped: Records
) -> None:
    fill(shipped)
    autopsy, lessons = shipped_json
    dropped = autopsy["games"].pop(1)
    lessons["lessons"] = [x for x in lessons["lessons"] if x["game"] != dropped["key"]]
    autopsy["totals"] = {}
    kept_ids = dict(m.Game.objects.exclude(key=dropped["key"]).values_list("key", "id"))
    report = fill(parse_records(json.dumps(autopsy), json.dumps(lessons)))
    assert not m.Game.objects.filter(key=dropped["key"]).exists()
    assert not m.Routine.objects.filter(game__key=dropped["key"]).exists()
    assert dict(m.Game.objects.values_list("key", "id")) == kept_ids
    assert report.removed["games"] == 1
    assert m.Routine.objects.count() == sum(len(g["routine_list"]) for g in autopsy["games"])
    # positions follow the new record: the game after the dropped one moved up
    assert m.Game.objects.get(key=autopsy["games"][1]["key"]).position == 1


@pytest.mark.django_db
def test_fill_statements_do_not_grow_with_the_records(
    shipped: Records,
    large: Callable[..., Records],
    django_assert_max_num_queries: Any,
) -> None:
    """Bulk statements: the large set (15x the routines) costs at most a few batches more."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as small:
        fill(shipped)
    big = large()
    with CaptureQueriesContext(connection) as huge:
        fill(big)
    rows = sum(len(g.routines) for g in big.games)
    assert rows == 5000
    # One statement per table plus the database's batches of at most 999 parameters.
    batches = 2 * (rows * 9 // 999 + 1) + 2 * (rows * 4 // 999 + 1)
    assert len(huge.captured_queries) <= len(small.captured_queries) + batches
    with django_assert_max_num_queries(len(huge.captured_queries)):
        fill(big)


@pytest.mark.django_db
def test_command_loads_a_checkout(tmp_path: Path, shipped_bytes: tuple[bytes, bytes]) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data/autopsy.json").write_bytes(shipped_bytes[0])
    (tmp_path / "data/lessons.json").write_bytes(shipped_bytes[1])
    out = StringIO()
    call_command("tm_load_records", "--checkout", str(tmp_path), stdout=out)
    assert out.getvalue().startswith("loaded 15 patterns, 7 games, ")
    assert m.Lesson.objects.count() == 7


@pytest.mark.django_db
def test_command_refuses_a_bad_record_naming_file_and_field(
    tmp_path: Path, shipped_json: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    autopsy, lessons = shipped_json
    autopsy["games"][3]["routine_list"][7]["addr"] = 65536
    (tmp_path / "data").mkdir()
    (tmp_path / "data/autopsy.json").write_text(json.dumps(autopsy))
    (tmp_path / "data/lessons.json").write_text(json.dumps(lessons))
    with pytest.raises(CommandError) as caught:
        call_command("tm_load_records", "--checkout", str(tmp_path))
    said = str(caught.value)
    assert "data/autopsy.json" in said and "games[3].routine_list[7].addr" in said
    assert m.Game.objects.count() == 0
