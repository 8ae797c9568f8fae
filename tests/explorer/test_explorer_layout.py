"""The explorer's layout in a real browser at 1280 × 900, measured from element boxes: the
site's bar spans the explorer's column, addresses in the links panel wrap between their parts
(never inside one), a map's table fits its column whole, and the site's navigation links the
explorer from every page, the explorer's own included.

Spec: BLOCKS.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest

from tests.explorer.conftest import shot
from tmsite.mounts.namespace import Namespace

pytestmark = [pytest.mark.slow, pytest.mark.spec("BLOCKS")]
T = "tm://tinymachines"

#: Where an address may wrap: after these characters, or before the next ones.
_LINE_BREAKS = """(node) => {
  const chars = [];
  const walker = document.createTreeWalker(node, NodeFilter.SHOW_TEXT);
  for (let text = walker.nextNode(); text; text = walker.nextNode()) {
    for (let i = 0; i < text.length; i++) {
      const range = document.createRange();
      range.setStart(text, i);
      range.setEnd(text, i + 1);
      const box = range.getClientRects()[0];
      if (box) chars.push([text.data[i], Math.round(box.top)]);
    }
  }
  const breaks = [];
  for (let i = 1; i < chars.length; i++) {
    if (chars[i][1] > chars[i - 1][1] + 2) breaks.push([chars[i - 1][0], chars[i][0]]);
  }
  return { text: chars.map((c) => c[0]).join(""), breaks };
}"""


def explore(page: Any, base: str, uri: str) -> None:
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{base}/explore?uri={quote(uri, safe='')}")
    page.wait_for_selector("#explorer[data-ready=true]", timeout=20_000)


def left(page: Any, selector: str) -> float:
    return float(page.locator(selector).first.evaluate("e => e.getBoundingClientRect().left"))


def right(page: Any, selector: str) -> float:
    return float(page.locator(selector).first.evaluate("e => e.getBoundingClientRect().right"))


def test_the_bar_spans_the_explorers_column(box: Namespace, page: Any, live_server: Any) -> None:
    explore(page, live_server.url, f"{T}/fs/docs/mcp.md")
    assert abs(left(page, ".site-name") - left(page, "#title")) <= 1
    assert abs(right(page, ".site-nav") - right(page, "#explorer")) <= 1


def test_addresses_in_the_links_panel_wrap_between_their_parts(
    box: Namespace, page: Any, live_server: Any
) -> None:
    explore(page, live_server.url, f"{T}/fs/docs/mcp.md")
    targets = page.locator("#edges a.edge .target")
    wrapped = 0
    for index in range(targets.count()):
        found = targets.nth(index).evaluate(_LINE_BREAKS)
        for before, after in found["breaks"]:
            wrapped += 1
            assert before in "/=?& " or after in "?&#", (found["text"], before, after)
    assert wrapped, "no address wrapped: the test shows nothing at this width"
    shot(page, "10-links-wrap")


def test_a_maps_table_fits_its_column_at_1280(
    box: Namespace, elements: str, page: Any, live_server: Any
) -> None:
    explore(page, live_server.url, f"{elements}map")
    table = page.locator("#blocks .block-table").first
    fits = table.evaluate(
        """wrap => [wrap, wrap.querySelector('table')].every(
             (e) => e.scrollWidth <= e.clientWidth + 1)"""
    )
    assert fits, "the map's table scrolls: a column is cut at 1280 px"
    last = table.locator("th").last
    assert last.inner_text() == "why"
    edge = last.evaluate("th => th.getBoundingClientRect().right")
    assert edge <= right(page, "#blocks") + 1
    shot(page, "11-map")


def test_the_sites_navigation_links_the_explorer(
    box: Namespace, page: Any, live_server: Any
) -> None:
    for path in ("/", "/ja/", "/pieces"):
        page.goto(live_server.url + path)
        link = page.locator(".site-nav .site-links a[href='/explore']")
        assert link.count() == 1, path
    with page.expect_navigation():
        link.click()
    page.wait_for_selector("#explorer[data-ready=true]", timeout=20_000)
    assert page.inner_text("#title") == f"{T}/"
    current = page.locator(".site-nav a[aria-current='page']")
    assert current.inner_text() == "Explorer" and current.get_attribute("href") == "/explore"
    assert page.locator(".site-nav .site-links a").all_inner_texts() == [
        "Home",
        "Docs",
        "Pieces",
        "Explorer",
    ]
