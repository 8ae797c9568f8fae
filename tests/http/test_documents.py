"""The built site's pages in the search index, as a visitor reads them (``?as=text``).

Spec: SRCH2, HTTP.
"""

from __future__ import annotations

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.http.conftest import DEMO, HOST, SITE, configure, uri, write
from tmsite.core.parts import to_text
from tmsite.mounts import registry
from tmsite.mounts.http import mount as http_mount
from tmsite.mounts.namespace import Namespace
from tmsite.search import index
from tmsite.search.engines import Found
from tmsite.search.query import parse_query

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.spec("SRCH2", "HTTP")]


def found(ns: Namespace, words: str) -> list[Found]:
    index.sync({"http": ns.mounts["http"]})
    return index.search(parse_query(words), f"tm://{HOST}/http/", (), 10)


def test_a_page_is_found_by_its_visitor_text_and_its_hit_reads_that_passage(
    ns: Namespace,
) -> None:
    (hit, *_) = found(ns, "what is in the pile")
    page = uri(SITE, "docs", "nes", "pile")
    assert hit.uri == page and hit.kind == "page"
    assert hit.address.startswith(page + "?lines=")
    assert to_text(ns.read(hit.address).body).rstrip("\n") == hit.body
    assert "What is in the pile." in hit.body
    assert [h.uri for h in found(ns, "スプライト")] == [uri(SITE, "ja", "docs", "nes", "pile")]


def test_a_changed_document_is_found_again_and_a_static_sites_pages_never(
    ns: Namespace, checkout: Path
) -> None:
    assert not any(h.uri.startswith(uri(DEMO)) for h in found(ns, "demo tinymachines"))
    assert all(not d.uri.startswith(uri(DEMO)) for d in ns.mounts["http"].documents())
    assert found(ns, "quokka") == []
    write(checkout, "docs/nes/alone.md", "# Alone\n\nA quokka, only in English.\n")
    hits = [h.uri for h in found(ns, "quokka")]
    assert uri(SITE, "docs", "nes", "alone") in hits
    again = index.sync({"http": ns.mounts["http"]})
    assert again.written == 0


class FlakyDoor(ThreadingHTTPServer):
    """A front door before the live site that answers 503 while ``down`` holds."""

    down = True

    def __init__(self, behind: str) -> None:
        super().__init__(("127.0.0.1", 0), _Relay)
        self.behind = urlsplit(behind)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Relay(BaseHTTPRequestHandler):
    server: FlakyDoor

    def do_GET(self) -> None:
        if self.server.down:
            self.send_error(503)
            return
        behind = self.server.behind
        upstream = http.client.HTTPConnection(behind.hostname or "", behind.port, timeout=10)
        upstream.request("GET", self.path, headers={"Host": self.headers["Host"]})
        reply = upstream.getresponse()
        body = reply.read()
        self.send_response(reply.status)
        for name in ("Content-Type", "Location"):
            if reply.getheader(name):
                self.send_header(name, reply.getheader(name) or "")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        upstream.close()

    def log_message(self, format: str, *args: Any) -> None:
        return


def test_a_page_that_failed_to_fetch_is_fetched_again_later(
    live_server: Any, settings: Any, checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(checkout, "docs/nes/alone.md", "# Alone\n\nA quokka, only in English.\n")
    door = FlakyDoor(live_server.url)
    threading.Thread(target=door.serve_forever, daemon=True).start()
    try:
        configure(settings, door.url, None, checkout)
        registry.reset()
        http = registry.namespace().mounts["http"]
        alone = uri(SITE, "docs", "nes", "alone")
        first = index.sync({"http": http})
        assert alone in first.changed  # offered by its address alone: the door was down
        door.down = False
        assert index.sync({"http": http}).written == 0  # not yet: a failure waits its turn
        assert index.search(parse_query("quokka"), f"tm://{HOST}/http/", (), 10) == []
        monkeypatch.setattr(http_mount, "RETRY_SECONDS", 0.0)
        again = index.sync({"http": http})
        assert alone in again.changed
        hits = index.search(parse_query("quokka"), f"tm://{HOST}/http/", (), 10)
        assert alone in [hit.uri for hit in hits]
        assert index.sync({"http": http}).written == 0  # fetched: its stamp holds again
    finally:
        door.shutdown()
        door.server_close()
        registry.reset()
