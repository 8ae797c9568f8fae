"""Record reads kept while the records are as they were: given again unread, read anew at once
when a maintainer corrects one in the admin, or the records are loaded again (entities), or a
trail is corrected or its file edited (trails).

The shipped records in the tables, the entity and trail mounts served; reads through
``/api/mcp`` (the endpoint's ordinary path, where a kept answer is looked up before the method),
reads into the mount counted; each answer is the one the ordinary path builds with nothing kept.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from tests.admin_forms import change_form
from tests.entitymount.conftest import HOST, ROOT
from tests.kept_reads import answer_kept, count_reads, ordinary_read, post_read
from tmsite.core.uri import parse
from tmsite.entities import models as m
from tmsite.entities.loaders import Records, fill
from tmsite.mcp import prepared
from tmsite.mounts import registry
from tmsite.mounts.entity import mount as entity_mount
from tmsite.mounts.trail import mount as trail_mount
from tmsite.trails import corrections, index

pytestmark = [pytest.mark.spec("T7", "ENT", "OP4"), pytest.mark.django_db]

PAD = f"tm://{HOST}/entity/pattern/pad-poll"
CORRECTED = "Strobes $4016, then reads eight buttons one bit at a time."


@pytest.fixture
def served(settings: Any, shipped: Records) -> Iterator[Records]:
    settings.TM_HOST = HOST
    settings.TM_MOUNTS = ["entity"]
    settings.TM_CHECKOUT = ROOT
    registry.reset()
    prepared.clear()
    yield shipped
    prepared.clear()
    registry.reset()


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """One item per read that reached the entity mount."""
    return count_reads(monkeypatch, entity_mount.EntityMount)


def _description(answer: bytes) -> str:
    text = json.loads(answer)["result"]["contents"][0]["text"]
    return str(json.loads(text)["fields"]["description"])


def test_an_unchanged_read_is_given_again_without_reading(
    served: Records, reads: list[str]
) -> None:
    first = post_read(PAD)
    built = len(reads)
    assert built >= 1
    assert answer_kept(PAD), "kept"
    assert post_read(PAD) == post_read(PAD) == first
    assert len(reads) == built, "given again: the mount was not read"
    assert post_read(PAD, 9) == ordinary_read(PAD, 9)


def test_a_correction_in_the_admin_is_read_at_once(
    served: Records, reads: list[str], admin_client: Client
) -> None:
    before = post_read(PAD)
    assert _description(before) != CORRECTED
    pattern = m.Pattern.objects.get(key="pad-poll")
    url = f"/admin/tm_entities/pattern/{pattern.pk}/change/"
    data = change_form(admin_client, url)
    data["description"] = CORRECTED
    assert admin_client.post(url, data).status_code == 302
    assert m.Correction.objects.count() == 1
    count = len(reads)
    corrected = post_read(PAD)
    assert _description(corrected) == CORRECTED
    assert len(reads) > count, "read anew"
    assert corrected == ordinary_read(PAD)
    count = len(reads)
    assert post_read(PAD) == corrected and len(reads) == count, "and kept again"


def test_a_record_saved_by_hand_is_read_at_once(served: Records, reads: list[str]) -> None:
    assert _description(post_read(PAD)) != CORRECTED
    pattern = m.Pattern.objects.get(key="pad-poll")
    pattern.description = CORRECTED
    pattern.save()  # neither a reload nor a correction: the load token and corrections stay
    count = len(reads)
    saved = post_read(PAD)
    assert _description(saved) == CORRECTED and len(reads) > count, "read anew"
    assert saved == ordinary_read(PAD)


def test_records_loaded_again_are_read_at_once(served: Records, reads: list[str]) -> None:
    first = post_read(PAD)
    count = len(reads)
    assert post_read(PAD) == first and len(reads) == count, "kept"
    fill(served)  # another load writes every row's load token anew: no save signal
    assert post_read(PAD) == first, "the same records read the same"
    assert len(reads) > count, "but read anew"


def test_a_read_refused_by_its_form_has_no_stamp(served: Records) -> None:
    mount = registry.namespace().mounts["entity"]
    assert mount.stamp(parse(PAD)) is not None
    assert mount.stamp(parse(f"tm://{HOST}/entity/pattern/")) is not None
    for uri in (
        f"tm://{HOST}/entity/nokind/x",
        f"tm://{HOST}/entity/game/zz",
        f"tm://{HOST}/entity/lesson/" + "a" * 300,
    ):
        assert mount.stamp(parse(uri)) is None, uri


# -- trails -------------------------------------------------------------------------------------


def _trail(title: str) -> str:
    steps = [{"uri": PAD, "note": "a pattern"}]
    return json.dumps({"title": title, "description": "d", "steps": steps})


@pytest.fixture
def trails(settings: Any, shipped: Records, tmp_path: Path) -> Iterator[Path]:
    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT / "data", checkout / "data")
    (checkout / "notes" / "trails").mkdir(parents=True)
    (checkout / "notes" / "trails" / "walk.json").write_text(_trail("A walk"))
    settings.TM_HOST = HOST
    settings.TM_MOUNTS = ["trail"]
    settings.TM_CHECKOUT = checkout
    registry.reset()
    prepared.clear()
    yield checkout
    prepared.clear()
    registry.reset()


def test_a_trail_corrected_or_edited_is_read_at_once(
    trails: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = count_reads(monkeypatch, trail_mount.TrailMount)
    walk = f"tm://{HOST}/trail/walk"
    first = post_read(walk)
    count = len(seen)
    assert post_read(walk) == first and len(seen) == count, "given again: the mount was not read"
    corrections.correct("walk", json.loads(_trail("Corrected")), None, "maintainer")
    corrected = post_read(walk)
    assert json.loads(json.loads(corrected)["result"]["contents"][0]["text"])["title"] == (
        "Corrected"
    )
    assert corrected == ordinary_read(walk)
    (trails / "notes" / "trails" / "other.json").write_text(_trail("Another"))
    count = len(seen)
    assert post_read(walk) == ordinary_read(walk) and len(seen) > count, "a new file: read anew"
    assert registry.namespace().mounts["trail"].stamp(parse(f"tm://{HOST}/trail/")) is None
    assert index.current(trails).served("other") is not None
