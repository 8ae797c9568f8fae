"""The entity mount over a generated large record set: 5,000 routines, pad-poll in 2,000.

Caps, ``?as=links`` paging with ``rel``/``min`` filters, ``?as=set`` paging, and query counts
that do not grow with the record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.entitymount.conftest import HOST, ROOT, make_space
from tmsite.core.errors import BadCursor
from tmsite.core.links import LINK_CAP
from tmsite.entities.loaders import Records, fill, parse_records, read_checkout
from tmsite.mounts.namespace import Namespace

pytestmark = pytest.mark.spec("ENT", "LK4")

E = f"tm://{HOST}/entity"
PAD = f"{E}/pattern/pad-poll"


def test_a_pattern_in_2000_routines_caps_at_100_links(large_ns: Namespace, large: Records) -> None:
    content = large_ns.read(PAD)
    assert content.body["related"]["tm:instance"]["total"] == 2000
    assert len(content.links) == LINK_CAP
    last = content.links[-1]
    total = 3 + 10 + 2000 + 12 + 1  # up, collection, describedby; games; routines; lessons; data
    assert (last.rel, last.href, last.count) == ("tm:links", PAD + "?as=links", total)
    found_in = [lk for lk in content.links if lk.rel == "tm:found-in"]
    assert sum(lk.count or 0 for lk in found_in) == 2000  # routines showing it, per game
    assert all(lk.count is not None for lk in found_in)


def test_links_page_by_page_with_rel_and_min(large_ns: Namespace, large: Records) -> None:
    uri = PAD + "?as=links&rel=tm:instance"
    hrefs: list[str] = []
    pages = 0
    while True:
        body = large_ns.read(uri).body
        assert body["total"] == 2000 and body["rel"] == "tm:instance"
        assert len(body["links"]) <= 500
        hrefs += [link["href"] for link in body["links"]]
        pages += 1
        if "next" not in body:
            break
        uri = body["next"]
    assert pages == 4 and len(set(hrefs)) == 2000
    assert all(h.startswith(f"{E}/game/") and "/routine/b" in h for h in hrefs)
    strong = large_ns.read(PAD + "?as=links&rel=tm:demonstrated-by&min=5").body
    assert sorted(link["count"] for link in strong["links"]) == list(range(5, 13))
    assert strong["total"] == 8 and strong["min"] == 5


def test_set_reads_every_member_whole_page_by_page(large_ns: Namespace, large: Records) -> None:
    uri = PAD + "?as=set&rel=tm:instance"
    seen: list[str] = []
    while True:
        content = large_ns.read(uri)
        assert content.mime_type == "application/vnd.tm.set+json"
        body = content.body
        assert body["total"] == 2000 and len(body["members"]) <= 500
        for member in body["members"]:
            assert member["kind"] == "routine"
            assert "pad-poll" in [i["pattern"] for i in member["fields"]["is"]]
            assert member["evidence"]["by"] == "rule:strobe-4016"
        seen += [member["uri"] for member in body["members"]]
        if "next" not in body:
            break
        uri = body["next"]
    assert len(seen) == len(set(seen)) == 2000
    first = large_ns.read(PAD + "?as=set&rel=tm:instance").body["nextCursor"]
    with pytest.raises(BadCursor):
        large_ns.read(PAD + f"?as=set&rel=tm:found-in&cursor={first}")
    games = large_ns.read(PAD + "?as=set&rel=found-in").body
    assert games["rel"] == "tm:found-in" and games["total"] == 10
    assert all(m["fields"]["name"].startswith("Large Game") for m in games["members"])
    first_game = large.games[0].key
    routines = large_ns.read(f"{E}/game/{first_game}?as=set&rel=routine").body
    assert routines["total"] == 500 and "next" not in routines


def _count(ns: Namespace, uri: str) -> int:
    ns.read(uri)  # warm: the trail index is built once
    with CaptureQueriesContext(connection) as ctx:
        ns.read(uri)
    return len(ctx.captured_queries)


@pytest.mark.django_db
def test_queries_do_not_grow_with_the_record(
    tmp_path: Path, large_json: tuple[Any, Any], settings: Any
) -> None:
    shipped = read_checkout(ROOT)
    small_ns = make_space(tmp_path)
    fill(shipped)
    small_game = shipped.games[0]
    small = {
        "pattern": _count(small_ns, PAD),
        "set": _count(small_ns, PAD + "?as=set&rel=tm:instance"),
        "links": _count(small_ns, PAD + "?as=links&rel=tm:instance"),
        "game": _count(small_ns, f"{E}/game/{small_game.key}"),
        "routine": _count(
            small_ns, f"{E}/game/{small_game.key}/routine/{small_game.routines[0].key}"
        ),
        "listing": _count(small_ns, f"{E}/game/{small_game.key}/routine/"),
        "game-set": _count(small_ns, f"{E}/game/{small_game.key}?as=set&rel=routine"),
    }
    autopsy, lessons = large_json
    from tests.entities.conftest import dump

    big_records = parse_records(dump(autopsy), dump(lessons))
    fill(big_records)
    big_game = big_records.games[0]
    big = {
        "pattern": _count(small_ns, PAD),
        "set": _count(small_ns, PAD + "?as=set&rel=tm:instance"),
        "links": _count(small_ns, PAD + "?as=links&rel=tm:instance"),
        "game": _count(small_ns, f"{E}/game/{big_game.key}"),
        "routine": _count(small_ns, f"{E}/game/{big_game.key}/routine/{big_game.routines[0].key}"),
        "listing": _count(small_ns, f"{E}/game/{big_game.key}/routine/"),
        "game-set": _count(small_ns, f"{E}/game/{big_game.key}?as=set&rel=routine"),
    }
    assert big == small
    assert max(big.values()) <= 20
