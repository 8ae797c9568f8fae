"""The read API: entities by key, relations in pages, constant queries, hostile keys."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tmsite.entities import records as R
from tmsite.entities.loaders import Records, fill, parse_records

pytestmark = pytest.mark.spec("ENT")


def _all_refs(records: Records) -> list[R.Ref]:
    refs = [R.Ref("pattern", p.key) for p in records.patterns]
    refs += [R.Ref("game", g.key) for g in records.games]
    refs += [R.Ref("routine", r.key, g.key) for g in records.games for r in g.routines]
    refs += [R.Ref("lesson", x.key) for x in records.lessons]
    return refs


def _resolve(document: Any, pointer: str) -> Any:
    for token in pointer.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        document = document[int(token)] if isinstance(document, list) else document[token]
    return document


@pytest.mark.django_db
def test_database_reads_match_the_record_read(loaded: Records) -> None:
    """Every entity reads the same from the tables as straight from the record."""
    snapshot = R.Snapshot(loaded)
    for ref in _all_refs(loaded):
        assert R.get(ref) == snapshot.get(ref), ref


@pytest.mark.django_db
def test_pointers_lead_to_the_entity_in_its_record(
    loaded: Records, shipped_json: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    autopsy, lessons = shipped_json
    files = {"data/autopsy.json": autopsy, "data/lessons.json": lessons}
    for ref in _all_refs(loaded):
        entity = R.get(ref)
        assert entity is not None
        found = _resolve(files[entity.file], entity.pointer)
        if ref.kind == "pattern":
            assert found == entity.fields["description"]
        elif ref.kind == "game":
            assert {k: v for k, v in found.items() if k != "routine_list"} == entity.fields
        else:
            assert found == entity.fields


@pytest.mark.django_db
def test_a_routine_reads_with_its_place(
    loaded: Records, shipped_json: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    autopsy, _ = shipped_json
    raw = autopsy["games"][3]["routine_list"][7]
    key = f"b{int(raw['bank'][3:])}-{raw['addr']:04X}"
    entity = R.get_routine(autopsy["games"][3]["key"], key)
    assert entity is not None
    assert entity.pointer == "/games/3/routine_list/7"
    assert entity.file == "data/autopsy.json"
    assert entity.fields["name"] == raw["name"]
    assert [m.key for m in entity.related["instance-of"].items] == [i["pattern"] for i in raw["is"]]
    assert entity.related["game"].items[0].key == autopsy["games"][3]["key"]


@pytest.mark.django_db
def test_relations_carry_counts_from_the_record(
    loaded: Records, shipped_json: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    autopsy, lessons = shipped_json
    pad = R.get_pattern("pad-poll")
    assert pad is not None
    expected = [(g["key"], g["patterns"]["pad-poll"]) for g in autopsy["games"]
                if "pad-poll" in g["patterns"]]  # fmt: skip
    assert [(m.key, m.count) for m in pad.related["found-in"].items] == expected
    instances = sum(
        1 for g in autopsy["games"] for r in g["routine_list"] for i in r["is"]
        if i["pattern"] == "pad-poll"
    )  # fmt: skip
    assert pad.counts["instance"] == instances
    demonstrated = [x["key"] for x in lessons["lessons"] if "pad-poll" in x["patterns"]]
    assert [m.key for m in pad.related["demonstrated-by"].items] == demonstrated

    game = autopsy["games"][4]
    entity = R.get_game(game["key"])
    assert entity is not None
    assert {m.key: m.count for m in entity.related["pattern"].items} == game["patterns"]
    assert entity.counts["routine"] == len(game["routine_list"])
    measuring = [x["key"] for x in lessons["lessons"] if x["game"] == game["key"]]
    assert [m.key for m in entity.related["measured-by"].items] == measuring
    assert entity.pointer == "/games/4"

    jump = R.get_lesson("jump")
    assert jump is not None
    raw = next(x for x in lessons["lessons"] if x["key"] == "jump")
    assert jump.related["measures"].items[0].key == raw["game"]
    assert {m.key: m.count for m in jump.related["pattern"].items} == raw["patterns"]
    assert jump.pointer == f"/lessons/{lessons['lessons'].index(raw)}"
    assert json.loads(json.dumps(jump.as_json()))["fields"]["tree"] == "lessons/jump/"


@pytest.mark.django_db
def test_unknown_but_well_formed_keys_read_as_none(loaded: Records) -> None:
    assert R.get_pattern("moonwalk") is None
    assert R.get_game("000000000000") is None
    assert R.get_routine(loaded.games[0].key, "b9-0000") is None
    assert R.get_lesson("nope") is None
    assert R.related(R.Ref.of("pattern", "moonwalk"), "instance") is None


@pytest.mark.django_db
def test_an_older_revision_reads_as_it_stood(
    loaded: Records, shipped_json: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    autopsy, lessons = shipped_json
    game = autopsy["games"][0]
    game["name"] = "Lantern Drift (prototype)"
    gone = game["routine_list"].pop(0)
    autopsy["totals"] = {}
    then = R.Snapshot(parse_records(json.dumps(autopsy), json.dumps(lessons)))
    ref = R.Ref.of("game", game["key"])
    old, now = then.get(ref), R.get(ref)
    assert old is not None and now is not None
    assert old.fields["name"] == "Lantern Drift (prototype)"
    assert now.fields["name"] == "Lantern Drift"
    assert old.counts["routine"] == now.counts["routine"] - 1
    gone_key = f"b{int(gone['bank'][3:])}-{gone['addr']:04X}"
    assert then.get(R.Ref.of("routine", gone_key, game["key"])) is None
    assert R.get(R.Ref.of("routine", gone_key, game["key"])) is not None


# --- a large record set: 5,000 routines, one pattern in 2,000 of them -------------------------


@pytest.fixture
def big(db: None, large: Callable[..., Records]) -> Records:
    records = large(games=10, per_game=500, hot="pad-poll", hot_count=2000)
    fill(records)
    return records


@pytest.mark.django_db
def test_member_pages_are_constant_in_queries(
    big: Records, django_assert_max_num_queries: Any
) -> None:
    ref = R.Ref.of("pattern", "pad-poll")
    seen: list[tuple[str | None, str]] = []
    offset: int | None = 0
    pages = 0
    while offset is not None:
        with django_assert_max_num_queries(3):
            page = R.related(ref, "instance", offset=offset, limit=100)
        assert page is not None and page.total == 2000
        seen += [(m.game, m.key) for m in page.items]
        offset = page.next_offset
        pages += 1
    assert pages == 20
    assert len(set(seen)) == 2000
    expected = R.Snapshot(big).related(ref, "instance", limit=500)
    assert expected is not None
    assert seen[:500] == [(m.game, m.key) for m in expected.items]
    # the deep end costs what the first page costs
    with django_assert_max_num_queries(3):
        last = R.related(ref, "instance", offset=1950, limit=500)
    assert last is not None and len(last.items) == 50 and last.next_offset is None


@pytest.mark.django_db
def test_entity_reads_are_constant_in_queries(
    big: Records, django_assert_max_num_queries: Any
) -> None:
    with django_assert_max_num_queries(8):
        pad = R.get_pattern("pad-poll")
    assert pad is not None
    assert pad.counts == {"found-in": 10, "instance": 2000, "demonstrated-by": 12}
    assert len(pad.related["instance"].items) == R.INLINE_LIMIT
    game = big.games[3]
    with django_assert_max_num_queries(8):
        entity = R.get_game(game.key)
    assert entity is not None and entity.counts["routine"] == 500
    routine = game.routines[250]
    with django_assert_max_num_queries(8):
        r = R.get_routine(game.key, routine.key)
    assert r is not None and r.pointer == "/games/3/routine_list/250"
    with django_assert_max_num_queries(2):
        listed = R.list_entities("routine", game=game.key, offset=400, limit=100)
    assert [m.key for m in listed.items] == [x.key for x in game.routines[400:500]]


@pytest.mark.django_db
def test_paging_arguments_are_checked(loaded: Records) -> None:
    ref = R.Ref.of("pattern", "pad-poll")
    with pytest.raises(ValueError, match=r"^limit must be an integer 1\.\.500$"):
        R.related(ref, "instance", limit=501)
    with pytest.raises(ValueError, match=r"^offset must be an integer >= 0$"):
        R.related(ref, "instance", offset=-1)
    with pytest.raises(ValueError) as caught:
        R.related(ref, "routine")
    assert str(caught.value) == (
        "no relation 'routine' on a pattern; one of found-in, instance, demonstrated-by"
    )


# --- hostile keys: refused by shape, before any query -----------------------------------------

PATTERN_REASON = "must match ^[a-z0-9][a-z0-9-]{0,63}$"
GAME_REASON = "must be 12 lowercase hex digits"
ROUTINE_REASON = "must be b<bank>-<ADDR>: bank 0..255, 4 uppercase hex digits"

HOSTILE: list[tuple[str, object, str]] = [
    ("pattern", "pad-poll' OR '1'='1", PATTERN_REASON),
    ("pattern", "x; DROP TABLE tm_entities_pattern; --", PATTERN_REASON),
    ("pattern", "pad-poll\n", PATTERN_REASON),
    ("pattern", "pad\x00poll", PATTERN_REASON),
    ("pattern", "Pad-Poll", PATTERN_REASON),
    ("pattern", "-pad", PATTERN_REASON),
    ("pattern", "", PATTERN_REASON),
    ("pattern", "pad_poll", PATTERN_REASON),
    ("pattern", "pаd-poll", PATTERN_REASON),  # Cyrillic а
    ("pattern", "a" * 65, "longer than 64 characters"),
    ("pattern", "a" * 100_000, "longer than 64 characters"),
    ("pattern", 5, "must be a string"),
    ("lesson", "../jump", PATTERN_REASON),
    ("lesson", "jump%00", PATTERN_REASON),
    ("game", "72F469219B30", GAME_REASON),
    ("game", "72f469219b3", GAME_REASON),
    ("game", "72f469219b300", GAME_REASON),
    ("game", "٧٢f469219b30", GAME_REASON),  # Arabic-Indic digits
    ("game", "7２f469219b30", GAME_REASON),  # fullwidth 2
    ("game", "' OR 1=1 --", GAME_REASON),
    ("game", None, "must be a string"),
    ("routine", "b256-8E5C", ROUTINE_REASON),
    ("routine", "b00-8E5C", ROUTINE_REASON),
    ("routine", "b0-8e5c", ROUTINE_REASON),
    ("routine", "b0-8E5", ROUTINE_REASON),
    ("routine", "b0-18E5C", ROUTINE_REASON),
    ("routine", "b1_000-8E5C", ROUTINE_REASON),
    ("routine", "b0-8_E5C", ROUTINE_REASON),
    ("routine", "b" + "9" * 40 + "-8E5C", ROUTINE_REASON),
    ("routine", "b١-8E5C", ROUTINE_REASON),  # Arabic-Indic one
    ("routine", "b0-8E5C\x00", ROUTINE_REASON),
    ("routine", "b0-0x8E", ROUTINE_REASON),
    ("routine", "b-1-8E5C", ROUTINE_REASON),
    ("routine", "b0-8E5C; DELETE FROM tm_entities_routine", ROUTINE_REASON),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("kind", "key", "reason"), HOSTILE)
def test_hostile_keys_are_refused_before_any_query(
    kind: str, key: object, reason: str, django_assert_num_queries: Any
) -> None:
    with django_assert_num_queries(0), pytest.raises(R.InvalidKey) as caught:
        if kind == "routine":
            R.get_routine("72f469219b30", key)  # type: ignore[arg-type]
        else:
            getattr(R, f"get_{kind}")(key)
    assert (caught.value.kind, caught.value.key, caught.value.reason) == (kind, key, reason)


@pytest.mark.django_db
def test_a_routine_needs_a_well_formed_game(django_assert_num_queries: Any) -> None:
    with django_assert_num_queries(0), pytest.raises(R.InvalidKey) as caught:
        R.get_routine("72f469219b30'--", "b0-8E5C")
    assert (caught.value.kind, caught.value.key, caught.value.reason) == (
        "game",
        "72f469219b30'--",
        GAME_REASON,
    )


def test_routine_keys_round_trip() -> None:
    assert R.parse_routine_key("b0-8E5C") == (0, 0x8E5C)
    assert R.parse_routine_key("b255-FFFF") == (255, 0xFFFF)
    assert R.routine_key(15, 0xC764) == "b15-C764"
    assert R.routine_key(*R.parse_routine_key("b7-0000")) == "b7-0000"


@pytest.mark.django_db
def test_relation_orders_follow_the_record_from_the_tables_and_the_record(
    shipped_json: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    """A routine's patterns in the order its ``is`` lists them; a game's in pattern order."""
    autopsy, lessons = shipped_json
    game = autopsy["games"][0]
    game["patterns"] = dict(reversed(game["patterns"].items()))
    routine = game["routine_list"][5]
    routine["is"].reverse()
    records = parse_records(json.dumps(autopsy), json.dumps(lessons))
    fill(records)
    snapshot = R.Snapshot(records)
    listed = [i["pattern"] for i in routine["is"]]
    assert listed != sorted(listed, key=list(autopsy["patterns"]).index)
    ref = R.Ref("routine", records.games[0].routines[5].key, game["key"])
    for read in (R.related(ref, "instance-of"), snapshot.related(ref, "instance-of")):
        assert read is not None and [m.key for m in read.items] == listed
    in_pattern_order = [p for p in autopsy["patterns"] if p in game["patterns"]]
    assert in_pattern_order != list(game["patterns"])
    for read in (R.related(R.Ref("game", game["key"]), "pattern"),
                 snapshot.related(R.Ref("game", game["key"]), "pattern")):  # fmt: skip
        assert read is not None and [m.key for m in read.items] == in_pattern_order
