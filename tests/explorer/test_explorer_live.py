"""The explorer, live, in a real browser: a page showing an address listens to it
(``subscriptions/listen``, 2026-07-28) on the box served by ``tmsite.serve.app`` on loopback,
and a file of a tmp checkout edited during the test is told in a notice, without a reload.
Under the WSGI live server (which holds no streams) the page asks nothing and shows nothing."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from tests.serve.inthread import served
from tests.subscriptions.helpers import Events, listen_body, listen_headers
from tmsite.mounts import registry
from tmsite.mounts.fs import watch as fswatch
from tmsite.serve.app import Application
from tmsite.streams import listen

pytestmark = [pytest.mark.slow, pytest.mark.spec("SUB3")]

HOST = "tinymachines"
FS = f"tm://{HOST}/fs"
NOTICE = "#live #live-notice"


@pytest.fixture
def checkout(tmp_path: Path, settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A tmp checkout whose ``docs`` the fs mount serves, watched by polling every 100 ms."""
    monkeypatch.setenv("TM_FS_WATCH", "poll")
    monkeypatch.setenv("TM_FS_POLL_MS", "100")
    root = tmp_path / "box"
    (root / "docs" / "guide").mkdir(parents=True)
    (root / "docs" / "a.md").write_text("# a\n\nThe first words.\n")
    (root / "docs" / "guide" / "b.md").write_text("# b\n")
    settings.TM_CHECKOUT = root
    settings.TM_FS_ROOTS = ["docs"]
    settings.TM_HOST = HOST
    if hasattr(settings, "TM_MOUNTS"):
        del settings.TM_MOUNTS
    registry.reset()
    fswatch.SOURCE.starts.clear()
    yield root
    fswatch.SOURCE.stop()
    registry.reset()


@pytest.fixture
def serve_url(checkout: Path, transactional_db: None) -> Iterator[str]:
    """The box served by the ASGI application (streams held) on a free loopback port."""
    with served(Application()) as url:
        yield url


@pytest.fixture
def seen(page: Any) -> dict[str, list[Any]]:
    """What the page logged as console errors, and the MCP methods it POSTed.

    The browser's own ask for ``/favicon.ico`` (a 404: the site names its icon elsewhere) is
    not the page's."""
    out: dict[str, list[Any]] = {"errors": [], "methods": [], "listens": []}

    def console(message: Any) -> None:
        if message.type == "error" and not message.location.get("url", "").endswith("/favicon.ico"):
            out["errors"].append(f"{message.text} ({message.location.get('url')})")

    def request(sent: Any) -> None:
        if sent.url.endswith("/api/mcp"):
            out["methods"].append(sent.headers.get("mcp-method", ""))
            if sent.headers.get("mcp-method") == "subscriptions/listen":
                out["listens"].append(time.monotonic())

    page.on("console", console)
    page.on("request", request)
    return out


def explore(page: Any, base: str, uri: str) -> None:
    page.goto(f"{base}/explore?uri={quote(uri, safe='')}")
    page.wait_for_selector("#explorer[data-ready=true]", timeout=20_000)


def listening(page: Any) -> None:
    page.wait_for_selector("#explorer[data-live=listening]", timeout=20_000)


def _until(page: Any, predicate: Any, seconds: float = 15.0) -> None:
    """Wait for ``predicate``, letting the page's events reach the test meanwhile (Playwright
    hands them over only while one of its calls runs)."""
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        page.wait_for_timeout(50)


def edit_until_told(page: Any, file: Path, selector: str = NOTICE) -> None:
    """Edit ``file`` until the page shows ``selector`` (the poll's first look sees no change)."""
    from playwright.sync_api import TimeoutError as NotYet

    _until(page, lambda: fswatch.SOURCE.starts)
    for attempt in range(20):
        file.write_text(f"# changed {attempt}\n\nThe words now.\n")
        try:
            page.wait_for_selector(selector, timeout=1_000)
            return
        except NotYet:
            continue
    pytest.fail(f"the page never showed {selector}")


def test_a_file_page_is_told_its_file_changed_without_a_reload(
    serve_url: str, checkout: Path, page: Any, seen: dict[str, list[Any]]
) -> None:
    uri = f"{FS}/docs/a.md"
    explore(page, serve_url, uri)
    assert "The first words." in page.inner_text("#blocks")
    listening(page)
    assert page.locator(NOTICE).count() == 0
    page.evaluate("window.drawnOnce = true")  # gone if the page were loaded again
    edit_until_told(page, checkout / "docs" / "a.md")
    assert page.evaluate("window.drawnOnce") is True, "told without a reload"
    notice = page.locator(NOTICE)
    assert "This address changed" in notice.inner_text()
    assert page.locator("#live").get_attribute("role") == "status"
    assert "The first words." in page.inner_text("#blocks"), "nothing re-drawn behind the reader"
    reload = notice.get_by_role("button", name="Reload")
    with page.expect_navigation():
        reload.click()
    page.wait_for_selector("#explorer[data-ready=true]", timeout=20_000)
    assert "The words now." in page.inner_text("#blocks")
    assert page.locator(NOTICE).count() == 0
    assert seen["methods"].count("subscriptions/listen") >= 2  # the reloaded page listens too
    assert not seen["errors"], seen["errors"]


def test_a_directory_page_is_told_which_child_changed(
    serve_url: str, checkout: Path, page: Any, seen: dict[str, list[Any]]
) -> None:
    explore(page, serve_url, f"{FS}/docs/")
    listening(page)
    edit_until_told(page, checkout / "docs" / "guide" / "b.md")
    notice = page.locator(NOTICE)
    assert "Changed beneath this address" in notice.inner_text()
    assert "This address changed" not in notice.inner_text()
    child = notice.locator("a.live-child")
    assert child.all_inner_texts() == [f"{FS}/docs/guide/b.md"]
    assert child.get_attribute("href") == "/explore?uri=" + quote(f"{FS}/docs/guide/b.md", safe="")
    assert listen.SLOTS.status()["streams"] == 1
    # hidden into the back-forward cache, the page closes its stream; shown again, it listens
    page.evaluate("window.dispatchEvent(new PageTransitionEvent('pagehide', {persisted: true}))")
    _until(page, lambda: listen.SLOTS.status()["streams"] == 0)
    assert page.get_attribute("#explorer", "data-live") == "left"
    page.evaluate("window.dispatchEvent(new PageTransitionEvent('pageshow', {persisted: true}))")
    listening(page)
    assert listen.SLOTS.status()["streams"] == 1
    page.goto("about:blank")  # the page is left: its stream is closed and its slot freed
    _until(page, lambda: listen.SLOTS.status()["streams"] == 0)
    assert not seen["errors"], seen["errors"]


def test_a_stream_that_ends_is_listened_to_again(
    serve_url: str,
    checkout: Path,
    page: Any,
    seen: dict[str, list[Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TM_LISTEN_IDLE", "1")
    explore(page, serve_url, f"{FS}/docs/a.md")
    _until(page, lambda: seen["methods"].count("subscriptions/listen") >= 3)
    # the third stream is served (its limits read) with the short idle, and ends, before the
    # next stream is let stay: the page's count moves when it asks, before the server reads
    _until(page, lambda: listen.SLOTS.status()["streams"] == 1)
    _until(page, lambda: listen.SLOTS.status()["streams"] == 0)
    monkeypatch.setenv("TM_LISTEN_IDLE", "60")
    # streams that end as soon as they begin are not asked again at once: 1 s, then 2 s
    first, second = (b - a for a, b in itertools.pairwise(seen["listens"][:3]))
    assert second - first >= 0.5, (first, second)
    _until(page, lambda: seen["methods"].count("subscriptions/listen") >= 4)
    listening(page)
    assert page.locator(NOTICE).count() == 0, "an ended stream is not a change"
    edit_until_told(page, checkout / "docs" / "a.md")
    assert seen["methods"].count("server/discover") == 1, "asked once, listened to again"
    assert not seen["errors"], seen["errors"]


def test_a_refused_listen_is_asked_again_later_and_later(
    serve_url: str,
    checkout: Path,
    page: Any,
    seen: dict[str, list[Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One stream a caller: while the test holds it, the page's listens are refused (the cap's
    -32000), asked again after a wait that grows; once it is let go, the page listens, and
    tells the change made while it could not (it reads the address again on the ack)."""
    monkeypatch.setenv("TM_LISTEN_STREAMS_PER_CALLER", "1")
    body = listen_body("held", resourceSubscriptions=[f"{FS}/docs/"])
    with (
        httpx.Client(timeout=20) as client,
        client.stream("POST", f"{serve_url}/api/mcp", json=body, headers=listen_headers()) as held,
    ):
        events = Events(held)  # kept: its line reader, let go, would close the stream
        assert events.message()["method"] == "notifications/subscriptions/acknowledged"
        explore(page, serve_url, f"{FS}/docs/a.md")
        _until(page, lambda: len(seen["listens"]) >= 3)
        assert page.get_attribute("#explorer", "data-live") == "waiting"
        first, second = (b - a for a, b in itertools.pairwise(seen["listens"][:3]))
        assert 0.85 <= first < 1.45 <= second <= 3, (first, second)  # 1 s, then 2 s, ±10%
        assert listen.SLOTS.status()["streams"] == 1
        assert "The first words." in page.inner_text("#blocks")
        (checkout / "docs" / "a.md").write_text("# a\n\nChanged while no stream was open.\n")
        page.wait_for_timeout(500)
        assert page.locator(NOTICE).count() == 0
    listening(page)
    # no stream told it (none was open): the page reads the address again on its ack
    page.wait_for_selector(NOTICE, timeout=5_000)
    assert "This address changed" in page.inner_text(NOTICE)
    assert page.get_attribute("#explorer", "data-changes") is None
    edit_until_told(page, checkout / "docs" / "a.md", "#explorer[data-changes]")
    assert not seen["errors"], seen["errors"]


def test_under_the_wsgi_live_server_the_page_asks_nothing_and_shows_nothing(
    checkout: Path, live_server: Any, page: Any, seen: dict[str, list[Any]]
) -> None:
    explore(page, live_server.url, f"{FS}/docs/a.md")
    page.wait_for_selector("#explorer[data-live=off]", timeout=20_000)
    (checkout / "docs" / "a.md").write_text("# changed\n")
    page.wait_for_timeout(1_000)
    assert page.locator(NOTICE).count() == 0
    assert page.inner_text("#live") == ""
    assert seen["methods"] == ["server/discover"], "no listen is sent where none is delivered"
    assert not seen["errors"], seen["errors"]


def test_an_unchanged_mcp_address_is_not_told_as_changed(
    elements: str, serve_url: str, page: Any, seen: dict[str, list[Any]]
) -> None:
    """Each ack reads the address again (a new tool call); an answer that differs only in when
    it was called is no change."""
    rereads: list[str] = []
    page.on(
        "response",
        lambda r: rereads.append(r.url) if "/api/v1/resolve" in r.url and "Fe" in r.url else None,
    )
    explore(page, serve_url, f"{elements}element/Fe")
    assert "Iron" in page.inner_text("#blocks")
    listening(page)
    _until(page, lambda: len(rereads) >= 2)  # drawn, then read again on the acknowledgement
    page.wait_for_timeout(500)
    assert page.locator(NOTICE).count() == 0, page.inner_text("#live")
    assert not seen["errors"], seen["errors"]
