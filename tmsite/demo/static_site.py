"""A small static file server for a site the box serves but did not build.

The demo site in ``demo_sites/`` and the tests use it: ``python -m tmsite.demo.static_site DIR
--port N``. GET and HEAD of the regular files under one directory; nothing else.
"""

from __future__ import annotations

import argparse
import os
import stat as stat_module
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from typing_extensions import override

from tmsite import mime


def _content_type(name: str) -> str:
    if name.endswith((".html", ".htm")):
        return "text/html; charset=utf-8"
    found = mime.by_name(name) or mime.OCTET_STREAM
    if found.startswith("text/") or found in {"application/json", "application/xml"}:
        return f"{found}; charset=utf-8"
    return found


_NOT_FOUND = b"<!doctype html><title>Not found</title><p>Not found.\n"


class StaticHandler(BaseHTTPRequestHandler):
    """GET and HEAD of the regular files under one directory; nothing else."""

    root: Path
    server_version = "tm-static/1"
    protocol_version = "HTTP/1.1"

    @override
    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_HEAD(self) -> None:
        """Answer HEAD: the headers GET would send, no body."""
        self._answer(head=True)

    def do_GET(self) -> None:
        """Answer GET: the file, a 301 to a directory's slash form, or a 404."""
        self._answer(head=False)

    def _answer(self, head: bool) -> None:
        target = self._file()
        if isinstance(target, tuple):
            status, location = target
            body = b"" if status == 301 else _NOT_FOUND
            content_type = "text/html; charset=utf-8"
        else:
            status, location = 200, None
            body, content_type = target.read_bytes(), _content_type(target.name)
        self.send_response(status)
        if location:
            self.send_header("Location", location)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _file(self) -> Path | tuple[int, str | None]:
        """The regular file the request names, or the (status, Location) to answer instead.

        404 for anything refused or absent; 301 to the slash form of a directory's address.
        """
        path = unquote(urlsplit(self.path).path)
        real = _resolve(self.root, path.split("/")[1:])
        if real is None:
            return 404, None
        if real.is_dir():
            if not path.endswith("/"):
                return 301, path + "/"
            real = real / "index.html"
        return real if _is_regular(real) else (404, None)


def _resolve(root: Path, segments: list[str]) -> Path | None:
    """The real path ``segments`` name under ``root``, or None when refused or absent.

    Refused: a dot segment, a backslash or NUL, a hidden name (but ``.well-known``), and any
    path whose real location (symlinks followed) is outside ``root``.
    """
    if any(s in {".", ".."} or "\\" in s or "\x00" in s for s in segments):
        return None
    if any(s.startswith(".") and s != ".well-known" for s in segments if s):
        return None
    candidate = root.joinpath(*[s for s in segments if s])
    try:
        real = candidate.resolve(strict=True)
    except OSError:
        return None
    return real if real.is_relative_to(root) else None


def _is_regular(path: Path) -> bool:
    """Whether ``path`` is a regular file (never a device, pipe or socket)."""
    try:
        info = os.stat(path)
    except OSError:
        return False
    return stat_module.S_ISREG(info.st_mode)


def server(directory: Path, port: int = 0, host: str = "127.0.0.1") -> ThreadingHTTPServer:
    """A static server for ``directory`` bound to ``host:port`` (0: any free port), not started."""
    root = directory.resolve()
    handler = type("Handler", (StaticHandler,), {"root": root})
    httpd = ThreadingHTTPServer((host, port), handler)
    httpd.daemon_threads = True
    return httpd


def serve(directory: Path, port: int, host: str = "127.0.0.1") -> None:
    """Serve ``directory`` until interrupted."""
    httpd = server(directory, port, host)
    try:
        httpd.serve_forever()
    finally:
        httpd.server_close()


def main(argv: list[str] | None = None) -> None:
    """The command line: ``DIR [--port N] [--host H]``; serves until interrupted."""
    parser = argparse.ArgumentParser(description="Serve a static site on loopback.")
    parser.add_argument("directory", type=Path)
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args(argv)
    try:
        serve(args.directory, args.port, args.host)
    except OSError as exc:  # the port is taken, most often: one line, not a traceback
        sys.exit(f"static_site: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}")
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":  # pragma: no cover
    main()
