"""A page's markdown edited reaches a listen stream: the box served by ``tmsite.serve.app`` on
loopback, its site's page made from a real checkout's file, edited during the test. The change
sources are the ones the first stream installs (``sources.install``), not a watcher the test
builds."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.http.conftest import build_checkout
from tests.subscriptions.helpers import (
    HOST,
    SUB_ID,
    Events,
    listen_body,
    listen_headers,
    own_box,
    stream_client,
)
from tests.waiting import wait_until
from tmsite.mounts.fs import watch as fswatch

pytestmark = [pytest.mark.spec("SUB3"), pytest.mark.slow]

SITE = "tinymachines.ai"
PAGE = f"tm://{HOST}/http/{SITE}/docs/nes/pile"


@pytest.fixture
def checkout(
    tmp_path: Path, settings: Any, asgi_url: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    settings.TM_SITES = {SITE: {"kind": "self", "front_door": asgi_url}}
    monkeypatch.setenv("TM_LISTEN_IDLE", "10")  # a page never told ends the stream, not the run
    # the first stream of this test installs the change sources over this checkout
    root = build_checkout(tmp_path / "box")
    with own_box(settings, root, ["docs"], ["fs", "http"], fs_watch=True, fresh_sources=True):
        yield root


def test_a_page_is_told_when_the_markdown_it_is_made_from_is_edited(
    listen_url: str, checkout: Path
) -> None:
    wanted = [f"{PAGE}?as=rendered"]
    body = listen_body("h-1", resourceSubscriptions=wanted)
    with (
        stream_client() as client,
        client.stream("POST", listen_url, json=body, headers=listen_headers()) as response,
    ):
        assert response.status_code == 200
        events = Events(response)
        ack = events.message()
        assert ack["params"]["notifications"] == {"resourceSubscriptions": wanted}
        # the page's file is watched, by the stream's sources
        wait_until(lambda: bool(fswatch.SOURCE.starts), 10, "the page's file was never watched")
        time.sleep(0.3)
        (checkout / "docs" / "nes" / "pile.md").write_text("# The pile\n\nEmptied.\n")
        told = events.message()
    assert told["method"] == "notifications/resources/updated", told
    assert told["params"] == {"uri": wanted[0], "_meta": {SUB_ID: "h-1"}}
