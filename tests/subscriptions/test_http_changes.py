"""A page's markdown edited reaches a listen stream: the box served by ``tmsite.serve.app`` on
loopback, its site's page made from a real checkout's file, edited during the test. The change
sources are the ones the first stream installs (``sources.install``), not a watcher the test
builds."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.http.conftest import build_checkout
from tests.subscriptions.helpers import SUB_ID, Events, listen_body, listen_headers
from tmsite.mounts import registry
from tmsite.subscriptions import fswatch, sources

pytestmark = [pytest.mark.spec("SUB3"), pytest.mark.slow]

HOST = "tinymachines"
SITE = "tinymachines.ai"
PAGE = f"tm://{HOST}/http/{SITE}/docs/nes/pile"


@pytest.fixture
def checkout(
    tmp_path: Path, settings: Any, asgi_url: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    root = build_checkout(tmp_path / "box")
    settings.TM_CHECKOUT = root
    settings.TM_FS_ROOTS = ["docs"]
    settings.TM_HOST = HOST
    settings.TM_MOUNTS = ["fs", "http"]
    settings.TM_SITES = {SITE: {"kind": "self", "front_door": asgi_url}}
    monkeypatch.setenv("TM_LISTEN_IDLE", "10")  # a page never told ends the stream, not the run
    registry.reset()
    fswatch.SOURCE.starts.clear()
    sources.uninstall()  # the first stream of this test installs them over this checkout
    yield root
    sources.uninstall()
    fswatch.SOURCE.stop()
    registry.reset()


def test_a_page_is_told_when_the_markdown_it_is_made_from_is_edited(
    listen_url: str, checkout: Path
) -> None:
    wanted = [f"{PAGE}?as=rendered"]
    body = listen_body("h-1", resourceSubscriptions=wanted)
    with (
        httpx.Client(timeout=httpx.Timeout(20, read=20)) as client,
        client.stream("POST", listen_url, json=body, headers=listen_headers()) as response,
    ):
        assert response.status_code == 200
        events = Events(response)
        ack = events.message()
        assert ack["params"]["notifications"] == {"resourceSubscriptions": wanted}
        end = time.monotonic() + 10
        while not fswatch.SOURCE.starts:  # the page's file is watched, by the stream's sources
            assert time.monotonic() < end, "the page's file was never watched"
            time.sleep(0.02)
        time.sleep(0.3)
        (checkout / "docs" / "nes" / "pile.md").write_text("# The pile\n\nEmptied.\n")
        told = events.message()
    assert told["method"] == "notifications/resources/updated", told
    assert told["params"] == {"uri": wanted[0], "_meta": {SUB_ID: "h-1"}}
