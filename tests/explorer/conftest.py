"""A real headless Chromium (Debian's ``chromium``) driven by Playwright, against a live server.

The browser is the system one (``/usr/bin/chromium``): nothing is downloaded. Each test gets a
fresh profile directory. Screenshots go to ``test-artifacts/explorer/`` (git-ignored).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.services import missing
from tmsite.entities.loaders import load_checkout
from tmsite.mounts import registry
from tmsite.mounts.namespace import Namespace

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("TM_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = ROOT / "test-artifacts" / "explorer"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def box(transactional_db: None, settings: Any, live_server: Any) -> Iterator[Namespace]:
    """The whole box over this checkout, records loaded, served by ``live_server``."""
    settings.TM_HOST = "tinymachines"
    settings.TM_CHECKOUT = ROOT
    if hasattr(settings, "TM_MOUNTS"):
        del settings.TM_MOUNTS
    load_checkout(ROOT)
    registry.reset()
    yield registry.namespace()
    registry.reset()


@pytest.fixture
def elements(transactional_db: None) -> Iterator[str]:
    """The demo MCP server (stdio, a real child process) probed and mapped; its address."""
    from tmsite.servers import pool
    from tmsite.servers.connect import probe_record
    from tmsite.servers.index import rederive
    from tmsite.servers.models import McpServer

    record = McpServer.objects.create(
        name="elements", transport="stdio", program="elements", start_timeout=10.0
    )
    try:
        assert probe_record(record).outcome == "answered"
        rederive(record)
        yield "tm://tinymachines/mcp/elements/"
    finally:
        pool.close_all()


@pytest.fixture
def page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A page of a fresh headless Chromium profile."""
    try:
        from playwright import sync_api
    except ImportError:
        missing("the playwright package is not installed", "make test installs it")
    if not shutil.which(CHROMIUM):
        missing(f"Chromium is not installed at {CHROMIUM}", "apt-get install chromium")
    # Playwright's sync API runs an event loop in this thread; Django's ORM calls made by the
    # test itself (fixtures, settings) are synchronous and safe here.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"),
            executable_path=CHROMIUM,
            args=ARGS,
            headless=True,
            viewport={"width": 1200, "height": 900},
        )
        errors: list[str] = []
        browser_page = context.new_page()
        browser_page.on("pageerror", lambda error: errors.append(str(error)))
        browser_page.errors = errors
        try:
            yield browser_page
        finally:
            context.close()
    assert not errors, f"the page raised: {errors}"


def shot(page: Any, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
