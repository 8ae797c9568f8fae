"""Trails (tm:step / tm:step-of, the index, the checks), offbox nodes, and the game pages."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from tests.entitymount.conftest import HOST, ROOT, make_space
from tmsite.core.errors import NotFound
from tmsite.entities import models as m
from tmsite.entities.loaders import Records
from tmsite.mounts import namespace as namespace_module
from tmsite.mounts import registry
from tmsite.mounts.namespace import Namespace
from tmsite.mounts.trail.checks import trail_checks
from tmsite.trails import index

pytestmark = pytest.mark.spec("TRAILS", "OFFBOX", "OP3")

T = f"tm://{HOST}/trail"


def _trail(steps: list[tuple[str, str]], title: str = "A walk") -> str:
    return json.dumps(
        {"title": title, "description": "d", "steps": [{"uri": u, "note": n} for u, n in steps]}
    )


@pytest.fixture
def trail_checkout(tmp_path: Path) -> Path:
    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT / "data", checkout / "data")
    (checkout / "docs").mkdir()
    (checkout / "docs" / "a.md").write_text("# a\n")
    trails = checkout / "notes" / "trails"
    trails.mkdir(parents=True)
    (trails / "walk.json").write_text(
        _trail(
            [
                (f"tm://{HOST}/fs/docs/a.md", "the file"),
                (f"tm://{HOST}/entity/pattern/pad-poll", "a pattern"),
                (f"tm://{HOST}/fs/docs/a.md?as=stat", "its stat"),
            ]
        )
    )
    return checkout


def test_a_trail_reads_with_its_steps_in_order(shipped: Records, trail_checkout: Path) -> None:
    ns = make_space(trail_checkout)
    listing = ns.read(f"{T}/").body["children"]
    assert [(c["name"], c["title"], c["steps"]) for c in listing] == [("walk", "A walk", 3)]
    content = ns.read(f"{T}/walk")
    assert content.mime_type == "application/vnd.tm.trail+json"
    assert [s["n"] for s in content.body["steps"]] == [1, 2, 3]
    steps = [(lk.href, lk.confidence) for lk in content.links if lk.rel == "tm:step"]
    assert sorted(steps) == sorted((s["uri"], "exact") for s in content.body["steps"])
    alternate = [lk.href for lk in content.links if lk.rel == "alternate"]
    assert alternate == [f"tm://{HOST}/fs/notes/trails/walk.json"]
    as_file = ns.read(f"tm://{HOST}/fs/notes/trails/walk.json")
    assert json.loads(as_file.body)["title"] == "A walk"
    assert (f"{T}/walk") in [lk.href for lk in as_file.links if lk.rel == "alternate"]


def test_each_step_links_back_to_every_trail_it_is_on(
    shipped: Records, trail_checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ns = make_space(trail_checkout)
    # the index's rule, read by read: not the second a kept read trusts its links for
    monkeypatch.setattr(namespace_module, "LINKS_RECHECK_SECONDS", 0.0)

    def step_of(uri: str) -> list[str]:
        return [lk.href for lk in ns.read(uri).links if lk.rel == "tm:step-of"]

    assert step_of(f"tm://{HOST}/entity/pattern/pad-poll") == [f"{T}/walk"]
    assert step_of(f"tm://{HOST}/fs/docs/a.md") == [f"{T}/walk"]
    assert step_of(f"tm://{HOST}/entity/pattern/frame-wait") == []
    # a new trail is indexed on the next read, without a command
    (trail_checkout / "notes" / "trails" / "again.json").write_text(
        _trail([(f"tm://{HOST}/entity/pattern/pad-poll", "again")])
    )
    assert step_of(f"tm://{HOST}/entity/pattern/pad-poll") == [f"{T}/again", f"{T}/walk"]
    # an edit is seen too (the file's size and time changed)
    walk = trail_checkout / "notes" / "trails" / "walk.json"
    walk.write_text(_trail([(f"tm://{HOST}/entity/pattern/frame-wait", "now this")]))
    os.utime(walk, ns=(1, 1))
    assert step_of(f"tm://{HOST}/entity/pattern/pad-poll") == [f"{T}/again"]
    assert step_of(f"tm://{HOST}/entity/pattern/frame-wait") == [f"{T}/walk"]
    assert m.TrailStep.objects.count() == 2


def test_the_command_rebuilds_the_index(
    shipped: Records, trail_checkout: Path, capsys: Any
) -> None:
    call_command("tm_index_trails", checkout=trail_checkout)
    assert "indexed 1 trails, 3 steps" in capsys.readouterr().out
    assert list(m.TrailStep.objects.values_list("trail", "position")) == [
        ("walk", 1),
        ("walk", 2),
        ("walk", 3),
    ]
    assert m.TrailStep.objects.get(position=3).target == f"tm://{HOST}/fs/docs/a.md"


def test_checks_report_bad_files_and_steps_that_do_not_resolve(
    shipped: Records, trail_checkout: Path, process_space: Any
) -> None:
    trails = trail_checkout / "notes" / "trails"
    (trails / "broken.json").write_text("{not json")
    (trails / "lost.json").write_text(
        _trail(
            [
                (f"tm://{HOST}/entity/pattern/pad-pole", "a typo"),
                (f"tm://{HOST}/nomount/x", "no such mount"),
                ("tm://elsewhere/fs/docs/a.md", "another host"),
                (f"tm://{HOST}/http/{'tinymachines.ai'}/docs", "a page: not read at start-up"),
            ]
        )
    )
    process_space(trail_checkout)
    messages = trail_checks(registry.namespace)
    found = sorted((msg.id, msg.msg.split(":")[0]) for msg in messages)
    assert [i for i, _ in found] == ["tm.W020", "tm.W021", "tm.W021", "tm.W021"]
    texts = " | ".join(msg.msg for msg in messages)
    assert "broken.json does not parse" in texts
    assert "step 1 (tm://tinymachines/entity/pattern/pad-pole) does not resolve: not-found" in texts
    assert "no mount 'nomount' is served" in texts
    assert "the host is 'elsewhere'" in texts


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"title": " ", "description": "d", "steps": []}, "title must be a non-empty string"),
        ({"title": "t", "steps": []}, "description must be a non-empty string"),
        ({"title": "t", "description": "d", "steps": []}, "steps must be a non-empty array"),
        ({"title": "t", "description": "d", "steps": ["x"]}, "steps[0] must be an object"),
        (
            {"title": "t", "description": "d", "steps": [{"uri": f"{T}/", "note": ""}]},
            "steps[0].note must be a non-empty string",
        ),
        (
            {"title": "t", "description": "d", "steps": [{"uri": 7, "note": "n"}]},
            "steps[0].uri must be a tm:// address",
        ),
        (
            {"title": "t", "description": "d", "steps": [{"uri": "http://x/", "note": "n"}]},
            "steps[0].uri: ",
        ),
        (
            {"title": "t", "description": "d", "steps": [{"uri": "tm://", "note": "n"}]},
            "steps[0].uri must name a host",
        ),
    ],
)
def test_a_trail_file_is_refused_naming_what_is_wrong(data: dict[str, Any], problem: str) -> None:
    with pytest.raises(index.TrailError) as refused:
        index.parse_trail("bad", json.dumps(data).encode())
    assert refused.value.message.startswith(problem)
    assert str(refused.value).startswith("notes/trails/bad.json: ")


def test_the_shipped_trails_parse_and_their_local_steps_resolve(
    ns: Namespace, process_space: Any
) -> None:
    trails, problems = index.read_all(ROOT)
    assert problems == {}
    assert sorted(t.name for t in trails) == ["page-to-history", "pattern-through-games"]
    process_space(ROOT)
    unresolved = [msg.msg for msg in trail_checks(registry.namespace)]
    # the git mount is not in this namespace yet: its steps are the only ones reported
    assert all("git" in text for text in unresolved), unresolved


def test_offbox_nodes_are_named_never_served(ns: Namespace) -> None:
    listing = ns.read(f"tm://{HOST}/offbox/").body["children"]
    assert [c["name"] for c in listing] == ["autopsy-models", "cartridges", "lesson-builds"]
    node = ns.read(f"tm://{HOST}/offbox/autopsy-models")
    assert node.mime_type == "application/vnd.tm.offbox+json"
    assert node.body["exposed"] is False and node.body["reason"] == "not-exposed"
    links = sorted((lk.rel, lk.href, lk.confidence) for lk in node.links if lk.confidence)
    assert links == [
        ("tm:generated-by", f"tm://{HOST}/git/tmsite/scripts/autopsy-models.py", "exact"),
        ("tm:input-of", f"tm://{HOST}/git/tmsite/scripts/board-autopsy.py", "exact"),
    ]
    offbox = ns.mounts["offbox"]
    from tmsite.core.uri import parse

    back = offbox.links_into(parse(f"tm://{HOST}/git/tmsite/scripts/autopsy-models.py"))
    assert sorted((lk.rel, lk.href, lk.confidence) for lk in back) == [
        ("tm:generates", f"tm://{HOST}/offbox/autopsy-models", "exact"),
        ("tm:input", f"tm://{HOST}/offbox/cartridges", "exact"),
    ]
    assert offbox.links_into(parse(f"tm://{HOST}/git/tmsite/scripts/x.py")) == []
    assert offbox.links_into(parse(f"tm://{HOST}/git/tmsite/scripts/board-autopsy.py?at=v1")) == []
    stat = ns.read(f"tm://{HOST}/offbox/cartridges?as=stat").body
    assert stat["mimeType"] == "application/vnd.tm.offbox+json" and stat["exposed"] is False
    with pytest.raises(NotFound) as refused:
        ns.read(f"tm://{HOST}/offbox/cartridge")
    assert refused.value.data["nearest"][0] == f"tm://{HOST}/offbox/cartridges"


def test_game_pages_render_and_are_in_the_sitemap(shipped: Records, settings: Any) -> None:
    settings.TM_CHECKOUT = ROOT
    client = Client()
    game = shipped.games[0]
    page = client.get(f"/autopsy/games/{game.key}")
    assert page.status_code == 200
    html = page.content.decode()
    assert "<main" in html and game.name in html and "pad-poll" in html
    assert client.get("/autopsy/games/000000000000").status_code == 404
    assert client.get("/autopsy/games/nothex").status_code == 404
    sitemap = client.get("/sitemap.xml").content.decode()
    assert all(f"/autopsy/games/{g.key}</loc>" in sitemap for g in shipped.games)
