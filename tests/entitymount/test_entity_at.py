"""``?at=``: an entity as its record stood, read from a real repository with three revisions.

v1 (day 0): six games (no Bramble Rally), no lesson "split", pad-poll described one way;
v2 (day 10): every game and lesson, pad-poll described another way; main (day 20): as shipped.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from dulwich.repo import Repo

from tests.entitymount.conftest import HOST, ROOT, make_space
from tests.gitstore.builder import Builder
from tmsite.core.errors import BadFacet, NoSuchRef, NotFound
from tmsite.core.uri import parse
from tmsite.entities.loaders import Records, fill, parse_records
from tmsite.mounts.namespace import Namespace

pytestmark = pytest.mark.spec("ENT", "NS3")

E = f"tm://{HOST}/entity"
DAY = 86_400
LATE = "1b2acb822c2e"  # Bramble Rally: boarded in v2


@pytest.fixture
def history(tmp_path: Path, db: None) -> dict[str, Any]:
    autopsy = json.loads((ROOT / "data/autopsy.json").read_text())
    lessons = json.loads((ROOT / "data/lessons.json").read_text())
    v1a, v1l = copy.deepcopy(autopsy), copy.deepcopy(lessons)
    v1a["games"] = [g for g in v1a["games"] if g["key"] != LATE]
    v1a["totals"] = {"games": len(v1a["games"])}
    v1a["patterns"]["pad-poll"] = "Reads the pad (first wording)."
    v1l["lessons"] = [x for x in v1l["lessons"] if x["game"] != LATE]
    v2a = copy.deepcopy(autopsy)
    v2a["patterns"]["pad-poll"] = "Reads the pad (second wording)."
    checkout = tmp_path / "checkout"
    builder = Builder.init(str(checkout))

    def files(a: Any, x: Any) -> dict[str, bytes | tuple[str, str] | None]:
        return {
            "data/autopsy.json": json.dumps(a).encode(),
            "data/lessons.json": json.dumps(x).encode(),
        }

    c1 = builder.commit("v1", files(v1a, v1l), when=0)
    c2 = builder.commit("v2", files(v2a, lessons), [c1], when=10 * DAY)
    c3 = builder.commit("v3", files(autopsy, lessons), [c2], when=20 * DAY)
    builder.set_ref("refs/tags/v1", c1)
    builder.set_ref("refs/tags/v2", c2)
    builder.set_ref("refs/heads/master", c3)
    records: Records = parse_records(*files(autopsy, lessons).values())  # type: ignore[arg-type]
    fill(records)
    return {
        "ns": make_space(checkout),
        "c1": c1.decode(),
        "c2": c2.decode(),
        "c3": c3.decode(),
        "checkout": checkout,
    }


def test_a_pattern_as_its_record_stood(history: dict[str, Any]) -> None:
    ns: Namespace = history["ns"]
    now = ns.read(f"{E}/pattern/pad-poll").body
    assert now["fields"]["description"].startswith("Strobes $4016")
    v1 = ns.read(f"{E}/pattern/pad-poll?at=v1")
    assert v1.uri == f"{E}/pattern/pad-poll?at=v1"
    assert v1.body["fields"]["description"] == "Reads the pad (first wording)."
    assert v1.body["at"] == {"ref": "v1", "commit": history["c1"]}
    assert v1.body["related"]["tm:found-in"]["total"] == 6
    v2 = ns.read(f"{E}/pattern/pad-poll?at={history['c2'][:10]}").body
    assert v2["fields"]["description"] == "Reads the pad (second wording)."
    by_date = ns.read(f"{E}/pattern/pad-poll?at=2023-11-29").body  # between v2 and main
    assert by_date["at"]["commit"] == history["c2"]
    head = ns.read(f"{E}/pattern/pad-poll?at=master").body
    assert head["fields"]["description"] == now["fields"]["description"]


def test_every_address_the_read_emits_keeps_at(history: dict[str, Any]) -> None:
    ns: Namespace = history["ns"]
    for uri in (
        f"{E}/pattern/pad-poll?at=v1",
        f"{E}/game/72f469219b30?at=v1",
        f"{E}/lesson/jump?at=v1",
        f"{E}/game/72f469219b30/routine/?at=v1",
        f"{E}/pattern/?at=v1",
    ):
        content = ns.read(uri)
        for link in content.links:
            if link.rel == "tm:links":
                continue
            assert parse(link.href).param("at") == "v1", (uri, link)
        assert all(
            parse(child["uri"]).param("at") == "v1" for child in content.body.get("children", [])
        )
    rels = {lk.rel for lk in ns.read(f"{E}/game/72f469219b30?at=v1").links}
    assert "tm:renders-as" not in rels  # the site shows the game now, not then
    data = [lk.href for lk in ns.read(f"{E}/game/72f469219b30?at=v1").links if lk.rel == "tm:data"]
    assert data == [f"tm://{HOST}/fs/data/autopsy.json?at=v1&pointer=/games/0"]
    back = ns.mounts["entity"].links_into(parse(data[0]))
    assert [(lk.rel, lk.href, lk.confidence) for lk in back] == [
        ("tm:read-by", f"{E}/game/72f469219b30?at=v1", "exact")
    ]
    lesson = {lk.rel: lk.href for lk in ns.read(f"{E}/lesson/jump?at=v1").links}
    assert lesson["tm:cartridge"] == f"tm://{HOST}/git/tmsite/lessons/jump/?at=v1"


def test_listings_and_sets_as_they_stood(history: dict[str, Any]) -> None:
    ns: Namespace = history["ns"]
    games = ns.read(f"{E}/game/?at=v1").body["children"]
    assert len(games) == 6 and LATE not in [g["name"] for g in games]
    assert len(ns.read(f"{E}/game/").body["children"]) == 7
    found = ns.read(f"{E}/pattern/pad-poll?as=set&rel=tm:found-in&at=v1").body
    assert found["total"] == 6 and all("?at=v1" in m["uri"] for m in found["members"])
    assert all(m["fields"]["name"] for m in found["members"])


def test_a_thing_that_did_not_exist_then_says_since_when(history: dict[str, Any]) -> None:
    ns: Namespace = history["ns"]
    uri = f"{E}/game/{LATE}?at=v1"
    with pytest.raises(NotFound) as refused:
        ns.read(uri)
    data = refused.value.data
    assert data["reason"] == "not-found" and data["uri"] == uri
    assert data["since"]["commit"] == history["c2"]
    assert data["since"]["date"].startswith("2023-11-24")
    assert data["nearest"] == [f"{E}/game/{LATE}?at={history['c2']}", f"{E}/game/{LATE}"]
    with pytest.raises(NotFound) as refused:
        ns.read(f"{E}/lesson/split?at=v1")
    assert refused.value.data["since"]["commit"] == history["c2"]
    with pytest.raises(NotFound) as refused:
        ns.read(f"{E}/game/{LATE}/routine/?at=v1")
    assert refused.value.data["reason"] == "not-found"


@pytest.mark.parametrize(
    ("at", "reason"),
    [
        ("..", "bad-facet"),
        ("-x", "bad-facet"),
        ("main@{1}", "bad-facet"),
        ("v1~1", "bad-facet"),
        ("2023-13-45", "bad-facet"),
        ("v3", "no-such-ref"),
        ("1999-01-01", "no-such-ref"),
        ("deadbeef", "no-such-ref"),
    ],
)
def test_bad_refs_are_the_git_refusals(history: dict[str, Any], at: str, reason: str) -> None:
    ns: Namespace = history["ns"]
    uri = str(parse(f"{E}/pattern/pad-poll").with_params(at=at))
    expected = {"bad-facet": BadFacet, "no-such-ref": NoSuchRef}[reason]
    with pytest.raises(expected) as refused:
        ns.read(uri)
    data = refused.value.data
    assert data["reason"] == reason and data["uri"] == uri
    if reason == "bad-facet":
        assert data["valid"] == [
            "a branch or tag name",
            "a commit id (4 to 40 hex digits)",
            "YYYY-MM-DD",
            "YYYY-MM-DDTHH:MM[:SS][Z|+HH:MM]",
        ]
    if at == "v3":
        assert f"{E}/pattern/pad-poll?at=v1" in data["nearest"]
        assert f"{E}/pattern/pad-poll?at=v2" in data["nearest"]


def test_a_date_before_the_history_says_where_it_starts(history: dict[str, Any]) -> None:
    ns: Namespace = history["ns"]
    first = Repo(str(history["checkout"]))[history["c1"].encode()]
    starts = datetime.fromtimestamp(first.commit_time, UTC).isoformat()
    uri = f"{E}/pattern/pad-poll?at=1999-01-01"
    with pytest.raises(NoSuchRef) as refused:
        ns.read(uri)
    assert refused.value.data["starts"] == starts
    assert refused.value.message.endswith(f"its history starts at {starts}")
    with pytest.raises(NoSuchRef) as refused:
        ns.read(f"{E}/pattern/pad-poll?at=v3")
    assert "starts" not in refused.value.data
