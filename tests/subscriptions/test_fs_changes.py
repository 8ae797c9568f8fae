"""fs changes reach listen streams: the official Python SDK 2.x ``Client.listen`` against the box
served by ``tmsite.serve.app`` on loopback, a real checkout edited during the test, watched
through the kernel's notifications and through polling."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.subscriptions import ResourceUpdated, ToolsListChanged

from tests.subscriptions.helpers import (
    HOST,
    SUB_ID,
    Events,
    listen_body,
    listen_headers,
    own_box,
    write_files,
)
from tests.waiting import wait_until
from tmsite.bus import changes
from tmsite.mounts.fs import watch as fswatch
from tmsite.subscriptions import sources

pytestmark = [pytest.mark.spec("SUB1", "SUB3"), pytest.mark.slow]

FS = f"tm://{HOST}/fs"


@pytest.fixture(params=["native", "poll"])
def checkout(
    request: pytest.FixtureRequest, tmp_path: Path, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    monkeypatch.setenv("TM_FS_WATCH", request.param)
    monkeypatch.setenv("TM_FS_POLL_MS", "100")
    files = {"docs/a.md": "# a\n", "docs/guide/b.md": "# b\n", "docs/.env": "SECRET=1\n"}
    root = write_files(tmp_path / "box", files, dirs=("data",))
    with own_box(settings, root, ["docs", "data"], fs_watch=True):
        yield root


def test_the_sdk_client_is_told_of_a_file_and_a_directory_changed(
    listen_url: str, checkout: Path, request: pytest.FixtureRequest
) -> None:
    wanted = [f"{FS}/docs/a.md", f"{FS}/docs/guide/"]

    async def scenario() -> dict[str, Any]:
        async with (
            Client(listen_url) as client,
            client.listen(tools_list_changed=True, resource_subscriptions=wanted) as sub,
        ):
            honoured = sub.honored.model_dump(by_alias=True, exclude_none=True)
            await anyio.to_thread.run_sync(wait_until, lambda: fswatch.SOURCE.starts)
            await anyio.sleep(0.5)  # the watch is set up (a poll has its first look)
            first: Any = None
            for attempt in range(20):  # until the watch has had its first look (a poll's)
                started = time.monotonic()
                (checkout / "docs" / "a.md").write_text(f"# a, changed {attempt}\n")
                with anyio.move_on_after(1):
                    first = await sub.__anext__()
                if first is not None:
                    break
            took = time.monotonic() - started
            (checkout / "docs" / ".env").write_text("SECRET=2\n")  # denied: never told
            (checkout / "docs" / "guide" / "new.md").write_text("# new\n")
            with anyio.fail_after(10):
                second = await sub.__anext__()
            changes.publish_list_changed("tools")
            with anyio.fail_after(10):
                third = await sub.__anext__()
            return {
                "id": sub.subscription_id,
                "honoured": honoured,
                "events": [first, second, third],
                "took": took,
                "starts": list(fswatch.SOURCE.starts),
            }

    seen = anyio.run(scenario)
    assert isinstance(seen["id"], str) and seen["id"].startswith("listen-")
    assert seen["honoured"] == {"toolsListChanged": True, "resourceSubscriptions": wanted}
    assert seen["events"] == [
        ResourceUpdated(f"{FS}/docs/a.md"),
        ResourceUpdated(f"{FS}/docs/guide/new.md"),
        ToolsListChanged(),
    ]
    assert seen["took"] < 5
    assert seen["starts"][0] == (request.node.callspec.params["checkout"], frozenset({"docs"}))
    # the stream is gone: so is the interest, and the watch
    wait_until(lambda: not changes.interests(f"{FS}/"))
    wait_until(lambda: fswatch.SOURCE.watching == frozenset())


def test_the_watch_follows_what_is_listened_to(checkout: Path) -> None:
    sources.install()  # as the server does before its first stream: the watch finds the mount
    source = fswatch.SOURCE
    source.start()
    assert source.watching == frozenset()
    with changes.listening([f"{FS}/data/"]):
        wait_until(lambda: source.watching == {"data"})
        with changes.listening([f"tm://{HOST}/"]):
            wait_until(lambda: source.watching == {"docs", "data"})
            got: list[changes.Change] = []
            remove = changes.add_listener(got.append)
            try:
                time.sleep(0.5)
                (checkout / "docs" / "guide" / "c.md").write_text("# c\n")
                (checkout / "data" / "d").mkdir()
                wait_until(
                    lambda: {c.uri for c in got} >= {f"{FS}/docs/guide/c.md", f"{FS}/data/d/"}
                )
            finally:
                remove()
        wait_until(lambda: source.watching == {"data"})
    wait_until(lambda: source.watching == frozenset())


def test_ack_subscription_id_and_filter_on_the_wire(listen_url: str, checkout: Path) -> None:
    """The same exchange as raw frames: the id of the listen tags every frame."""
    body = listen_body(41, resourceSubscriptions=[f"{FS}/docs/"])
    with (
        httpx.Client(timeout=20) as client,
        client.stream("POST", listen_url, json=body, headers=listen_headers()) as response,
    ):
        events = Events(response)
        ack = events.message()
        wait_until(lambda: fswatch.SOURCE.watching == {"docs"})
        stop = threading.Event()

        def probe() -> None:  # until the watch has had its first look (a poll's)
            for attempt in range(100):
                (checkout / "docs" / "probe.md").write_text(f"{attempt}\n")
                if stop.wait(0.3):
                    return

        prober = threading.Thread(target=probe)
        prober.start()
        try:
            while events.message()["params"]["uri"] != f"{FS}/docs/probe.md":
                pass
        finally:
            stop.set()
            prober.join()
        time.sleep(0.5)  # the probe's last writes are told before the rename
        (checkout / "docs" / "guide").rename(checkout / "docs" / "moved")
        told: set[str] = set()
        while not {f"{FS}/docs/guide", f"{FS}/docs/moved/"} <= told:
            message = events.message()
            assert message["params"]["_meta"] == {SUB_ID: 41}
            if message["params"]["uri"] != f"{FS}/docs/probe.md":
                told.add(message["params"]["uri"])
            assert len(told) <= 6
    assert ack["params"] == {
        "notifications": {"resourceSubscriptions": [f"{FS}/docs/"]},
        "_meta": {SUB_ID: 41},
    }
    # a poll also sees the moved directory's children go and come: each is beneath docs/
    assert told <= {
        f"{FS}/docs/guide",
        f"{FS}/docs/moved/",
        f"{FS}/docs/guide/b.md",
        f"{FS}/docs/moved/b.md",
    }
