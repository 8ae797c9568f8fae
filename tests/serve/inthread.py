"""The ASGI application (``tmsite.serve.app``) served on loopback from a thread of the tests.

uvicorn runs it in the test process, so a test's ``settings`` and ``monkeypatch`` reach the
server as they reach Django's ``live_server``; the request threads use the test database.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from tmsite.serve.app import Application


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def served(app: Application) -> Iterator[str]:
    """``app`` on a free loopback port (its base URL) until the block ends."""
    port = free_port()
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        http="httptools",
        loop="asyncio",
        lifespan="on",
        log_level="warning",
        access_log=False,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="tm-test-asgi", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the in-thread ASGI server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        asyncio.set_event_loop(None)
