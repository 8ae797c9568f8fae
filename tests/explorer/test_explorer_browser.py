"""The explorer in a real browser: walk from the root to a document's history, switch facets,
page a listing, read a refused address and follow its suggestion — by mouse and by keyboard."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest

from tests.explorer.conftest import shot
from tmsite.mounts.namespace import Namespace

pytestmark = [pytest.mark.slow, pytest.mark.spec("BLOCKS", "MANIFEST", "NS3", "NS8")]
T = "tm://tinymachines"


def explore(page: Any, base: str, uri: str | None = None) -> None:
    page.goto(base + "/explore" + (f"?uri={quote(uri, safe='')}" if uri else ""))
    ready(page)


def ready(page: Any) -> None:
    page.wait_for_selector("#explorer[data-ready=true]", timeout=20_000)


def follow(page: Any, locator: Any) -> None:
    with page.expect_navigation():
        locator.click()
    ready(page)


def here(page: Any) -> str:
    return page.inner_text("#title")


def test_walk_from_the_root_to_a_document_and_its_history(
    box: Namespace, page: Any, live_server: Any
) -> None:
    explore(page, live_server.url)
    assert here(page) == f"{T}/"
    table = page.locator("#blocks .block-table")
    assert table.locator("a", has_text="fs/").count() == 1
    shot(page, "01-root")
    follow(page, table.locator("a", has_text="fs/"))
    assert here(page) == f"{T}/fs/"
    follow(page, page.locator("#blocks .block-table a", has_text="docs/"))
    follow(page, page.locator("#blocks .block-table a", has_text="mcp.md").first)
    assert here(page) == f"{T}/fs/docs/mcp.md"
    markdown = page.locator("#blocks .render-markdown")
    assert "MCP, for clients and server authors" in markdown.locator("h2").first.inner_text()
    edges = page.locator("#edges a.edge")
    assert edges.locator(".rel", has_text="describedby").count() == 1
    colour = page.locator('#edges a.edge[data-rel="up"]').evaluate(
        "a => getComputedStyle(a).borderLeftStyle"
    )
    assert colour == "solid"
    shot(page, "02-markdown")
    history = page.locator('#edges a.edge[data-rel="version-history"]')
    assert history.count() == 1, "a docs file links version-history to its log in git"
    follow(page, history)
    assert here(page).endswith("?as=log")
    events = page.locator("#blocks .block-timeline li")
    assert events.count() >= 1
    assert page.locator('#facets a[aria-current="true"]').inner_text() == "log"
    shot(page, "03-history")
    follow(page, events.first.locator("a").first)
    assert "?at=" in here(page)
    shot(page, "04-at-a-commit")


def test_facets_switch_and_say_which_is_on(box: Namespace, page: Any, live_server: Any) -> None:
    explore(page, live_server.url, f"{T}/fs/docs/mcp.md")
    on = page.locator('#facets a[aria-current="true"]')
    assert on.inner_text() == "default"
    follow(page, page.locator('#facets a[data-facet="stat"]'))
    assert here(page) == f"{T}/fs/docs/mcp.md?as=stat"
    assert page.locator('#facets a[aria-current="true"]').inner_text() == "stat"
    terms = page.locator("#blocks .block-kv dt").all_inner_texts()
    assert "mimeType" in terms and "size" in terms
    shot(page, "05-facet-stat")
    follow(page, page.locator('#facets a[data-facet="links"]'))
    assert page.locator("#blocks .block-table th").first.inner_text() == "rel"
    follow(page, page.locator('#facets a[data-facet="default"]'))
    assert here(page) == f"{T}/fs/docs/mcp.md"


def test_a_long_listing_pages(box: Namespace, page: Any, live_server: Any) -> None:
    box.mounts["fs"].page_size = 4
    explore(page, live_server.url, f"{T}/fs/docs/")
    first = page.locator("#blocks .block-table tbody tr td:first-child").all_inner_texts()
    assert len(first) == 4
    shot(page, "06-listing-page-1")
    follow(page, page.locator("#blocks a.next-page"))
    assert "cursor=" in here(page)
    second = page.locator("#blocks .block-table tbody tr td:first-child").all_inner_texts()
    assert second and not set(second) & set(first)
    shot(page, "07-listing-page-2")


def test_a_refused_address_is_an_alert_whose_suggestion_resolves(
    box: Namespace, page: Any, live_server: Any
) -> None:
    explore(page, live_server.url, f"{T}/fs/docs/mcpp.md")
    alert = page.locator('[role="alert"]')
    assert alert.count() == 1
    assert "not-found" in alert.inner_text()
    shot(page, "08-refused")
    suggestion = alert.locator("a.suggestion", has_text="mcp.md")
    follow(page, suggestion)
    assert here(page) == f"{T}/fs/docs/mcp.md"
    assert page.locator('[role="alert"]').count() == 0
    explore(page, live_server.url, "http://not-a-tm-uri/")
    assert "bad-uri" in page.locator('[role="alert"]').inner_text()


def test_the_keyboard_reaches_links_shows_focus_and_enter_follows(
    box: Namespace, page: Any, live_server: Any
) -> None:
    explore(page, live_server.url)
    target = page.locator("#blocks .block-table a", has_text="fs/")
    for _ in range(40):
        page.keyboard.press("Tab")
        if target.evaluate("a => a === document.activeElement"):
            break
    else:
        pytest.fail("Tab never reached the fs/ link")
    outline = target.evaluate("a => getComputedStyle(a).outlineStyle")
    assert outline != "none", "the focused link shows its focus"
    shot(page, "09-keyboard-focus")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    ready(page)
    assert here(page) == f"{T}/fs/"
