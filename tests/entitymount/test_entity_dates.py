"""When an entity last changed, as its listing entry and its stat say it (``lastModified``).

Records are loaded from record files in a temporary checkout whose modification times are set
with ``os.utime``; a correction is made through the admin's save path or as a row; a read at a
revision is dated by the commits of a real repository. The answers over loopback HTTP are
validated against the protocol's models of both revisions.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.test import Client
from mcp_types import _v2025_11_25 as v2025
from mcp_types import _v2026_07_28 as v2026
from mcp_types.methods import validate_server_result

from tests.admin_forms import change_form
from tests.entities.conftest import dump, make_large
from tests.entitymount.conftest import HOST, ROOT, make_space
from tests.gitstore.builder import Builder
from tests.transport.transport_helpers import STATELESS, modern_headers, modern_request, post
from tmsite.entities import models as m
from tmsite.entities.loaders import fill, parse_records, read_checkout
from tmsite.mounts.namespace import Namespace

pytestmark = pytest.mark.spec("ENT", "NS7")

E = f"tm://{HOST}/entity"
AUTOPSY_TIME = datetime(2026, 2, 3, 4, 5, 6, tzinfo=UTC)
LESSONS_TIME = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)  # later: patterns and games show it
GAME = "72f469219b30"


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def checkout_with(tmp_path: Path, autopsy: bytes, lessons: bytes) -> Path:
    """A checkout holding the two record files, dated :data:`AUTOPSY_TIME`, :data:`LESSONS_TIME`."""
    checkout = tmp_path / "checkout"
    (checkout / "data").mkdir(parents=True, exist_ok=True)
    for name, content, when in (
        ("autopsy.json", autopsy, AUTOPSY_TIME),
        ("lessons.json", lessons, LESSONS_TIME),
    ):
        path = checkout / "data" / name
        path.write_bytes(content)
        os.utime(path, (when.timestamp(), when.timestamp()))
    return checkout


@pytest.fixture
def dated(tmp_path: Path, db: None) -> Path:
    """The shipped records, copied into a checkout with known times and loaded from it."""
    checkout = checkout_with(
        tmp_path,
        (ROOT / "data/autopsy.json").read_bytes(),
        (ROOT / "data/lessons.json").read_bytes(),
    )
    fill(read_checkout(checkout))
    return checkout


def dates(ns: Namespace, uri: str) -> dict[str, str | None]:
    body: Any = ns.read(uri).body
    return {c["name"]: c.get("annotations", {}).get("lastModified") for c in body["children"]}


def test_each_record_is_dated_by_the_files_its_read_is_made_from(dated: Path) -> None:
    ns = make_space(dated)
    # a pattern's and a game's reads are made from both files (lessons state which lesson
    # demonstrates a pattern and which measures a game); a routine's from autopsy alone, a
    # lesson's from lessons alone
    assert set(dates(ns, f"{E}/pattern/").values()) == {stamp(LESSONS_TIME)}
    assert set(dates(ns, f"{E}/game/").values()) == {stamp(LESSONS_TIME)}
    assert set(dates(ns, f"{E}/lesson/").values()) == {stamp(LESSONS_TIME)}
    routines = dates(ns, f"{E}/game/{GAME}/routine/")
    assert routines and set(routines.values()) == {stamp(AUTOPSY_TIME)}

    stat: Any = ns.read(f"{E}/game/{GAME}/routine/{next(iter(routines))}?as=stat").body
    assert datetime.fromisoformat(stat["modified"]) == AUTOPSY_TIME
    stat = ns.read(f"{E}/pattern/pad-poll?as=stat").body
    assert datetime.fromisoformat(stat["modified"]) == LESSONS_TIME

    # touched after the load, not reloaded: what is served is still dated as loaded
    later = datetime(2026, 6, 1, tzinfo=UTC).timestamp()
    for name in ("autopsy.json", "lessons.json"):
        os.utime(dated / "data" / name, (later, later))
    assert set(dates(ns, f"{E}/pattern/").values()) == {stamp(LESSONS_TIME)}
    assert set(dates(ns, f"{E}/game/{GAME}/routine/").values()) == {stamp(AUTOPSY_TIME)}
    # reloaded: the files' times now
    fill(read_checkout(dated))
    assert set(dates(ns, f"{E}/game/{GAME}/routine/").values()) == {"2026-06-01T00:00:00Z"}


@pytest.mark.urls("tests.entities.entities_admin_urls")
def test_a_correction_in_the_admin_moves_the_date_to_when_it_was_made(
    dated: Path, admin_client: Client
) -> None:
    ns = make_space(dated)
    pattern = m.Pattern.objects.get(key="pad-poll")
    url = f"/admin/tm_entities/pattern/{pattern.pk}/change/"
    form = change_form(admin_client, url)
    form["description"] = "Strobes $4016, then reads eight bits."
    answer = admin_client.post(url, form)
    assert answer.status_code == 302, answer.content.decode()[:2000]
    correction = m.Correction.objects.get()
    assert correction.corrected_at > LESSONS_TIME
    listed = dates(ns, f"{E}/pattern/")
    assert listed["pad-poll"] == stamp(correction.corrected_at)
    assert {d for k, d in listed.items() if k != "pad-poll"} == {stamp(LESSONS_TIME)}
    stat: Any = ns.read(f"{E}/pattern/pad-poll?as=stat").body
    assert datetime.fromisoformat(stat["modified"]) == correction.corrected_at
    assert stat["corrections"] == 1
    # a reload keeps the correction, and the later of the two dates
    fill(read_checkout(dated))
    assert dates(ns, f"{E}/pattern/")["pad-poll"] == stamp(correction.corrected_at)


def correct(entity: str, key: str, field: str, value: Any, at: datetime) -> m.Correction:
    return m.Correction.objects.create(
        entity=entity,
        key=key,
        field=field,
        value=value,
        record_value=None,
        corrected_by_name="maintainer",
        corrected_at=at,
    )


def test_the_latest_correction_of_a_routine_dates_it_and_an_older_one_does_not(
    dated: Path,
) -> None:
    ns = make_space(dated)
    first, second, third = list(dates(ns, f"{E}/game/{GAME}/routine/"))[:3]
    newer = AUTOPSY_TIME + timedelta(days=3, seconds=7)
    correct("routine", f"{GAME}/{first}", "name", "renamed_once", AUTOPSY_TIME + timedelta(days=1))
    correct("routine", f"{GAME}/{first}", "kind", "call", newer)  # another field, later
    correct("routine", f"{GAME}/{second}", "name", "old_name", AUTOPSY_TIME - timedelta(days=9))
    game_fixed = LESSONS_TIME + timedelta(hours=1)  # a game's data is dated by lessons too
    correct("game", GAME, "name", "Not a routine", game_fixed)
    routines = dates(ns, f"{E}/game/{GAME}/routine/")
    assert routines[first] == stamp(newer), "the latest of the routine's corrections"
    assert routines[second] == stamp(AUTOPSY_TIME), "a correction older than the load"
    assert routines[third] == stamp(AUTOPSY_TIME)
    stat: Any = ns.read(f"{E}/game/{GAME}/routine/{first}?as=stat").body
    assert datetime.fromisoformat(stat["modified"]) == newer
    # the game's correction dates the game alone, not the routines under it
    assert dates(ns, f"{E}/game/")[GAME] == stamp(game_fixed)


def test_records_loaded_without_file_times_are_not_dated(db: None) -> None:
    records = parse_records(
        (ROOT / "data/autopsy.json").read_bytes(), (ROOT / "data/lessons.json").read_bytes()
    )
    fill(records)
    correct("pattern", "pad-poll", "description", "Corrected.", AUTOPSY_TIME)
    ns = make_space(ROOT)
    assert set(dates(ns, f"{E}/pattern/").values()) == {None}
    stat: Any = ns.read(f"{E}/pattern/pad-poll?as=stat").body
    assert "modified" not in stat and stat["corrections"] == 1


def test_a_listing_page_costs_the_same_queries_whatever_its_size(
    tmp_path: Path, db: None, django_assert_num_queries: Callable[..., Any]
) -> None:
    for per_game in (3, 500):
        autopsy, lessons = make_large(games=2, per_game=per_game, hot_count=per_game)
        checkout = checkout_with(tmp_path / str(per_game), dump(autopsy), dump(lessons))
        m.Correction.objects.all().delete()
        fill(read_checkout(checkout))
        game = autopsy["games"][0]
        keys = [f"b{int(r['bank'][3:])}-{r['addr']:04X}" for r in game["routine_list"]]
        for index, key in enumerate(keys[::2]):
            when = AUTOPSY_TIME + timedelta(days=1 + index)
            correct("routine", f"{game['key']}/{key}", "name", f"fixed_{index}", when)
        ns = make_space(checkout)
        uri = f"{E}/game/{game['key']}/routine/"
        ns.read(uri)  # warm: the trail index is built once
        # the game, the size, the page with its rows' dates, the page's latest corrections,
        # and the trails' version (whether a trail correction was saved since)
        with django_assert_num_queries(5):
            body: Any = ns.read(uri).body
        assert len(body["children"]) == per_game
        listed = {c["name"]: c["annotations"]["lastModified"] for c in body["children"]}
        assert listed[keys[1]] == stamp(AUTOPSY_TIME), "not corrected"
        assert listed[keys[2]] == stamp(AUTOPSY_TIME + timedelta(days=2))


@pytest.fixture
def revisions(tmp_path: Path, db: None) -> dict[str, Any]:
    """A repository in which autopsy changes at v2 and lessons do not; the tables from main."""
    autopsy = json.loads((ROOT / "data/autopsy.json").read_text())
    lessons = (ROOT / "data/lessons.json").read_bytes()
    changed = json.loads(json.dumps(autopsy))
    changed["patterns"]["pad-poll"] = "Reads the pad (a later wording)."
    checkout = tmp_path / "repo"
    builder = Builder.init(str(checkout))
    day = 86_400
    c1 = builder.commit(
        "v1", {"data/autopsy.json": dump(autopsy), "data/lessons.json": lessons}, when=0
    )
    c2 = builder.commit("v2", {"data/autopsy.json": dump(changed)}, [c1], when=10 * day)
    c3 = builder.commit("v3", {"README.md": b"unrelated\n"}, [c2], when=20 * day)
    builder.set_ref("refs/tags/v1", c1)
    builder.set_ref("refs/tags/v2", c2)
    builder.set_ref("refs/heads/master", c3)
    shutil.copytree(ROOT / "data", tmp_path / "loaded" / "data")
    fill(read_checkout(tmp_path / "loaded"))
    base = datetime.fromtimestamp(builder.base_time, UTC)
    return {"ns": make_space(checkout), "v1": base, "v2": base + timedelta(days=10)}


def test_a_read_at_a_revision_is_dated_by_the_commits_that_changed_its_files(
    revisions: dict[str, Any],
) -> None:
    ns: Namespace = revisions["ns"]
    v1, v2 = revisions["v1"], revisions["v2"]
    correct("pattern", "pad-poll", "description", "Corrected now.", datetime.now(UTC))
    assert set(dates(ns, f"{E}/pattern/?at=v1").values()) == {stamp(v1)}
    assert set(dates(ns, f"{E}/lesson/?at=v1").values()) == {stamp(v1)}
    # at v2 autopsy had changed, lessons had not; the unrelated v3 changes neither
    for at in ("v2", "master"):
        assert set(dates(ns, f"{E}/pattern/?at={at}").values()) == {stamp(v2)}, at
        assert set(dates(ns, f"{E}/lesson/?at={at}").values()) == {stamp(v1)}, at
        routines = dates(ns, f"{E}/game/{GAME}/routine/?at={at}")
        assert routines and set(routines.values()) == {stamp(v2)}, at
    stat: Any = ns.read(f"{E}/pattern/pad-poll?as=stat&at=v1").body
    assert datetime.fromisoformat(stat["modified"]) == v1, "no correction dates a past read"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("era", ["2025-11-25", STATELESS])
def test_the_listing_over_the_wire_is_a_valid_answer_with_the_dates(
    tmp_path: Path, live_server: Any, era: str
) -> None:
    checkout = checkout_with(
        tmp_path,
        (ROOT / "data/autopsy.json").read_bytes(),
        (ROOT / "data/lessons.json").read_bytes(),
    )
    fill(read_checkout(checkout))
    url = f"{live_server.url}/api/mcp"
    uri = f"{E}/lesson/"
    with httpx.Client(timeout=30) as http:
        if era == STATELESS:
            body = modern_request("resources/read", 1, uri=uri)
            reply = post(http, url, body, headers=modern_headers("resources/read", uri))
        else:
            body = {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": uri}}
            reply = post(http, url, body, headers={"MCP-Protocol-Version": era})
    assert reply.status == 200, reply.content
    result = reply.json()["result"]
    validate_server_result("resources/read", era, result)
    listing = json.loads(result["contents"][0]["text"])
    assert listing["children"]
    schema = v2025 if era == "2025-11-25" else v2026
    for child in listing["children"]:
        parsed = schema.Resource.model_validate(child)
        assert parsed.annotations is not None
        assert parsed.annotations.last_modified == stamp(LESSONS_TIME)
        assert child["annotations"] == {"lastModified": stamp(LESSONS_TIME)}
