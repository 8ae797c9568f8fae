"""The admin decision: entity records are read-only but for corrections kept across reloads."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from tests.admin_forms import change_form
from tmsite.entities import models as m
from tmsite.entities import records as R
from tmsite.entities.loaders import Records, fill

pytestmark = [
    pytest.mark.urls("tests.entities.entities_admin_urls"),
    pytest.mark.spec("OP4", "ENT"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("model", "query", "expect"),
    [
        ("pattern", "?q=pad", "pad-poll"),
        ("game", "?q=Cinder", "Cinder Vault"),
        ("game", "?mapper=4", "Cinder Vault"),
        ("routine", "?kind__exact=reset", "_routine_"),
        ("routine", "?q=pad-poll", "_routine_"),
        ("lesson", "?q=jump", "A jump engine in twenty lines"),
        ("lesson", "?kind=exercise", "Sprites through the DMA page"),
        ("correction", "", "0 corrections"),
    ],
)
def test_lists_search_and_filter(
    admin_client: Client, loaded: Records, model: str, query: str, expect: str
) -> None:
    response = admin_client.get(f"/admin/tm_entities/{model}/{query}")
    assert response.status_code == 200
    assert expect in response.content.decode()


@pytest.mark.django_db
def test_routine_filter_by_pattern_lists_exactly_its_instances(
    admin_client: Client, loaded: Records
) -> None:
    pattern = m.Pattern.objects.get(key="sprite-0-split")
    response = admin_client.get(f"/admin/tm_entities/routine/?patterns__id__exact={pattern.id}")
    assert response.status_code == 200
    expected = sum(1 for g in loaded.games for r in g.routines
                   for i in r.instances if i.pattern == "sprite-0-split")  # fmt: skip
    assert f"{expected} routines" in response.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("model", ["pattern", "game", "routine", "lesson"])
def test_entities_cannot_be_added_or_deleted(
    admin_client: Client, loaded: Records, model: str
) -> None:
    obj = {"pattern": m.Pattern, "game": m.Game, "routine": m.Routine, "lesson": m.Lesson}[
        model
    ].objects.first()
    assert obj is not None
    assert admin_client.get(f"/admin/tm_entities/{model}/add/").status_code == 403
    delete = f"/admin/tm_entities/{model}/{obj.pk}/delete/"
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    assert admin_client.get(f"/admin/tm_entities/{model}/{obj.pk}/change/").status_code == 200


@pytest.mark.django_db
def test_a_correction_is_kept_with_who_and_when_and_outlives_reloads(
    admin_client: Client, loaded: Records, admin_user: Any
) -> None:
    pattern = m.Pattern.objects.get(key="pad-poll")
    original = pattern.description
    url = f"/admin/tm_entities/pattern/{pattern.pk}/change/"
    data = change_form(admin_client, url)
    data["description"] = "Strobes $4016, then reads eight buttons one bit at a time."
    data["key"] = "hacked"  # read-only: ignored
    response = admin_client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:2000]

    pattern.refresh_from_db()
    assert pattern.key == "pad-poll"
    assert pattern.description == data["description"]
    correction = m.Correction.objects.get()
    assert (correction.entity, correction.key, correction.field) == (
        "pattern",
        "pad-poll",
        "description",
    )
    assert correction.value == data["description"]
    assert correction.record_value == original
    assert correction.corrected_by == admin_user
    assert correction.corrected_by_name == admin_user.get_username()
    assert correction.corrected_at is not None

    report = fill(loaded)  # the record still says the original
    assert report.corrections_applied == 1
    pattern.refresh_from_db()
    assert pattern.description == data["description"]
    assert pattern.recorded == {"description": original}

    entity = R.get_pattern("pad-poll")
    assert entity is not None
    assert entity.fields["description"] == data["description"]
    assert [c["field"] for c in entity.corrections] == ["description"]
    assert entity.corrections[0]["by"] == admin_user.get_username()
    as_it_stood = R.Snapshot(loaded).get(R.Ref.of("pattern", "pad-poll"))
    assert as_it_stood is not None and as_it_stood.fields["description"] == original


@pytest.mark.django_db
def test_a_routine_correction_follows_its_key_across_reloads(
    admin_client: Client, loaded: Records
) -> None:
    game = loaded.games[2]
    record = game.routines[5]
    routine = m.Routine.objects.get(game__key=game.key, bank=record.bank, addr=record.addr)
    url = f"/admin/tm_entities/routine/{routine.pk}/change/"
    data = change_form(admin_client, url)
    other_kind = "dispatch" if record.kind != "dispatch" else "call"
    data["kind"] = other_kind
    data["addr"] = "1"  # read-only: ignored
    response = admin_client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    correction = m.Correction.objects.get()
    assert (correction.key, correction.field, correction.value, correction.record_value) == (
        f"{game.key}/{record.key}",
        "kind",
        other_kind,
        record.kind,
    )
    # wipe the tables, then load again: the correction comes back from its row
    m.Lesson.objects.all().delete()
    m.Game.objects.all().delete()
    fill(loaded)
    reloaded = m.Routine.objects.get(game__key=game.key, bank=record.bank, addr=record.addr)
    assert (reloaded.kind, reloaded.addr) == (other_kind, record.addr)


@pytest.mark.django_db
def test_saving_without_a_change_records_nothing(admin_client: Client, loaded: Records) -> None:
    lesson = m.Lesson.objects.get(key="jump")
    url = f"/admin/tm_entities/lesson/{lesson.pk}/change/"
    response = admin_client.post(url, change_form(admin_client, url))
    assert response.status_code == 302
    assert m.Correction.objects.count() == 0


@pytest.mark.django_db
def test_corrections_cannot_be_edited_or_deleted(
    admin_client: Client, loaded: Records, admin_user: Any
) -> None:
    row = m.Correction.objects.create(
        entity="game",
        key=loaded.games[0].key,
        field="name",
        value="Lantern Drift DX",
        record_value="Lantern Drift",
        corrected_by=admin_user,
        corrected_by_name=admin_user.get_username(),
    )
    change = f"/admin/tm_entities/correction/{row.pk}/change/"
    assert admin_client.get(change).status_code == 200  # viewable
    assert admin_client.post(change, {"value": '"x"'}).status_code == 403
    delete = f"/admin/tm_entities/correction/{row.pk}/delete/"
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    assert admin_client.get("/admin/tm_entities/correction/add/").status_code == 403
    row.refresh_from_db()
    assert row.value == "Lantern Drift DX"
