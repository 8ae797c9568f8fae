"""Faults of listen streams: a listener that vanishes mid-stream, the fs watch restarting.

The box is served by ``tmsite.serve.app`` on loopback in this process (so its caps and interest
can be read), a real checkout edited during the test; the vanishing listener is a raw socket
closed with a reset (``SO_LINGER`` 0), as a client that crashed or lost its network does.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.subscriptions.helpers import (
    HOST,
    Events,
    listen_body,
    listen_headers,
    nothing_held,
    own_box,
    raw_listen,
    reset_connection,
    stream_client,
    write_files,
)
from tests.waiting import wait_until
from tmsite.bus import changes
from tmsite.mounts.fs import watch as fswatch
from tmsite.streams import listen

pytestmark = [pytest.mark.spec("SUB1", "SUB3"), pytest.mark.slow]

FS = f"tm://{HOST}/fs"
READ_SECONDS = 8.0


@pytest.fixture
def checkout(tmp_path: Path, settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("TM_FS_WATCH", "native")
    # no keep-alive comes: a stream that is told nothing times its read out (READ_SECONDS)
    monkeypatch.setenv("TM_LISTEN_KEEPALIVE", "60")
    root = write_files(tmp_path / "box", {"docs/a.md": "# a\n"}, dirs=("data",))
    with own_box(settings, root, ["docs", "data"], fs_watch=True):
        yield root


def _raw_listen(url: str, body: dict[str, Any]) -> tuple[socket.socket, bytes]:
    """A listen over a raw socket; returns it once the acknowledgement arrived, and what came."""
    sock = raw_listen(url, body)
    got = b""
    while b"notifications/subscriptions/acknowledged" not in got:
        chunk = sock.recv(65536)
        assert chunk, f"the stream ended before its acknowledgement: {got!r}"
        got += chunk
    return sock, got


def test_a_listener_reset_while_idle_frees_its_slot_and_interest(
    listen_url: str, checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = f"{FS}/docs/a.md"
    sock, got = _raw_listen(listen_url, listen_body("v-1", resourceSubscriptions=[uri]))
    assert b" 200 " in got.split(b"\r\n", 1)[0]
    wait_until(lambda: changes.interests(uri).get(uri) == 1)
    assert listen.SLOTS.status() == {"streams": 1, "uris": 1, "callers": 1}
    reset_connection(sock)
    wait_until(nothing_held, seconds=5)
    assert changes.interests(uri) == {}
    wait_until(lambda: fswatch.SOURCE.watching == frozenset(), seconds=5)


def test_a_listener_reset_while_being_told_frees_its_slot_and_interest(
    listen_url: str, checkout: Path
) -> None:
    uri = f"{FS}/docs/"
    sock, _ = _raw_listen(listen_url, listen_body("v-2", resourceSubscriptions=[uri]))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # the server's writes back up
    wait_until(lambda: changes.interests(uri).get(uri) == 1)
    stop = threading.Event()

    def tell() -> None:  # notifications keep coming while the listener vanishes
        n = 0
        while not stop.is_set():
            changes.publish(f"{uri}burst-{n}.md")
            n += 1
            time.sleep(0.01)

    teller = threading.Thread(target=tell)
    teller.start()
    try:
        time.sleep(0.3)
        reset_connection(sock)
        wait_until(nothing_held, seconds=5)
    finally:
        stop.set()
        teller.join()
    assert changes.interests(uri) == {}


def _hears(events: Events, path: Path, uri: str, seconds: float = 10.0) -> None:
    """Edit ``path`` until the stream is told of ``uri`` (a fresh watch's first look)."""
    stop = threading.Event()

    def edit() -> None:
        for n in range(int(seconds / 0.3)):
            path.write_text(f"edit {n}\n")
            if stop.wait(0.3):
                return

    editor = threading.Thread(target=edit)
    editor.start()
    try:
        while events.message()["params"]["uri"] != uri:
            pass
    finally:
        stop.set()
        editor.join()


def test_the_fs_watch_stopped_and_started_again_keeps_every_subscription(
    listen_url: str, checkout: Path
) -> None:
    uri = f"{FS}/docs/a.md"
    body = listen_body("w-1", resourceSubscriptions=[uri])
    with (
        stream_client(READ_SECONDS) as client,
        client.stream("POST", listen_url, json=body, headers=listen_headers()) as response,
    ):
        events = Events(response)
        events.message()
        wait_until(lambda: fswatch.SOURCE.watching == {"docs"})
        _hears(events, checkout / "docs" / "a.md", uri)
        fswatch.SOURCE.stop()  # the watch stops: nothing is watched, nobody is followed
        assert fswatch.SOURCE.watching == frozenset()
        # and starts again, told at once of the stream's interest (it used to wait forever on
        # its own lock as the bus told it): in a thread, so that a hang fails the test
        starting = threading.Thread(target=fswatch.SOURCE.start, daemon=True)
        starting.start()
        starting.join(timeout=10)
        assert not starting.is_alive(), "the fs watch did not start again"
        wait_until(lambda: fswatch.SOURCE.watching == {"docs"})
        _hears(events, checkout / "docs" / "a.md", uri)
    assert [roots for _, roots in fswatch.SOURCE.starts] == [frozenset({"docs"})] * 2


def test_a_watch_thread_that_fails_restarts_and_loses_no_subscription(
    listen_url: str, checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = f"{FS}/docs/a.md"
    fs_of = fswatch.FsSource._fs
    failed: list[str] = []

    def failing_once(self: fswatch.FsSource) -> Any:
        # a fault no test can provoke for real as root: the watch thread's own step raises
        if threading.current_thread().name == "tm-fs-watch" and not failed:
            failed.append("the checkout could not be read")
            raise RuntimeError(failed[0])
        return fs_of(self)

    body = listen_body("w-2", resourceSubscriptions=[uri])
    with (
        stream_client(READ_SECONDS) as client,
        client.stream("POST", listen_url, json=body, headers=listen_headers()) as response,
    ):
        events = Events(response)
        events.message()
        wait_until(lambda: fswatch.SOURCE.watching == {"docs"})
        _hears(events, checkout / "docs" / "a.md", uri)
        monkeypatch.setattr(fswatch.FsSource, "_fs", failing_once)
        got: list[changes.Change] = []
        remove = changes.add_listener(got.append)
        try:
            # a second root listened to: the watch restarts over both, and its thread fails
            with changes.listening([f"{FS}/data/"]):
                wait_until(lambda: bool(failed))
                _hears(events, checkout / "docs" / "a.md", uri)  # the first stream still hears
                (checkout / "data" / "b.md").write_text("b\n")
                wait_until(lambda: f"{FS}/data/b.md" in {c.uri for c in got})
        finally:
            remove()
    assert fswatch.SOURCE.failures == 1
    assert fswatch.SOURCE.starts[-1] == ("native", frozenset({"docs", "data"}))
