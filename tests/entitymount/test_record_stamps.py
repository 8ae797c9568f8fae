"""Record reads kept while the records are as they were: given again unread, read anew at once
when a maintainer corrects one in the admin, or the records are loaded again (entities), or a
trail is corrected or its file edited (trails).

The shipped records in the tables, the entity and trail mounts served; reads through
``/api/mcp`` (the endpoint's ordinary path, where a kept answer is looked up before the method),
reads into the mount counted; each answer is the one the ordinary path builds with nothing kept.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from tests.entitymount.conftest import HOST, ROOT
from tmsite.core.types import Content, Request
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
    seen: list[str] = []
    original = entity_mount.EntityMount.read

    def counted(self: entity_mount.EntityMount, req: Request) -> Content:
        seen.append(req.text)
        return original(self, req)

    monkeypatch.setattr(entity_mount.EntityMount, "read", counted)
    return seen


def _post(uri: str, rid: int = 1) -> bytes:
    body = {"jsonrpc": "2.0", "id": rid, "method": "resources/read", "params": {"uri": uri}}
    reply = Client().post(
        "/api/mcp",
        json.dumps(body),
        content_type="application/json",
        headers={"MCP-Protocol-Version": "2025-11-25"},
    )
    assert reply.status_code == 200, reply.content
    return reply.content


def _ordinary(uri: str, rid: int = 1) -> bytes:
    saved = prepared.variant
    prepared.variant = lambda *args: None  # type: ignore[assignment]
    try:
        return _post(uri, rid)
    finally:
        prepared.variant = saved  # type: ignore[assignment]


def _answer_kept(uri: str) -> bool:
    """Whether the namespace keeps the read of ``uri`` with its MCP answer beside it."""
    kept = registry.namespace().kept(uri)
    return kept is not None and ("resources/read", "2025-11-25", uri) in kept.answers


def _description(answer: bytes) -> str:
    text = json.loads(answer)["result"]["contents"][0]["text"]
    return str(json.loads(text)["fields"]["description"])


def _admin_form(client: Client, url: str) -> dict[str, str]:
    """The change form's inputs as a browser posts them."""
    html = client.get(url).content.decode()
    data = {}
    for tag in re.findall(r"<input[^>]*>", html):
        name = re.search(r'name="([^"]+)"', tag)
        value = re.search(r'value="([^"]*)"', tag)
        if name and 'type="submit"' not in tag:
            data[name.group(1)] = value.group(1) if value else ""
    for name, value in re.findall(
        r'<textarea[^>]*name="([^"]+)"[^>]*>\s*(.*?)</textarea>', html, re.S
    ):
        data[name] = value
    return data


def test_an_unchanged_read_is_given_again_without_reading(
    served: Records, reads: list[str]
) -> None:
    first = _post(PAD)
    built = len(reads)
    assert built >= 1
    assert _answer_kept(PAD), "kept"
    assert _post(PAD) == _post(PAD) == first
    assert len(reads) == built, "given again: the mount was not read"
    assert _post(PAD, 9) == _ordinary(PAD, 9)


def test_a_correction_in_the_admin_is_read_at_once(
    served: Records, reads: list[str], admin_client: Client
) -> None:
    before = _post(PAD)
    assert _description(before) != CORRECTED
    pattern = m.Pattern.objects.get(key="pad-poll")
    url = f"/admin/tm_entities/pattern/{pattern.pk}/change/"
    data = _admin_form(admin_client, url)
    data["description"] = CORRECTED
    assert admin_client.post(url, data).status_code == 302
    assert m.Correction.objects.count() == 1
    count = len(reads)
    corrected = _post(PAD)
    assert _description(corrected) == CORRECTED
    assert len(reads) > count, "read anew"
    assert corrected == _ordinary(PAD)
    count = len(reads)
    assert _post(PAD) == corrected and len(reads) == count, "and kept again"


def test_a_record_saved_by_hand_is_read_at_once(served: Records, reads: list[str]) -> None:
    assert _description(_post(PAD)) != CORRECTED
    pattern = m.Pattern.objects.get(key="pad-poll")
    pattern.description = CORRECTED
    pattern.save()  # neither a reload nor a correction: the load token and corrections stay
    count = len(reads)
    saved = _post(PAD)
    assert _description(saved) == CORRECTED and len(reads) > count, "read anew"
    assert saved == _ordinary(PAD)


def test_records_loaded_again_are_read_at_once(served: Records, reads: list[str]) -> None:
    first = _post(PAD)
    count = len(reads)
    assert _post(PAD) == first and len(reads) == count, "kept"
    fill(served)  # another load writes every row's load token anew: no save signal
    assert _post(PAD) == first, "the same records read the same"
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
    seen: list[str] = []
    original = trail_mount.TrailMount.read

    def counted(self: trail_mount.TrailMount, req: Request) -> Content:
        seen.append(req.text)
        return original(self, req)

    monkeypatch.setattr(trail_mount.TrailMount, "read", counted)
    walk = f"tm://{HOST}/trail/walk"
    first = _post(walk)
    count = len(seen)
    assert _post(walk) == first and len(seen) == count, "given again: the mount was not read"
    corrections.correct("walk", json.loads(_trail("Corrected")), None, "maintainer")
    corrected = _post(walk)
    assert json.loads(json.loads(corrected)["result"]["contents"][0]["text"])["title"] == (
        "Corrected"
    )
    assert corrected == _ordinary(walk)
    (trails / "notes" / "trails" / "other.json").write_text(_trail("Another"))
    count = len(seen)
    assert _post(walk) == _ordinary(walk) and len(seen) > count, "a new file: read anew"
    assert registry.namespace().mounts["trail"].stamp(parse(f"tm://{HOST}/trail/")) is None
    assert index.current(trails).served("other") is not None
