"""Listen requests and the events of their streams, read over real loopback HTTP.

Also what the tests of the subscriptions set up alike: a box of their own (a temporary checkout
served by the fs mount), an HTTP client whose reads wait for a stream's events, a listen over a
raw socket that can vanish with a reset, waiting until something holds.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from tests.transport.transport_helpers import MODERN_META, STATELESS

SUB_ID = "io.modelcontextprotocol/subscriptionId"


def listen_body(rid: Any = "s-1", **notifications: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "subscriptions/listen",
        "params": {"notifications": notifications, "_meta": MODERN_META},
    }


def listen_headers(**more: str) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": STATELESS,
        "Mcp-Method": "subscriptions/listen",
        **more,
    }


class Events:
    """The events of an open SSE answer, one at a time: ``("message", json)`` or a comment."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._lines: Iterator[str] = response.iter_lines()

    def next(self) -> tuple[str, Any]:
        data: list[str] = []
        for line in self._lines:
            if line.startswith(":"):
                if not data:
                    return "comment", line[1:].strip()
                continue
            if not line:
                if data:
                    return "message", json.loads("\n".join(data))
                continue
            name, _, value = line.partition(":")
            if name == "data":
                data.append(value.removeprefix(" "))
        raise EOFError("the stream ended")

    def message(self) -> Any:
        """The next message, past any keep-alive comments."""
        while True:
            kind, value = self.next()
            if kind == "message":
                return value

    def rest(self) -> list[tuple[str, Any]]:
        """Every event until the stream ends."""
        out: list[tuple[str, Any]] = []
        while True:
            try:
                out.append(self.next())
            except EOFError:
                return out


# --- what the tests set up alike ---------------------------------------------------------------

#: The host the tests' boxes answer for.
HOST = "tinymachines"


def stream_client(read: float = 20.0) -> httpx.Client:
    """A client whose reads wait ``read`` seconds for a stream's next bytes."""
    return httpx.Client(timeout=httpx.Timeout(20, read=read))


def complete(rid: Any) -> dict[str, Any]:
    """The listen's own answer that ends its stream gracefully."""
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "result": {"resultType": "complete", "_meta": {SUB_ID: rid}},
    }


def end_streams() -> None:
    """End every stream this process serves, gracefully, in its event loop (the worker stops)."""
    from tmsite.streams import stream

    for loop in stream.loops():
        loop.call_soon_threadsafe(stream.close_all)


def nothing_held() -> bool:
    """Whether no stream and no subscribed URI holds a slot of this process's caps."""
    from tmsite.streams import listen

    return listen.SLOTS.status() == {"streams": 0, "uris": 0, "callers": 0}


def listening(uri: str) -> bool:
    """Whether the bus holds an interest in ``uri`` itself."""
    from tmsite.bus import changes

    return bool(changes.interests(uri).get(uri))


def write_files(root: Path, files: dict[str, str], dirs: tuple[str, ...] = ()) -> Path:
    """``root`` with each of ``files`` (path: text) and each of ``dirs`` made; returns ``root``."""
    for name in dirs:
        (root / name).mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@contextlib.contextmanager
def own_box(
    settings: Any,
    root: Path,
    roots: list[str],
    mounts: list[str] | None = None,
    *,
    fs_watch: bool = False,
    fresh_sources: bool = False,
) -> Iterator[Path]:
    """This process's namespace serving ``root`` (its top directories ``roots``) as ``HOST``.

    ``fs_watch``: the fs watch's record of starts is cleared first and the watch stopped after;
    ``fresh_sources``: the change sources are uninstalled before (the test's first stream
    installs them over this box) and after.
    """
    from tmsite.mounts import registry
    from tmsite.mounts.fs import watch as fswatch
    from tmsite.subscriptions import sources

    settings.TM_CHECKOUT = root
    settings.TM_FS_ROOTS = roots
    settings.TM_HOST = HOST
    if mounts is not None:
        settings.TM_MOUNTS = mounts
    registry.reset()
    if fs_watch:
        fswatch.SOURCE.starts.clear()
    if fresh_sources:
        sources.uninstall()
    try:
        yield root
    finally:
        if fresh_sources:
            sources.uninstall()
        if fs_watch:
            fswatch.SOURCE.stop()
        registry.reset()


def raw_listen(url: str, body: dict[str, Any]) -> socket.socket:
    """A listen POSTed to ``url`` over a raw socket (HTTP/1.1), its answer left to read."""
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80), timeout=10)
    payload = json.dumps(body).encode()
    head = "".join(f"{k}: {v}\r\n" for k, v in listen_headers().items())
    sock.sendall(
        f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\n{head}"
        f"Content-Length: {len(payload)}\r\n\r\n".encode()
        + payload
    )
    return sock


def reset_connection(sock: socket.socket) -> None:
    """Close with a reset, not a goodbye: the listener vanished."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()
