"""The entity mount over the shipped records: reads, listings, links both ways, refusals."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.entitymount.conftest import HOST, SITE
from tmsite.core.errors import BadCursor, BadFacet, NotFound
from tmsite.core.links import INVERSE
from tmsite.core.uri import parse
from tmsite.entities.loaders import Records
from tmsite.mounts.namespace import Namespace

pytestmark = pytest.mark.spec("ENT", "LK2", "LK5", "NS8")

E = f"tm://{HOST}/entity"


def _resolve(document: Any, pointer: str) -> Any:
    for token in pointer.split("/")[1:]:
        document = document[int(token)] if isinstance(document, list) else document[token]
    return document


def _links(ns: Namespace, uri: str) -> list[dict[str, Any]]:
    """Every link of ``uri``, through ?as=links, page by page."""
    out: list[dict[str, Any]] = []
    page = f"{uri}{'&' if '?' in uri else '?'}as=links"
    while True:
        body = ns.read(page).body
        out.extend(body["links"])
        if "next" not in body:
            return out
        page = body["next"]


def test_root_lists_the_kinds_and_each_kind_its_keys(ns: Namespace, shipped: Records) -> None:
    root = ns.read(f"{E}/")
    assert [c["name"] for c in root.body["children"]] == ["pattern/", "game/", "lesson/"]
    patterns = ns.read(f"{E}/pattern/").body
    assert [c["name"] for c in patterns["children"]] == [p.key for p in shipped.patterns]
    assert all(c["mimeType"] == "application/vnd.tm.pattern+json" for c in patterns["children"])
    games = ns.read(f"{E}/game/").body
    assert [c["name"] for c in games["children"]] == [g.key for g in shipped.games]
    lessons = ns.read(f"{E}/lesson/").body
    assert [c["name"] for c in lessons["children"]] == [x.key for x in shipped.lessons]
    game = shipped.games[0]
    inside = ns.read(f"{E}/game/{game.key}/").body
    assert [c["name"] for c in inside["children"]] == ["routine/"]
    routines = ns.read(f"{E}/game/{game.key}/routine/").body
    assert [c["name"] for c in routines["children"]] == [r.key for r in game.routines]


def test_keys_page_with_signed_cursors(ns: Namespace, shipped: Records) -> None:
    ns.mounts["entity"].page_size = 4
    seen: list[str] = []
    uri = f"{E}/pattern/"
    while True:
        body = ns.read(uri).body
        seen += [c["name"] for c in body["children"]]
        if "next" not in body:
            break
        uri = body["next"]
    assert seen == [p.key for p in shipped.patterns]
    first = ns.read(f"{E}/pattern/").body["nextCursor"]
    with pytest.raises(BadCursor):
        ns.read(f"{E}/lesson/?cursor={first}")


def test_things_read_as_their_records_say(
    ns: Namespace, shipped: Records, shipped_json: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    autopsy, lessons = shipped_json
    files = {"data/autopsy.json": autopsy, "data/lessons.json": lessons}
    game = shipped.games[4]
    routine = game.routines[3]
    cases = {
        f"{E}/pattern/pad-poll": ("pattern", "/patterns/pad-poll"),
        f"{E}/game/{game.key}": ("game", "/games/4"),
        f"{E}/game/{game.key}/routine/{routine.key}": ("routine", "/games/4/routine_list/3"),
        f"{E}/lesson/{shipped.lessons[1].key}": ("lesson", "/lessons/1"),
    }
    for uri, (kind, pointer) in cases.items():
        content = ns.read(uri)
        assert content.mime_type == f"application/vnd.tm.{kind}+json"
        body = content.body
        assert body["uri"] == uri and body["kind"] == kind
        assert body["record"]["pointer"] == pointer
        expected = _resolve(files[body["record"]["file"]], pointer)
        if kind == "pattern":
            assert body["fields"] == {"key": "pad-poll", "description": expected}
        elif kind == "game":
            assert body["fields"] == {k: v for k, v in expected.items() if k != "routine_list"}
        else:
            assert body["fields"] == expected
        data = [lk for lk in content.links if lk.rel == "tm:data"]
        assert [(d.href, d.confidence) for d in data] == [
            (f"tm://{HOST}/fs/{body['record']['file']}?pointer={pointer}", "exact")
        ]
    assert "rom" not in json.dumps(ns.read(f"{E}/lesson/jump").body["fields"])


def test_stat_says_what_a_thing_is(ns: Namespace, shipped: Records) -> None:
    stat = ns.read(f"{E}/pattern/pad-poll?as=stat")
    assert stat.mime_type == "application/vnd.tm.stat+json"
    assert stat.body["mimeType"] == "application/vnd.tm.pattern+json"
    assert stat.body["counts"] == {"found-in": 7, "instance": 28, "demonstrated-by": 1}
    assert stat.body["record"] == {"file": "data/autopsy.json", "pointer": "/patterns/pad-poll"}
    assert {(lk.rel, lk.href) for lk in stat.links} >= {("alternate", f"{E}/pattern/pad-poll")}


def test_pattern_links_carry_counts_from_the_record(ns: Namespace, shipped: Records) -> None:
    links = ns.read(f"{E}/pattern/pad-poll").links
    found = {lk.href: lk.count for lk in links if lk.rel == "tm:found-in"}
    assert found == {f"{E}/game/{g.key}": g.patterns["pad-poll"] for g in shipped.games}
    instances = [lk for lk in links if lk.rel == "tm:instance"]
    assert len(instances) == 28 and all(lk.confidence == "exact" for lk in instances)
    demo = [(lk.href, lk.count) for lk in links if lk.rel == "tm:demonstrated-by"]
    assert demo == [(f"{E}/lesson/pad", 4)]


def test_game_and_lesson_link_their_page_and_source(ns: Namespace, shipped: Records) -> None:
    game = shipped.games[0]
    links = {(lk.rel, lk.href): lk for lk in ns.read(f"{E}/game/{game.key}").links}
    page = f"tm://{HOST}/http/{SITE}/autopsy/games/{game.key}"
    assert links[("tm:renders-as", page)].confidence == "exact"
    assert ("item", f"{E}/game/{game.key}/routine/") in links
    back = ns.mounts["entity"].links_into(parse(page))
    assert [(lk.rel, lk.href, lk.confidence) for lk in back] == [
        ("tm:source", f"{E}/game/{game.key}", "exact")
    ]
    assert ns.mounts["entity"].links_into(parse(f"tm://{HOST}/http/{SITE}/autopsy/games/x")) == []
    lesson = {lk.rel: lk for lk in ns.read(f"{E}/lesson/jump").links}
    assert lesson["tm:cartridge"].href == f"tm://{HOST}/git/tmsite/lessons/jump/"
    assert lesson["tm:measures"].href == f"{E}/game/0de79768579a"


def test_every_link_has_its_inverse_at_the_same_confidence(ns: Namespace, shipped: Records) -> None:
    """The link walk over every entity: each paired link is answered from its target."""
    uris = [f"{E}/pattern/{p.key}" for p in shipped.patterns]
    uris += [f"{E}/game/{g.key}" for g in shipped.games]
    uris += [f"{E}/game/{g.key}/routine/{r.key}" for g in shipped.games for r in g.routines]
    uris += [f"{E}/lesson/{x.key}" for x in shipped.lessons]
    edges: set[tuple[str, str, str, str | None]] = set()
    read = set(uris)
    targets: set[str] = set()
    for uri in uris:
        for link in _links(ns, uri):
            edges.add((uri, link["rel"], link["href"], link.get("confidence")))
            if link["rel"] in INVERSE and link["rel"] != "tm:renders-as":
                targets.add(link["href"])
    for target in sorted(targets - set(uris)):  # the record parts: read them through fs
        # (read plainly: the namespace cuts ?pointer= out of an ?as=links body too)
        read.add(target)
        for lk in ns.read(target).links:
            edges.add((target, lk.rel, lk.href, lk.confidence))
            if lk.rel == "tm:step-of":  # a trail it is on: read the trail too
                read.add(lk.href)
                for step in ns.read(lk.href).links:
                    edges.add((lk.href, step.rel, step.href, step.confidence))
    checked = 0
    for source, rel, href, confidence in edges:
        if rel not in INVERSE or href not in read:  # pages and git: their mounts answer
            continue
        assert (href, INVERSE[rel], source, confidence) in edges, (source, rel, href)
        checked += 1
    assert checked > 1800


def test_record_parts_link_back_only_where_they_hold_a_thing(ns: Namespace) -> None:
    def read_by(uri: str) -> list[str]:
        return [lk.href for lk in ns.read(uri).links if lk.rel == "tm:read-by"]

    base = f"tm://{HOST}/fs/data/autopsy.json"
    assert read_by(base + "?pointer=/games/0/routine_list/2") == [
        ns.read(f"{E}/game/72f469219b30/routine/").body["children"][2]["uri"]
    ]
    assert read_by(f"tm://{HOST}/fs/data/lessons.json?pointer=/lessons/0") == [f"{E}/lesson/jump"]
    assert read_by(base + "?pointer=/games/0/name") == []
    assert read_by(base + "?pointer=/patterns") == []
    assert read_by(f"tm://{HOST}/fs/data/autopsy.json?range=0-10") == []


@pytest.mark.parametrize(
    ("path", "expected", "nearest"),
    [
        (
            "pattern/pad-poll'%20OR%201=1--",
            "must match ^[a-z0-9][a-z0-9-]{0,63}$",
            "pattern/pad-poll",
        ),
        ("pattern/pad-poll%00", "must match ^[a-z0-9][a-z0-9-]{0,63}$", "pattern/pad-poll"),
        ("pattern/PAD-POLL", "must match ^[a-z0-9][a-z0-9-]{0,63}$", "pattern/pad-poll"),
        ("game/72f469219b3%D9%A0", "must be 12 lowercase hex digits", "game/72f469219b30"),
        ("game/72F469219B30", "must be 12 lowercase hex digits", "game/72f469219b30"),
        ("lesson/" + "j" * 65, "longer than 64 characters", None),
        (
            "game/72f469219b30/routine/b1_000-816C",
            "must be b<bank>-<ADDR>: bank 0..255, 4 uppercase hex digits",
            "game/72f469219b30/routine/b0-816C",
        ),
        (
            "game/72f469219b30/routine/b99999999999999999999-816C",
            "must be b<bank>-<ADDR>: bank 0..255, 4 uppercase hex digits",
            None,
        ),
        (
            "game/72f469219b30/routine/b256-816C",
            "must be b<bank>-<ADDR>: bank 0..255, 4 uppercase hex digits",
            None,
        ),
        (
            "game/72f469219b30/routine/b0-816c",
            "must be b<bank>-<ADDR>: bank 0..255, 4 uppercase hex digits",
            "game/72f469219b30/routine/b0-816C",
        ),
    ],
)
def test_hostile_keys_are_not_found_with_the_shape_and_nearest_keys(
    ns: Namespace,
    shipped: Records,
    django_assert_max_num_queries: Any,
    path: str,
    expected: str,
    nearest: str | None,
) -> None:
    uri = f"{E}/{path}"
    with django_assert_max_num_queries(3), pytest.raises(NotFound) as refused:
        ns.read(uri)
    data = refused.value.data
    assert data["reason"] == "not-found"
    assert data["uri"] == str(parse(uri))
    assert data["expected"] == expected
    assert 1 <= len(data["nearest"]) <= 5 and str(parse(uri)) not in data["nearest"]
    if nearest is not None:
        assert data["nearest"][0] == f"{E}/{nearest}"


def test_well_shaped_keys_that_name_nothing(ns: Namespace, shipped: Records) -> None:
    with pytest.raises(NotFound) as refused:
        ns.read(f"{E}/game/000000000000")
    assert refused.value.data["reason"] == "not-found"
    assert "expected" not in refused.value.data
    assert len(refused.value.data["nearest"]) == 5
    with pytest.raises(NotFound) as refused:
        ns.read(f"{E}/game/000000000000/routine/b0-8000")
    assert refused.value.data["nearest"][0].startswith(f"{E}/game/")
    with pytest.raises(NotFound) as refused:
        ns.read(f"{E}/patern/pad-poll")
    assert refused.value.data["nearest"][0] == f"{E}/pattern/"
    with pytest.raises(NotFound) as refused:
        ns.read(f"{E}/pattern/pad-poll/")
    assert refused.value.data["nearest"] == [f"{E}/pattern/pad-poll"]


def test_facets_a_thing_cannot_honour(ns: Namespace, shipped: Records) -> None:
    cases = {
        "?as=log": ["links", "set", "stat"],
        "?as=set": ["tm:demonstrated-by", "tm:found-in", "tm:instance"],
        "?as=set&rel=tm:measures": ["tm:demonstrated-by", "tm:found-in", "tm:instance"],
        "?rel=tm:instance": ["as", "at", "pointer"],
        "?as=stat&pointer=/key": ["as", "at"],
    }
    for query, valid in cases.items():
        with pytest.raises(BadFacet) as refused:
            ns.read(f"{E}/pattern/pad-poll{query}")
        assert refused.value.data["reason"] == "bad-facet"
        assert sorted(refused.value.data["valid"]) == valid, query


def test_completion_fills_keys_routines_and_names(ns: Namespace, shipped: Records) -> None:
    entity = f"tm://{HOST}/entity/{{kind}}/{{key}}"
    assert ns.complete(entity, "kind", "", {}) == ["pattern", "game", "lesson"]
    assert ns.complete(entity, "key", "sp", {"kind": "pattern"}) == [
        "sprite-0-split",
        "sprite-writer",
    ]
    assert ns.complete(entity, "key", "1", {"kind": "game"}) == [
        "1766c27b7946",
        "19c75aa2dbec",
        "1b2acb822c2e",
    ]
    assert ns.complete(entity, "key", "d", {"kind": "lesson"}) == ["dice"]
    assert ns.complete(entity, "key", "'; drop", {"kind": "lesson"}) == []
    assert ns.complete(entity, "rel", "tm:f", {"kind": "pattern"}) == ["tm:found-in"]
    routine = f"tm://{HOST}/entity/game/{{game}}/routine/{{routine}}"
    game = shipped.games[0]
    assert ns.complete(routine, "routine", "b1-", {"game": game.key}) == [
        r.key for r in game.routines if r.key.startswith("b1-")
    ]
    assert ns.complete(routine, "routine", "", {"game": "nonsense"}) == []
    assert ns.complete(f"tm://{HOST}/offbox/{{name}}", "name", "c", {}) == ["cartridges"]


def test_reads_cost_a_constant_number_of_queries(
    ns: Namespace, shipped: Records, django_assert_max_num_queries: Any
) -> None:
    game = shipped.games[0]
    for uri in (
        f"{E}/pattern/pad-poll",
        f"{E}/game/{game.key}",
        f"{E}/game/{game.key}/routine/{game.routines[0].key}",
        f"{E}/lesson/jump",
        f"{E}/pattern/pad-poll?as=stat",
        f"{E}/pattern/",
        f"{E}/game/{game.key}/routine/",
        f"{E}/pattern/pad-poll?as=set&rel=tm:instance",
    ):
        with django_assert_max_num_queries(20):
            ns.read(uri)
