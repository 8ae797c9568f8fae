"""The trails admin: every trail listed (its file's problem too), searched, filtered and
corrected through the admin's own views; each correction kept with who and when, served over
the file by every reader, and nothing written into the checkout."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from tests.trails.conftest import (
    HOST,
    A,
    B,
    C,
    T,
    browser,
    form,
    mcp_error,
    mcp_read,
    staff,
    step_of,
    steps_of,
    trail_body,
    trail_json,
)
from tmsite.mounts import registry
from tmsite.mounts.trail.checks import trail_checks
from tmsite.trails import index
from tmsite.trails.models import Trail, TrailCorrection

pytestmark = [pytest.mark.django_db, pytest.mark.spec("OP4", "TRAILS")]

CHANGE = "/admin/tm_trails/trail/{}/change/"
LIST = "/admin/tm_trails/trail/"


def test_every_trail_is_listed_with_the_problem_of_a_file_that_does_not_parse(
    checkout: Path, maintainer: User
) -> None:
    client = browser(maintainer)
    page = client.get(LIST).content.decode()
    assert "walk" in page and "A walk" in page
    assert "broken" in page and "not JSON" in page
    assert "2 trails" in page
    found = client.get(LIST, {"q": "then b"}).content.decode()  # a step's note
    assert "1 trail" in found and "walk" in found and "not JSON" not in found
    broken = client.get(LIST, {"state__exact": "broken"}).content.decode()
    assert "1 trail" in broken and "not JSON" in broken and "A walk" not in broken
    # a file added on disk is listed on the next page
    (checkout / "notes" / "trails" / "more.json").write_text(trail_json([(C, "c")], "More"))
    assert "3 trails" in client.get(LIST).content.decode()


def test_a_correction_is_served_kept_with_who_and_when_and_leaves_the_file(
    checkout: Path, maintainer: User
) -> None:
    file = checkout / "notes" / "trails" / "walk.json"
    on_disk = file.read_bytes()
    assert [s["uri"] for s in trail_body("walk")["steps"]] == [A, B]
    assert step_of(A) == [(f"{T}/walk", "step 1 of the trail walk: first a")]
    assert step_of(C) == []

    client = browser(maintainer)
    url = CHANGE.format("walk")
    data = form(client, url)
    assert "csrfmiddlewaretoken" in data
    assert steps_of(data) == [{"uri": A, "note": "first a"}, {"uri": B, "note": "then b"}]
    data["title"] = "A better walk"
    # reorder (b first), drop nothing, add c at the end
    data["steps_text"] = json.dumps(
        [{"uri": B, "note": "b now first"}, {"uri": A, "note": "then a"}, {"uri": C, "note": "c"}]
    )
    response = client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:3000]

    body = trail_body("walk")
    assert body["title"] == "A better walk" and body["corrected"] is True
    assert [(s["n"], s["uri"], s["note"]) for s in body["steps"]] == [
        (1, B, "b now first"),
        (2, A, "then a"),
        (3, C, "c"),
    ]
    assert step_of(A) == [(f"{T}/walk", "step 2 of the trail walk: then a")]
    assert step_of(C) == [(f"{T}/walk", "step 3 of the trail walk: c")]

    row = TrailCorrection.objects.get()
    assert (row.trail, row.action, row.changed) == ("walk", "correct", "title, steps")
    assert row.corrected_by == maintainer and row.corrected_by_name == "maintainer"
    assert row.corrected_at is not None
    assert row.value["title"] == "A better walk" and len(row.value["steps"]) == 3
    assert row.file_value == {
        "title": "A walk",
        "description": "d",
        "steps": [{"uri": A, "note": "first a"}, {"uri": B, "note": "then b"}],
    }
    assert file.read_bytes() == on_disk  # nothing written into the checkout
    history = client.get("/admin/tm_trails/trailcorrection/", {"q": "walk"}).content.decode()
    assert "maintainer" in history and "title, steps" in history
    assert client.post(f"/admin/tm_trails/trailcorrection/{row.pk}/change/", {}).status_code == 403


def test_the_latest_correction_wins_over_the_file_and_dates_the_trail(
    checkout: Path, maintainer: User
) -> None:
    file = checkout / "notes" / "trails" / "walk.json"
    os.utime(file, (1_000_000_000, 1_000_000_000))  # 2001-09-09
    item, _ = mcp_read(f"{T}/walk?as=stat")
    assert json.loads(item["text"])["modified"].startswith("2001-09-09")
    client = browser(maintainer)
    url = CHANGE.format("walk")
    data = form(client, url)
    data["description"] = "Corrected."
    assert client.post(url, data).status_code == 302
    when = TrailCorrection.objects.get().corrected_at
    stat = json.loads(mcp_read(f"{T}/walk?as=stat")[0]["text"])
    assert stat["modified"] == when.isoformat() and stat["corrected"] is True
    listing = json.loads(mcp_read(f"{T}/")[0]["text"])["children"]
    walk = next(c for c in listing if c["name"] == "walk")
    assert walk["annotations"]["lastModified"] == when.replace(microsecond=0).isoformat().replace(
        "+00:00", "Z"
    )
    # the file changes after the correction: the correction still wins, the date is the file's
    file.write_text(trail_json([(C, "the file says c")], "The file's walk"))
    os.utime(file, (4_000_000_000, 4_000_000_000))  # 2096
    body = trail_body("walk")
    assert body["description"] == "Corrected." and body["title"] == "A walk"
    assert json.loads(mcp_read(f"{T}/walk?as=stat")[0]["text"])["modified"].startswith("2096")
    # given back to its file: the file is served again
    response = client.post(
        LIST, {"action": "back_to_files", "_selected_action": ["walk"], **_token(client)}
    )
    assert response.status_code == 302
    assert trail_body("walk")["title"] == "The file's walk"
    assert trail_body("walk")["corrected"] is False
    assert [r.action for r in TrailCorrection.objects.all()] == ["correct", "revert"]


def _token(client: Any) -> dict[str, str]:
    data = form(client, LIST)
    return {"csrfmiddlewaretoken": data["csrfmiddlewaretoken"]}


@pytest.mark.parametrize(
    ("steps", "field", "message"),
    [
        ([{"uri": "http://elsewhere/x", "note": "n"}], "steps_text", "steps[0].uri: "),
        ([{"uri": A, "note": "fine"}, {"uri": B, "note": "  "}], "steps_text",
         "steps[1].note must be a non-empty string"),
        ([{"uri": A, "note": "n"}] * (index.MAX_STEPS + 1), "steps_text",
         f"at most {index.MAX_STEPS} steps"),
        ([], "steps_text", "steps must be a non-empty array"),
        ("[{", "steps_text", "steps are not JSON: "),
    ],
)  # fmt: skip
def test_an_invalid_trail_is_refused_with_the_file_rules_message_and_changes_nothing(
    checkout: Path, maintainer: User, steps: Any, field: str, message: str
) -> None:
    before = trail_body("walk")
    client = browser(maintainer)
    url = CHANGE.format("walk")
    data = form(client, url)
    data["steps_text"] = steps if isinstance(steps, str) else json.dumps(steps)
    response = client.post(url, data)
    assert response.status_code == 200  # the form again, with the error
    errors = response.context["adminform"].form.errors
    assert list(errors) == [field]
    assert errors[field][0].startswith(message), errors
    if not isinstance(steps, str):
        with pytest.raises(index.TrailError) as same:
            index.from_json("walk", {"title": "A walk", "description": "d", "steps": steps})
        assert errors[field][0] == same.value.message  # the file rule's very message
    assert message.split(":")[0] in response.content.decode()
    assert TrailCorrection.objects.count() == 0
    assert trail_body("walk") == before


def test_a_blank_title_is_refused_on_the_title(checkout: Path, maintainer: User) -> None:
    client = browser(maintainer)
    url = CHANGE.format("walk")
    data = form(client, url)
    data["title"] = "   "
    response = client.post(url, data)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["title"] == [
        "title must be a non-empty string"
    ]
    assert TrailCorrection.objects.count() == 0


def test_without_the_permission_a_trail_cannot_be_changed(checkout: Path, maintainer: User) -> None:
    reader = browser(staff("reader", "view_trail"))
    url = CHANGE.format("walk")
    data = form(reader, url)  # looked at, read-only
    assert "steps_text" not in data
    looked_at = reader.get(url).content.decode()
    assert "then b" in looked_at and 'name="_save"' not in looked_at
    good = form(browser(maintainer), url)
    good["title"] = "Not allowed"
    good["csrfmiddlewaretoken"] = data["csrfmiddlewaretoken"]
    assert reader.post(url, good).status_code == 403
    retire = {"action": "retire_selected", "_selected_action": ["walk"], **_token(reader)}
    reader.post(LIST, retire)
    assert reader.get("/admin/tm_trails/trail/add/").status_code == 403
    assert TrailCorrection.objects.count() == 0
    assert trail_body("walk")["title"] == "A walk"
    # and a post without the form's token is refused by the CSRF check
    client = browser(maintainer)
    good.pop("csrfmiddlewaretoken")
    assert client.post(url, good).status_code == 403
    assert TrailCorrection.objects.count() == 0


def test_retiring_removes_a_trail_from_listings_and_every_read(
    checkout: Path, maintainer: User
) -> None:
    client = browser(maintainer)
    url = CHANGE.format("walk")
    data = form(client, url)
    data["retired"] = "on"
    assert client.post(url, data).status_code == 302
    listing = json.loads(mcp_read(f"{T}/")[0]["text"])["children"]
    assert [c["name"] for c in listing] == []
    error = mcp_error(f"{T}/walk")
    assert error["data"]["reason"] == "not-found" and "no trail named 'walk'" in error["message"]
    assert step_of(A) == []
    _, links = mcp_read(f"tm://{HOST}/fs/notes/trails/walk.json")  # the file is still there
    assert not [lk for lk in links if lk["rel"] == "alternate" and lk["href"] == f"{T}/walk"]
    row = TrailCorrection.objects.get()
    assert (row.action, row.changed, row.corrected_by_name) == ("retire", "retired", "maintainer")
    page = client.get(LIST, {"state__exact": "retired"}).content.decode()
    assert "1 trail" in page and "walk" in page
    # unretired by the same form: served again
    data = form(client, url)
    assert data.get("retired") == "on"
    del data["retired"]
    assert client.post(url, data).status_code == 302
    assert trail_body("walk")["title"] == "A walk"
    assert step_of(A) == [(f"{T}/walk", "step 1 of the trail walk: first a")]


def test_a_trail_without_a_file_is_added_and_exported_as_a_file(
    checkout: Path, maintainer: User, tmp_path: Path, capsys: Any
) -> None:
    client = browser(maintainer)
    data = form(client, "/admin/tm_trails/trail/add/")
    data.update(
        name="new-walk",
        title="New",
        description="Only in the database.",
        steps_text=json.dumps([{"uri": C, "note": "see c"}]),
    )
    response = client.post("/admin/tm_trails/trail/add/", data)
    assert response.status_code == 302, response.content.decode()[:3000]
    assert not (checkout / "notes" / "trails" / "new-walk.json").exists()
    body = trail_body("new-walk")
    assert body["title"] == "New" and "file" not in body
    assert step_of(C) == [(f"{T}/new-walk", "step 1 of the trail new-walk: see c")]
    row = TrailCorrection.objects.get()
    assert (row.action, row.file_value, row.corrected_by) == ("add", None, maintainer)
    # a name that is known already is refused
    again = form(client, "/admin/tm_trails/trail/add/")
    again.update(name="walk", title="t", description="d", steps_text=json.dumps([]))
    refused = client.post("/admin/tm_trails/trail/add/", again)
    assert refused.status_code == 200
    assert "name" in refused.context["adminform"].form.errors
    # retire walk too, and export: the added trail as a file, the retired one named
    client.post(LIST, {"action": "retire_selected", "_selected_action": ["walk"], **_token(client)})
    out = tmp_path / "exported"
    call_command("tm_trails", "export", str(out))
    captured = capsys.readouterr()
    assert "exported 1 trails" in captured.out
    assert "retired: remove notes/trails/walk.json" in captured.err
    assert sorted(p.name for p in out.iterdir()) == ["new-walk.json"]
    exported = index.parse_trail("new-walk", (out / "new-walk.json").read_bytes())
    assert index.as_json(exported) == {
        "title": "New",
        "description": "Only in the database.",
        "steps": [{"uri": C, "note": "see c"}],
    }
    call_command("tm_trails", "export", str(out), "--all")
    assert sorted(p.name for p in out.iterdir()) == ["new-walk.json"]  # walk is retired


def test_the_start_up_checks_see_the_corrections(checkout: Path, maintainer: User) -> None:
    def found() -> list[str]:
        return sorted(f"{m.id} {m.msg}" for m in trail_checks(registry.namespace))

    assert found() == [
        "tm.W020 notes/trails/broken.json does not parse: not JSON: Expecting property name "
        "enclosed in double quotes: line 1 column 2 (char 1)"
    ]
    client = browser(maintainer)
    url = CHANGE.format("walk")
    data = form(client, url)
    data["steps_text"] = json.dumps([{"uri": f"tm://{HOST}/fs/docs/nosuch.md", "note": "gone"}])
    assert client.post(url, data).status_code == 302
    broken = form(client, CHANGE.format("broken"))  # a broken file, corrected over
    broken.update(title="Fixed", description="d", steps_text=json.dumps([{"uri": A, "note": "a"}]))
    assert client.post(CHANGE.format("broken"), broken).status_code == 302
    messages = found()
    assert len(messages) == 1 and messages[0].startswith(
        f"tm.W021 trail walk, step 1 (tm://{HOST}/fs/docs/nosuch.md) does not resolve: not-found"
    )
    assert Trail.objects.get(name="broken").state == "corrected"
    assert "not JSON" in Trail.objects.get(name="broken").problem  # the file's, still shown


@pytest.mark.django_db(transaction=True)
def test_a_correction_saved_on_another_connection_is_seen_once_the_version_is_asked_again(
    checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another machine saves a correction: this process's memo is stale from the first read
    that asks the version again, at most ``VERSION_RECHECK_SECONDS`` later."""
    now = [1000.0]
    monkeypatch.setattr(index, "_clock", lambda: now[0])
    monkeypatch.setattr(index, "VERSION_RECHECK_SECONDS", 1.0)
    assert trail_body("walk")["title"] == "A walk"
    assert step_of(C) == []
    with CaptureQueriesContext(connection) as warm:
        assert index.current().served("walk") is not None
    assert warm.captured_queries == []  # within the window: the files' stats, no query
    now[0] += index.VERSION_RECHECK_SECONDS
    with CaptureQueriesContext(connection) as asked:
        assert index.current().served("walk") is not None
    assert len(asked.captured_queries) == 1 and "tm_trails_trailsversion" in asked[0]["sql"]
    other = connections.create_connection("default")
    connections["elsewhere"] = other
    # another machine's save runs no receiver in this process: only the version tells it
    monkeypatch.setattr(index, "forget", lambda: None)
    try:
        TrailCorrection.objects.using("elsewhere").create(
            trail="walk",
            action="correct",
            changed="title, steps",
            value={
                "title": "From elsewhere",
                "description": "d",
                "steps": [{"uri": C, "note": "c"}],
            },
            corrected_by_name="someone",
        )
    finally:
        del connections["elsewhere"]
        other.close()
    assert trail_body("walk")["title"] == "A walk"  # the version is trusted a while yet
    now[0] += index.VERSION_RECHECK_SECONDS
    assert trail_body("walk")["title"] == "From elsewhere"
    assert step_of(C) == [(f"{T}/walk", "step 1 of the trail walk: c")]
    assert step_of(A) == []
    assert Trail.objects.get(name="walk").corrected_by_name == "someone"
