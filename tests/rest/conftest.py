"""Fixtures for the REST routes: the namespace over a real checkout, pieces hosted on loopback.

The checkout and the process namespace are the namespace tests' own fixtures; the fake clock and
the small rate limit are the operating tests' own. New here: every test reads a copy of the
shipped pieces record whose public URLs point at a real HTTP server on 127.0.0.1, started for
the test, so every probe a route or a tool makes is a real ``HEAD`` (and ``GET``) that reaches
it, and no probe leaves the machine. The server answers per piece as ``ANSWERS`` says.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.namespace.conftest import checkout, process_namespace  # noqa: F401  (fixtures)
from tests.oplog.conftest import clock, small_limit  # noqa: F401  (fixtures)
from tmsite.operations import probes

SHIPPED = Path(__file__).resolve().parents[2] / "data" / "pieces.json"
#: The hosted pieces in the record's order, and what each one's host answers to ``HEAD``:
#: a status (``GET`` gets 200 after a 405). Any other hosted piece's host answers 200.
ANSWERS = {1: 503, 2: 405}


class _Hosts(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self) -> None:
        self.statuses: dict[str, int] = {}
        self.hits: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Host)


class _Host(BaseHTTPRequestHandler):
    server: _Hosts

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self, status: int) -> None:
        with self.server.lock:
            self.server.hits.append((self.command, self.path))
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_HEAD(self) -> None:
        self._answer(self.server.statuses.get(self.path, 404))

    def do_GET(self) -> None:
        self._answer(200 if self.path in self.server.statuses else 404)


@dataclass
class Hosts:
    """The loopback hosts of the hosted pieces.

    Attributes:
        base: The server's base URL.
        urls: Each hosted piece's public URL, by key.
        head_status: What each public URL answers to ``HEAD``.
    """

    base: str
    server: _Hosts
    monkeypatch: pytest.MonkeyPatch
    urls: dict[str, str] = field(default_factory=dict)
    head_status: dict[str, int] = field(default_factory=dict)

    def measured(self) -> list[str]:
        """Every public URL a probe measured (one ``HEAD`` each), in order, repeats kept."""
        with self.server.lock:
            return [self.base + path for method, path in self.server.hits if method == "HEAD"]

    def pin(self, instant: datetime) -> None:
        """Stamp every measurement from now on with ``instant`` (the probes stay real)."""
        self.monkeypatch.setattr(probes, "_now", lambda: instant)


@pytest.fixture(autouse=True)
def hosts(
    settings: Any, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Hosts]:
    """The shipped record with every public URL on a loopback server; probes kept for an hour,
    so how often each URL was measured shows in ``measured()``."""
    server = _Hosts()
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    found = Hosts(f"http://{host!s}:{port}", server, monkeypatch)
    record = json.loads(SHIPPED.read_text(encoding="utf-8"))
    hosted = [piece for piece in record["pieces"] if piece["public_url"] is not None]
    assert len(hosted) > max(ANSWERS), "the shipped record hosts the pieces ANSWERS names"
    for index, piece in enumerate(hosted):
        path = f"/{piece['key']}"
        piece["public_url"] = found.urls[piece["key"]] = found.base + path
        server.statuses[path] = found.head_status[found.base + path] = ANSWERS.get(index, 200)
    written = tmp_path_factory.mktemp("pieces") / "pieces.json"
    written.write_text(json.dumps(record), encoding="utf-8")
    settings.TM_PIECES_FILE = written
    settings.TM_PROBE_CACHE_SECONDS = 3600
    probes.clear_cache()
    yield found
    probes.clear_cache()
    server.shutdown()
    server.server_close()
