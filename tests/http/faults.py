"""A real loopback HTTP server that misbehaves on purpose, by Host and path.

It answers like a static site (robots.txt, sitemap.xml) for the site ``fault.example`` and then,
page by page, with what a hostile or broken front door can send: redirects to elsewhere, a gzip
body that inflates past any cap, an endless body, a slow drip, a body shorter than its length.
Two more sites break their auxiliary files: ``auxredirect.example`` (robots.txt redirects) and
``auxhuge.example`` (a sitemap far over the cap).
"""

from __future__ import annotations

import gzip
import socket
import socketserver
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

FAULT = "fault.example"
AUX_REDIRECT = "auxredirect.example"
AUX_HUGE = "auxhuge.example"
PAGES = ["/redirect-away", "/gzip-bomb", "/endless", "/slow", "/liar", "/error", "/fine", "/big"]
BOMB = gzip.compress(b"\0" * (64 * 1024 * 1024), compresslevel=9)
#: ``/slow`` drips its body a byte at a time: 200 bytes, 0.05 s apart, about 10 s in all. A reader
#: without a total deadline gets the whole page after that; with one, it gives up well before.
SLOW_BYTES = 200
SLOW_BYTES_EVERY = 0.05


def _sitemap(site: str, paths: list[str]) -> bytes:
    urls = "".join(f"<url><loc>https://{site}{p}</loc></url>" for p in paths)
    return (
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"{urls}</urlset>"
    ).encode()


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        try:
            request_line = self.rfile.readline(65537).decode("latin-1")
            headers: dict[str, str] = {}
            while True:
                line = self.rfile.readline(65537).decode("latin-1")
                if line in {"\r\n", "\n", ""}:
                    break
                key, _, value = line.partition(":")
                headers[key.strip().lower()] = value.strip()
            self.server.seen.append((headers.get("host", ""), request_line.split(" ")[1]))  # type: ignore[attr-defined]
            self.answer(headers.get("host", ""), request_line.split(" ")[1])
        except (BrokenPipeError, ConnectionResetError, OSError):
            return

    def send(self, status: str, headers: list[tuple[str, str]], body: bytes = b"") -> None:
        head = f"HTTP/1.1 {status}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
        self.wfile.write(head.encode() + b"\r\n" + body)

    def answer(self, host: str, path: str) -> None:
        if host == AUX_REDIRECT and path == "/robots.txt":
            return self.send("301 Moved", [("Location", "http://evil.example/robots.txt"),
                                           ("Content-Length", "0")])  # fmt: skip
        if host == AUX_HUGE and path == "/sitemap.xml":
            body = _sitemap(AUX_HUGE, [f"/p{i}" for i in range(40_000)])
            return self.send("200 OK", [("Content-Type", "application/xml"),
                                        ("Content-Length", str(len(body)))], body)  # fmt: skip
        if path == "/robots.txt":
            body = b"User-agent: *\nDisallow:\n"
            return self.send("200 OK", [("Content-Type", "text/plain"),
                                        ("Content-Length", str(len(body)))], body)  # fmt: skip
        if path == "/sitemap.xml":
            body = _sitemap(host, PAGES)
            return self.send("200 OK", [("Content-Type", "application/xml"),
                                        ("Content-Length", str(len(body)))], body)  # fmt: skip
        if path == "/.well-known/tm-manifest.json":
            return self.send("404 Not Found", [("Content-Length", "0")])
        html = [("Content-Type", "text/html; charset=utf-8")]
        if path == "/redirect-away":
            return self.send("302 Found", [("Location", "http://evil.example/steal"),
                                           ("Content-Length", "0")])  # fmt: skip
        if path == "/gzip-bomb":
            return self.send("200 OK", [*html, ("Content-Encoding", "gzip"),
                                        ("Content-Length", str(len(BOMB)))], BOMB)  # fmt: skip
        if path == "/endless":
            self.send("200 OK", [*html, ("Transfer-Encoding", "chunked")])
            chunk = b"<p>" + b"x" * 16000 + b"</p>"
            sent = 0
            try:
                while True:
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    sent += len(chunk)
            finally:
                self.server.endless_sent.append(sent)  # type: ignore[attr-defined]
        if path == "/slow":
            self.send("200 OK", [*html, ("Content-Length", str(SLOW_BYTES))])
            for left in range(SLOW_BYTES, 0, -1):
                if left == 1:  # set before the last byte leaves, so no reader can be ahead of it
                    self.server.slow_finished.set()  # type: ignore[attr-defined]
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(SLOW_BYTES_EVERY)
            return None
        if path == "/liar":
            return self.send("200 OK", [*html, ("Content-Length", "1000")], b"<main>short</main>")
        if path == "/error":
            return self.send("503 Unavailable", [*html, ("Content-Length", "0")])
        if path == "/big":
            body = b"<main>" + b"y" * (5 * 1024 * 1024) + b"</main>"
            return self.send("200 OK", [*html, ("Content-Length", str(len(body)))], body)
        body = b"<html><head><title>Fine</title></head><body><main><p>fine</p></main></body></html>"
        return self.send("200 OK", [*html, ("Content-Length", str(len(body)))], body)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.seen: list[tuple[str, str]] = []
        #: Bytes of ``/endless`` body each connection had taken when its reader went away.
        self.endless_sent: list[int] = []
        #: Set as the last byte of ``/slow`` is sent: a reader has waited for the whole drip.
        self.slow_finished = threading.Event()


@contextmanager
def fault_server() -> Iterator[_Server]:
    server = _Server()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def recorded_connections() -> Iterator[list[tuple[str, int]]]:
    """Every address a socket is connected to while inside the block."""
    seen: list[tuple[str, int]] = []
    original = socket.create_connection

    def recording(address, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append((address[0], address[1]))
        return original(address, *args, **kwargs)

    socket.create_connection = recording  # type: ignore[assignment]
    try:
        yield seen
    finally:
        socket.create_connection = original  # type: ignore[assignment]
