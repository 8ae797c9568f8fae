"""Faults of listen streams: a listener that vanishes mid-stream, the fs watch restarting.

The box is served by ``tmsite.serve.app`` on loopback in this process (so its caps and interest
can be read), a real checkout edited during the test; the vanishing listener is a raw socket
closed with a reset (``SO_LINGER`` 0), as a client that crashed or lost its network does.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.subscriptions.helpers import Events, listen_body, listen_headers
from tmsite.mounts import registry
from tmsite.subscriptions import changes, fswatch, listen

pytestmark = [pytest.mark.spec("SUB1", "SUB3"), pytest.mark.slow]

HOST = "tinymachines"
FS = f"tm://{HOST}/fs"
READ_SECONDS = 8.0


@pytest.fixture
def checkout(tmp_path: Path, settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("TM_FS_WATCH", "native")
    # no keep-alive comes: a stream that is told nothing times its read out (READ_SECONDS)
    monkeypatch.setenv("TM_LISTEN_KEEPALIVE", "60")
    root = tmp_path / "box"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.md").write_text("# a\n")
    (root / "data").mkdir()
    settings.TM_CHECKOUT = root
    settings.TM_FS_ROOTS = ["docs", "data"]
    settings.TM_HOST = HOST
    registry.reset()
    fswatch.SOURCE.starts.clear()
    yield root
    fswatch.SOURCE.stop()
    registry.reset()


def _until(predicate: Any, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


def _raw_listen(url: str, body: dict[str, Any]) -> tuple[socket.socket, bytes]:
    """A listen over a raw socket; returns it once the acknowledgement arrived, and what came."""
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80), timeout=10)
    payload = json.dumps(body).encode()
    head = "".join(f"{k}: {v}\r\n" for k, v in listen_headers().items())
    sock.sendall(
        f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\n{head}"
        f"Content-Length: {len(payload)}\r\n\r\n".encode()
        + payload
    )
    got = b""
    while b"notifications/subscriptions/acknowledged" not in got:
        chunk = sock.recv(65536)
        assert chunk, f"the stream ended before its acknowledgement: {got!r}"
        got += chunk
    return sock, got


def _reset(sock: socket.socket) -> None:
    """Close with a reset, not a goodbye: the listener vanished."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def _nothing_held() -> bool:
    return listen.SLOTS.status() == {"streams": 0, "uris": 0, "callers": 0}


def test_a_listener_reset_while_idle_frees_its_slot_and_interest(
    listen_url: str, checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = f"{FS}/docs/a.md"
    sock, got = _raw_listen(listen_url, listen_body("v-1", resourceSubscriptions=[uri]))
    assert b" 200 " in got.split(b"\r\n", 1)[0]
    _until(lambda: changes.interests(uri).get(uri) == 1)
    assert listen.SLOTS.status() == {"streams": 1, "uris": 1, "callers": 1}
    _reset(sock)
    _until(_nothing_held, seconds=5)
    assert changes.interests(uri) == {}
    _until(lambda: fswatch.SOURCE.watching == frozenset(), seconds=5)


def test_a_listener_reset_while_being_told_frees_its_slot_and_interest(
    listen_url: str, checkout: Path
) -> None:
    uri = f"{FS}/docs/"
    sock, _ = _raw_listen(listen_url, listen_body("v-2", resourceSubscriptions=[uri]))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # the server's writes back up
    _until(lambda: changes.interests(uri).get(uri) == 1)
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
        _reset(sock)
        _until(_nothing_held, seconds=5)
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
        httpx.Client(timeout=httpx.Timeout(20, read=READ_SECONDS)) as client,
        client.stream("POST", listen_url, json=body, headers=listen_headers()) as response,
    ):
        events = Events(response)
        events.message()
        _until(lambda: fswatch.SOURCE.watching == {"docs"})
        _hears(events, checkout / "docs" / "a.md", uri)
        fswatch.SOURCE.stop()  # the watch stops: nothing is watched, nobody is followed
        assert fswatch.SOURCE.watching == frozenset()
        # and starts again, told at once of the stream's interest (it used to wait forever on
        # its own lock as the bus told it): in a thread, so that a hang fails the test
        starting = threading.Thread(target=fswatch.SOURCE.start, daemon=True)
        starting.start()
        starting.join(timeout=10)
        assert not starting.is_alive(), "the fs watch did not start again"
        _until(lambda: fswatch.SOURCE.watching == {"docs"})
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
        httpx.Client(timeout=httpx.Timeout(20, read=READ_SECONDS)) as client,
        client.stream("POST", listen_url, json=body, headers=listen_headers()) as response,
    ):
        events = Events(response)
        events.message()
        _until(lambda: fswatch.SOURCE.watching == {"docs"})
        _hears(events, checkout / "docs" / "a.md", uri)
        monkeypatch.setattr(fswatch.FsSource, "_fs", failing_once)
        got: list[changes.Change] = []
        remove = changes.add_listener(got.append)
        try:
            # a second root listened to: the watch restarts over both, and its thread fails
            with changes.listening([f"{FS}/data/"]):
                _until(lambda: bool(failed))
                _hears(events, checkout / "docs" / "a.md", uri)  # the first stream still hears
                (checkout / "data" / "b.md").write_text("b\n")
                _until(lambda: f"{FS}/data/b.md" in {c.uri for c in got})
        finally:
            remove()
    assert fswatch.SOURCE.failures == 1
    assert fswatch.SOURCE.starts[-1] == ("native", frozenset({"docs", "data"}))
