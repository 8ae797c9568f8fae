"""A fifth kind, declared once: loaded, read through the entity mount, linked both ways.

The kind is ``mapper`` (a game's cartridge mapper, by number): its own rows in a table of its
own (a model of this test, in an isolated app registry, its tables created inside the test's
transaction), one relation to games declared on it — ``tm:demonstrated-by`` from a mapper,
``tm:demonstrates`` back on each game — and nothing else edited: the loader fills it from the
shipped records, the records API and the snapshot read it, and the entity mount serves it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, models
from django.test.utils import isolate_apps

from tests.entitymount.conftest import HOST, make_space
from tmsite.core.errors import NotFound
from tmsite.entities import kinds as K
from tmsite.entities import models as m
from tmsite.entities import records as R
from tmsite.entities.loaders import Records, fill, read_checkout

ROOT = Path(__file__).resolve().parents[2]
E = f"tm://{HOST}/entity"

with isolate_apps("tmsite.entities"):

    class Mapper(models.Model):
        key = models.CharField(max_length=4, unique=True)
        position = models.PositiveIntegerField()
        first = models.PositiveIntegerField()
        recorded = models.JSONField(default=dict)
        load_token = models.CharField(max_length=32)
        data_modified = models.DateTimeField(null=True)

        class Meta:
            app_label = "tm_entities"
            db_table = "test_fifth_kind_mapper"

    class MapperGame(models.Model):
        mapper = models.ForeignKey(Mapper, on_delete=models.CASCADE)
        game = models.ForeignKey(m.Game, on_delete=models.CASCADE, related_name="+")

        class Meta:
            app_label = "tm_entities"
            db_table = "test_fifth_kind_mapper_game"


@dataclass(frozen=True)
class MapperRecord:
    key: str
    position: int
    first: int


def _entries(records: Records) -> Iterator[K.Entry]:
    seen: dict[str, K.Entry] = {}
    for g in records.games:
        key = str(g.mapper)
        if key not in seen:
            record = MapperRecord(key, len(seen), g.position)
            seen[key] = K.Entry(key, None, record, ("games", g.position, "mapper"))
    return iter(seen.values())


def _edges(records: Records) -> Iterator[K.Edge]:
    for g in records.games:
        yield K.Edge((str(g.mapper), None), (g.key, None))


def _fields(row: Any, attached: Any = ()) -> dict[str, Any]:
    return {"key": row.key, "number": int(row.key)}


MAPPER = K.Kind(
    name="mapper",
    plural="mappers",
    model=Mapper,
    shape=K.KeyShape(re.compile(r"0|[1-9][0-9]{0,3}", re.ASCII), "must be a mapper number"),
    source="autopsy",
    where=("games", K.Slot("first"), "mapper"),
    fields=_fields,
    record_fields=_fields,
    entries=_entries,
    row=lambda r, parent, id_of: Mapper(key=r.key, position=r.position, first=r.first),
    updates=("position", "first"),
    relations=(
        K.Relation(
            "game",
            K.Through(MapperGame, "mapper", "game", "mapper_games"),
            K.Side("demonstrated-by", "tm:demonstrated-by"),
            K.Side("mapper", "tm:demonstrates"),
            _edges,
        ),
    ),
)


@pytest.fixture
def mappers(db: None) -> Iterator[Records]:
    """The fifth kind declared, its tables made, the shipped records loaded; then forgotten."""
    editor = connection.schema_editor()
    editor.deferred_sql = []  # where table_sql leaves the foreign keys on PostgreSQL
    with connection.cursor() as cursor:
        for model in (Mapper, MapperGame):
            sql, params = editor.table_sql(model)
            cursor.execute(sql, params)
        for statement in editor.deferred_sql:
            cursor.execute(str(statement))
    K.declare(MAPPER)
    try:
        records = read_checkout(ROOT)
        report = fill(records)
        assert report.written["mappers"] == 5
        assert report.written["mapper_games"] == len(records.games)
        yield records
    finally:
        K.forget("mapper")


def _links(body: Any, rel: str) -> list[str]:
    return [link.href for link in body.links if link.rel == rel]


def test_a_fifth_kind_reads_through_the_mount_with_its_links_both_ways(mappers: Records) -> None:
    ns = make_space(ROOT)
    root = ns.read(f"{E}/").body
    assert [c["name"] for c in root["children"]] == ["pattern/", "game/", "lesson/", "mapper/"]
    listed = ns.read(f"{E}/mapper/").body
    assert [c["name"] for c in listed["children"]] == ["0", "1", "2", "4", "66"]

    one = ns.read(f"{E}/mapper/1")
    with_one = [g.key for g in mappers.games if g.mapper == 1]
    assert len(with_one) == 2
    assert one.body["kind"] == "mapper"
    assert one.body["fields"] == {"key": "1", "number": 1}
    assert one.body["record"] == {
        "file": "data/autopsy.json",
        "pointer": "/games/1/mapper",
        "uri": f"tm://{HOST}/fs/data/autopsy.json?pointer=/games/1/mapper",
    }
    assert one.body["related"] == {
        "tm:demonstrated-by": {"total": 2, "set": f"{E}/mapper/1?as=set&rel=tm:demonstrated-by"}
    }
    assert sorted(_links(one, "tm:demonstrated-by")) == sorted(f"{E}/game/{k}" for k in with_one)

    # and back: each of those games demonstrates mapper 1, and only those
    for game in mappers.games:
        read = ns.read(f"{E}/game/{game.key}")
        assert _links(read, "tm:demonstrates") == [f"{E}/mapper/{game.mapper}"]
        assert read.body["related"]["tm:demonstrates"]["total"] == 1
    # the record part names the mapper it holds (the tm:data back)
    part = ns.read(f"tm://{HOST}/fs/data/autopsy.json?pointer=/games/1/mapper")
    assert part.body == 1
    assert f"{E}/mapper/1" in _links(part, "tm:read-by")


def test_a_fifth_kind_pages_its_set_and_reads_the_same_from_the_record(mappers: Records) -> None:
    ns = make_space(ROOT)
    page = ns.read(f"{E}/mapper/0?as=set&rel=demonstrated-by").body
    with_zero = [g for g in mappers.games if g.mapper == 0]
    assert page["total"] == 2
    assert [(x["key"], x["fields"]["name"]) for x in page["members"]] == [
        (g.key, g.name) for g in with_zero
    ]
    back = ns.read(f"{E}/game/{with_zero[0].key}?as=set&rel=tm:demonstrates").body
    assert [(x["kind"], x["key"], x["fields"]) for x in back["members"]] == [
        ("mapper", "0", {"key": "0", "number": 0})
    ]
    snapshot = R.Snapshot(mappers)
    for ref in [R.Ref("mapper", "66"), R.Ref("mapper", "0"), R.Ref("game", with_zero[1].key)]:
        assert R.get(ref) == snapshot.get(ref), ref


def test_a_fifth_kind_keeps_its_key_shape_and_leaves_with_its_declaration(
    mappers: Records,
) -> None:
    ns = make_space(ROOT)
    with pytest.raises(NotFound) as caught:
        ns.read(f"{E}/mapper/01")
    assert caught.value.message == "no mapper has this key: a mapper key must be a mapper number"
    assert caught.value.reason == "not-found"
    assert caught.value.helpers["expected"] == "must be a mapper number"
    K.forget("mapper")
    try:
        game = ns.read(f"{E}/game/{mappers.games[0].key}")
        assert _links(game, "tm:demonstrates") == []
        assert "tm:demonstrates" not in game.body["related"]
    finally:
        K.declare(MAPPER)
