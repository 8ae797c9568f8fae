"""An acknowledgement means "from now on you are told": a file written the moment it arrives is.

The change sources start watching on threads of their own; a stream used to acknowledge before
the fs watch was set up, and a file written right after the acknowledgement was told 3 or 4
times in 20 (the SDK's ``Client.listen`` 7 in 10, a 2025-11-25 session 19 in 20). Here 50
listens in a row from the official Python SDK 2.x client, and 50 subscribes of a 2025-11-25
session (over plain HTTP, and from that SDK's own 2025-11-25 session), each write their file the
moment the answer arrives, through the kernel's notifications and through polling. Real
checkout, real watch, real loopback HTTP.

Spec: SUB1, SUB2, SUB3.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.subscriptions import ResourceUpdated

from tests.subscriptions.helpers import HOST, own_box, write_files
from tests.subscriptions.sessions_helpers import (
    SseEvents,
    initialize,
    rpc,
    stream_headers,
    updated,
)
from tests.waiting import wait_until
from tmsite.bus import changes
from tmsite.mounts.fs import watch as fswatch
from tmsite.streams import sessionstream

pytestmark = [pytest.mark.spec("SUB1", "SUB2", "SUB3"), pytest.mark.slow]

FS = f"tm://{HOST}/fs"
ROUNDS = 50


@pytest.fixture(params=["native", "poll"])
def checkout(
    request: pytest.FixtureRequest, tmp_path: Path, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    monkeypatch.setenv("TM_FS_WATCH", request.param)
    monkeypatch.setenv("TM_FS_POLL_MS", "100")
    monkeypatch.setenv("TM_SESSION_POLL", "5")  # only a subscribe in this process reads at once
    files = {f"docs/f{n}.md": f"# {n}\n" for n in range(ROUNDS)}
    root = write_files(tmp_path / "box", files, dirs=("notes",))
    # files as a box has them, written before it started: a poll compares modification times
    # to the second (notify's poll watcher), so a file written twice in one second is told once
    before = time.time() - 10
    for name in files:
        os.utime(root / name, (before, before))
    with own_box(settings, root, ["docs", "notes"], fs_watch=True):
        yield root


def test_fifty_sdk_listens_are_each_told_of_a_file_written_as_the_ack_arrives(
    listen_url: str, checkout: Path
) -> None:
    async def one(client: Client, n: int) -> object:
        wanted = f"{FS}/docs/f{n}.md" if n % 2 else f"{FS}/notes/"
        async with client.listen(resource_subscriptions=[wanted]) as sub:
            target = checkout / "docs" / f"f{n}.md" if n % 2 else checkout / "notes" / f"n{n}"
            target.write_text(f"changed {n}\n")  # the moment the acknowledgement is in
            with anyio.move_on_after(5):
                return await sub.__anext__()
        return None

    async def scenario() -> list[object]:
        told = []
        async with Client(listen_url) as client:
            for n in range(ROUNDS):
                told.append(await one(client, n))
                # the stream ended: nothing watched, so the next listen sets its watch up anew
                await anyio.to_thread.run_sync(
                    wait_until, lambda: fswatch.SOURCE.watching == frozenset()
                )
        return told

    told = anyio.run(scenario)
    expected = [
        ResourceUpdated(f"{FS}/docs/f{n}.md" if n % 2 else f"{FS}/notes/n{n}")
        for n in range(ROUNDS)
    ]
    missed = [n for n, (got, want) in enumerate(zip(told, expected, strict=True)) if got != want]
    assert not missed, f"{len(missed)} of {ROUNDS} not told: {[(n, told[n]) for n in missed]}"
    assert len(fswatch.SOURCE.starts) >= ROUNDS  # each listen set a new watch up


def test_fifty_session_subscribes_are_each_told_of_a_file_written_as_the_answer_arrives(
    listen_url: str, checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TM_LISTEN_KEEPALIVE", "60")  # a read waits 5 s for the event, no more
    with httpx.Client(timeout=httpx.Timeout(20, read=5)) as client:
        session, _ = initialize(client, listen_url)
        with client.stream("GET", listen_url, headers=stream_headers(session)) as response:
            events = SseEvents(response)
            wait_until(lambda: bool(sessionstream.watched()))
            told = []
            for n in range(ROUNDS):
                uri = f"{FS}/docs/f{n}.md"
                answer = rpc(client, listen_url, "resources/subscribe", n, session=session, uri=uri)
                assert answer.json()["result"] == {}
                (checkout / "docs" / f"f{n}.md").write_text(f"changed {n}\n")
                try:
                    _, message = events.message()
                except httpx.ReadTimeout:
                    pytest.fail(f"round {n}: the file written after the answer was not told")
                told.append(message)
                gone = rpc(client, listen_url, "resources/unsubscribe", n, session=session, uri=uri)
                assert gone.json()["result"] == {}
                sessionstream.wake()
                wait_until(lambda: not changes.interests(f"{FS}/"))  # the watch ends
    assert told == [updated(f"{FS}/docs/f{n}.md") for n in range(ROUNDS)]


@pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed as of 2026-07-28")
def test_fifty_sdk_session_subscribes_are_each_told_of_a_file_written_as_the_answer_arrives(
    listen_url: str, checkout: Path
) -> None:
    """The official SDK's 2025-11-25 session (``mode="legacy"``): its GET stream, opened by the
    SDK after initialize, carries what each ``subscribe_resource`` asked for."""
    told: list[str] = []
    arrived = anyio.Event()

    async def handler(message: Any) -> None:
        nonlocal arrived
        if getattr(message, "method", None) == "notifications/resources/updated":
            told.append(str(message.params.uri))
            arrived.set()

    async def scenario() -> list[str | None]:
        nonlocal arrived
        seen: list[str | None] = []
        async with Client(listen_url, mode="legacy", message_handler=handler) as client:
            assert client.protocol_version == "2025-11-25"
            await anyio.to_thread.run_sync(wait_until, lambda: bool(sessionstream.watched()))
            for n in range(ROUNDS):
                uri = f"{FS}/docs/f{n}.md"
                arrived = anyio.Event()
                await client.subscribe_resource(uri)
                (checkout / "docs" / f"f{n}.md").write_text(f"changed {n}\n")  # answer is in
                with anyio.move_on_after(5):
                    await arrived.wait()
                seen.append(told[-1] if arrived.is_set() else None)
                await client.unsubscribe_resource(uri)
                sessionstream.wake()
                await anyio.to_thread.run_sync(
                    wait_until, lambda: not changes.interests(f"{FS}/")
                )  # the watch ends: the next subscribe sets it up anew
        return seen

    seen = anyio.run(scenario)
    expected: list[str | None] = [f"{FS}/docs/f{n}.md" for n in range(ROUNDS)]
    missed = [n for n, (got, want) in enumerate(zip(seen, expected, strict=True)) if got != want]
    assert not missed, f"{len(missed)} of {ROUNDS} not told: {[(n, seen[n]) for n in missed]}"
