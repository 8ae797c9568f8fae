"""From a row to its address and back: each admin change page's "View on site" opens the explorer
on the ``tm://`` address the row governs, and the explorer shows staff — only staff — a link to
the admin row behind an entity, an MCP server record or a map entry.

The project's own routes, the shipped records loaded, the Django test client logged in (or not).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from tmsite.entities import models as em
from tmsite.entities.loaders import fill, parse_records
from tmsite.servers import models as sm
from tmsite.trails import index as trail_index
from tmsite.trails import models as tm

pytestmark = [pytest.mark.django_db, pytest.mark.spec("OP4")]

ROOT = Path(__file__).resolve().parents[2]
GAME = "72f469219b30"
VIEW_ON_SITE = re.compile(r'<a href="([^"]*)" class="viewsitelink">')
ADMIN_ROW = re.compile(r'<a id="admin-row" href="([^"]*)">([^<]*)</a>')


@pytest.fixture
def rows(settings: Any) -> dict[str, Any]:
    """The shipped records in the tables, one MCP server with a map entry, and one of each
    history row."""
    settings.TM_HOST = "tinymachines"
    fill(
        parse_records(
            (ROOT / "data/autopsy.json").read_bytes(), (ROOT / "data/lessons.json").read_bytes()
        )
    )
    game = em.Game.objects.get(key=GAME)
    routine = em.Routine.objects.filter(game=game).order_by("bank", "addr").first()
    assert routine is not None
    settings.TM_CHECKOUT = ROOT  # its shipped trails, read and never written
    walk = trail_index.read_trail("page-to-history", ROOT)
    correction = tm.TrailCorrection.objects.create(
        trail="page-to-history",
        action="correct",
        changed="title",
        value={**trail_index.as_json(walk), "title": "From a page to its history"},
        corrected_by_name="admin",
    )
    trail_index.current()  # the index, with the correction over the shipped file
    server = sm.McpServer.objects.create(name="elements", program="elements")
    entry = sm.MapEntry.objects.create(
        server=server, path_template="element/{symbol}", tool="get_element", kind="element"
    )
    return {
        "pattern": em.Pattern.objects.get(key="pad-poll"),
        "game": game,
        "routine": routine,
        "lesson": em.Lesson.objects.get(key="jump"),
        "correction": em.Correction.objects.create(
            entity="routine",
            key=f"{GAME}/{routine.routine_key}",
            field="name",
            value="poll_pads",
            corrected_by_name="admin",
        ),
        "mcpserver": server,
        "mapentry": entry,
        "mapentrychange": sm.MapEntryChange.objects.create(
            entry=entry,
            server_name="elements",
            path_template="element/{symbol}",
            action="add",
            field="tool",
            new="get_element",
            changed_by_name="admin",
        ),
        "trailcorrection": correction,
        "trail": tm.Trail.objects.get(name="page-to-history"),
        "serverchange": sm.ServerChange.objects.create(
            server=server, server_name="elements", field="url", new="", changed_by_name="admin"
        ),
        "serverdeclaration": sm.ServerDeclaration.objects.create(
            server=server,
            asked_at=timezone.now(),
            seconds=0.1,
            protocol_version="2025-11-25",
            era="2025",
        ),
    }


def _explore(address: str) -> str:
    """The explorer URL of an address, written out: ``:`` and ``/`` percent-encoded."""
    return "/explore?uri=" + address.replace(":", "%3A").replace("/", "%2F")


def _routine_address(rows: dict[str, Any]) -> str:
    return f"tm://tinymachines/entity/game/{GAME}/routine/{rows['routine'].routine_key}"


#: Each admin model: its app, and the address its change page opens in the explorer.
GOVERNED = [
    ("tm_entities", "pattern", "tm://tinymachines/entity/pattern/pad-poll"),
    ("tm_entities", "game", f"tm://tinymachines/entity/game/{GAME}"),
    ("tm_entities", "routine", None),  # the routine's key is the first routine's, see below
    ("tm_entities", "lesson", "tm://tinymachines/entity/lesson/jump"),
    ("tm_entities", "correction", None),  # the routine it corrected
    ("tm_servers", "mcpserver", "tm://tinymachines/mcp/elements/"),
    ("tm_servers", "mapentry", "tm://tinymachines/mcp/elements/map"),
    ("tm_servers", "mapentrychange", "tm://tinymachines/mcp/elements/map"),
    ("tm_servers", "serverchange", "tm://tinymachines/mcp/elements/"),
    ("tm_servers", "serverdeclaration", "tm://tinymachines/mcp/elements/"),
    ("tm_trails", "trail", "tm://tinymachines/trail/page-to-history"),
    ("tm_trails", "trailcorrection", "tm://tinymachines/trail/page-to-history"),
]


@pytest.mark.parametrize(("app", "model", "address"), GOVERNED)
def test_each_change_page_views_on_site_the_explorer_on_its_address(
    admin_client: Client, rows: dict[str, Any], app: str, model: str, address: str | None
) -> None:
    address = address or _routine_address(rows)
    page = admin_client.get(f"/admin/{app}/{model}/{rows[model].pk}/change/")
    assert page.status_code == 200
    assert VIEW_ON_SITE.findall(page.content.decode()) == [_explore(address)]
    drawn = admin_client.get(_explore(address))
    assert drawn.status_code == 200
    assert f'data-start="{address}"' in drawn.content.decode()


def test_the_explorer_links_staff_to_the_row_behind_an_address(
    admin_client: Client, rows: dict[str, Any]
) -> None:
    pk = {name: row.pk for name, row in rows.items()}
    expected = {
        "tm://tinymachines/entity/pattern/pad-poll": (
            f"/admin/tm_entities/pattern/{pk['pattern']}/change/",
            "Correct the pattern pad-poll in the admin",
        ),
        f"tm://tinymachines/entity/game/{GAME}?as=stat": (
            f"/admin/tm_entities/game/{pk['game']}/change/",
            f"Correct the game {GAME} in the admin",
        ),
        f"tm://tinymachines/entity/game/{GAME}/routine/": (
            f"/admin/tm_entities/game/{pk['game']}/change/",
            f"Correct the game {GAME} in the admin",
        ),
        _routine_address(rows): (
            f"/admin/tm_entities/routine/{pk['routine']}/change/",
            f"Correct the routine {rows['routine'].routine_key} of the game {GAME} in the admin",
        ),
        "tm://tinymachines/entity/lesson/jump": (
            f"/admin/tm_entities/lesson/{pk['lesson']}/change/",
            "Correct the lesson jump in the admin",
        ),
        "tm://tinymachines/mcp/elements/": (
            f"/admin/tm_servers/mcpserver/{pk['mcpserver']}/change/",
            "Correct the MCP server record elements in the admin",
        ),
        "tm://tinymachines/mcp/elements/tools/get_element": (
            f"/admin/tm_servers/mcpserver/{pk['mcpserver']}/change/",
            "Correct the MCP server record elements in the admin",
        ),
        "tm://tinymachines/mcp/elements/map": (
            f"/admin/tm_servers/mapentry/?server__id__exact={pk['mcpserver']}",
            "Correct the map of elements in the admin",
        ),
        "tm://tinymachines/mcp/elements/element/Fe": (
            f"/admin/tm_servers/mapentry/{pk['mapentry']}/change/",
            "Correct the map entry elements/element/{symbol} in the admin",
        ),
        "tm://tinymachines/trail/page-to-history?as=stat": (
            "/admin/tm_trails/trail/page-to-history/change/",
            "Correct the trail page-to-history in the admin",
        ),
    }
    for address, (href, text) in expected.items():
        page = admin_client.get("/explore", {"uri": address})
        assert page.status_code == 200
        assert ADMIN_ROW.findall(page.content.decode()) == [(href, text)], address
        assert page["Cache-Control"] == "private, no-cache"
        assert admin_client.get(href).status_code == 200, href


@pytest.mark.parametrize(
    "address",
    [
        f"tm://tinymachines/entity/game/{GAME}?at=HEAD",  # the record file then, not the row
        "tm://tinymachines/entity/game/000000000000",  # no such game
        "tm://tinymachines/entity/",
        "tm://tinymachines/mcp/nowhere/",
        "tm://tinymachines/mcp/elements/isotope/Fe",  # a path the map does not name
        "tm://tinymachines/fs/docs/",
        "tm://tinymachines/trail/",
        "tm://tinymachines/trail/no-such-trail",
        "tm://elsewhere/entity/pattern/pad-poll",
        "not an address",
    ],
)
def test_no_row_behind_an_address_no_link(
    admin_client: Client, rows: dict[str, Any], address: str
) -> None:
    page = admin_client.get("/explore", {"uri": address})
    assert page.status_code == 200
    assert 'id="admin-row"' not in page.content.decode()


@pytest.mark.parametrize("who", ["anonymous", "not staff"])
def test_only_staff_see_the_link(client: Client, rows: dict[str, Any], who: str) -> None:
    if who == "not staff":
        client.force_login(User.objects.create_user("reader", password="x"))
    for address in ["tm://tinymachines/entity/pattern/pad-poll", "tm://tinymachines/mcp/elements/"]:
        page = client.get("/explore", {"uri": address})
        assert page.status_code == 200
        body = page.content.decode()
        assert 'id="admin-row"' not in body and "/admin/" not in body
        assert page["Cache-Control"] == "no-cache"
