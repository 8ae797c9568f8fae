"""Sites the box serves but did not build: their sitemap, their robots.txt, their manifest.

Such a site is known only by what it publishes:

* ``/sitemap.xml`` lists its pages (``<url><loc>``) and the images they show
  (``<image:image><image:loc>``). A path not in it is not offered, and is refused before any
  request is made for it.
* ``/robots.txt`` fences it (RFC 9309: the group for our agent or ``*``, longest match wins,
  ``Allow`` on a tie, ``*`` and ``$`` patterns). A path under a ``Disallow`` is refused
  ``denied`` with the rule. A robots.txt that is missing (4xx) fences nothing; one that cannot
  be read (5xx, redirect, too large, timeout) fences everything: no page is read blind.
* ``/.well-known/tm-manifest.json`` may describe listed pages — ``{"pages": {"/path": {"title":
  …, "files": […], "size": n}}}`` — with titles, the files that make each page and the size
  it serves (listed as the site states it). It never adds a page.

The module also holds :func:`serve`, a small static file server for such a site (the demo site
in ``demo_sites/`` and the tests use it): ``python -m tmsite.mounts.http_static DIR --port N``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import stat as stat_module
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit
from xml.etree import ElementTree

from tmsite import mime

AGENT = "tmsite"
ROBOTS = "/robots.txt"
SITEMAP = "/sitemap.xml"
MANIFEST = "/.well-known/tm-manifest.json"
#: The most bytes an auxiliary file (robots, sitemap, manifest) may have.
AUX_CAP = 1024 * 1024
_NS = {
    "sm": "http://www.sitemaps.org/schemas/sitemap/0.9",
    "image": "http://www.google.com/schemas/sitemap-image/1.1",
}


class AuxError(Exception):
    """An auxiliary file that cannot be used (the message says why)."""


# ---- robots.txt ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    allow: bool
    pattern: str

    def __str__(self) -> str:
        return f"{'Allow' if self.allow else 'Disallow'}: {self.pattern}"

    def matches(self, path: str) -> int:
        """The length of the match (the pattern's length), or -1."""
        regex = "".join(
            ".*"
            if ch == "*"
            else "$"
            if ch == "$" and i == len(self.pattern) - 1
            else re.escape(ch)
            for i, ch in enumerate(self.pattern)
        )
        return len(self.pattern) if re.match(regex, path) else -1


@dataclass(frozen=True)
class Robots:
    rules: tuple[Rule, ...] = ()
    fence_all: str | None = None

    def refusal(self, path: str) -> str | None:
        """The rule that refuses ``path``, or None when it may be read."""
        if self.fence_all is not None:
            return self.fence_all
        best: Rule | None = None
        best_length = -1
        for rule in self.rules:
            length = rule.matches(path)
            if length > best_length or (length == best_length and rule.allow):
                best, best_length = rule, length
        if best is not None and not best.allow:
            return str(best)
        return None


def parse_robots(text: str, agent: str = AGENT) -> Robots:
    """The rules of the group for ``agent``, else of ``*`` (RFC 9309)."""
    groups: list[tuple[list[str], list[Rule]]] = []
    agents: list[str] = []
    rules: list[Rule] = []
    in_rules = False
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if ":" not in line:
            continue
        key, _, value = line.partition(":")
        key, value = key.strip().lower(), value.strip()
        if key == "user-agent":
            if in_rules:
                groups.append((agents, rules))
                agents, rules, in_rules = [], [], False
            agents.append(value.lower())
        elif key in {"allow", "disallow"}:
            in_rules = True
            if value:
                rules.append(Rule(key == "allow", value))
    if agents:
        groups.append((agents, rules))
    chosen: list[Rule] = []
    for wanted in (agent.lower(), "*"):
        for group_agents, group_rules in groups:
            if wanted in group_agents:
                chosen.extend(group_rules)
        if chosen:
            break
    return Robots(tuple(chosen))


# ---- sitemap.xml -----------------------------------------------------------------------------


def parse_sitemap(body: bytes, site: str) -> list[str]:
    """The paths of ``site`` a sitemap lists (pages and their images), in order, unique.

    Raises:
        AuxError: not a sitemap this server reads (a DOCTYPE, bad XML, an index).
    """
    head = body[:4096].lower()
    if b"<!doctype" in head or b"<!entity" in body.lower():
        raise AuxError("the sitemap declares a DOCTYPE or entities, which are not read")
    try:
        root = ElementTree.fromstring(body)
    except ElementTree.ParseError as exc:
        raise AuxError(f"the sitemap is not well-formed XML: {exc}") from exc
    if root.tag.endswith("sitemapindex"):
        raise AuxError("the sitemap is an index of sitemaps, which is not read")
    found: dict[str, None] = {}
    for url in root.iterfind("sm:url", _NS):
        for loc in [url.find("sm:loc", _NS), *url.iterfind("image:image/image:loc", _NS)]:
            if loc is None or not loc.text:
                continue
            path = site_path(loc.text.strip(), site)
            if path is not None:
                found.setdefault(path)
    return list(found)


def site_path(url: str, site: str) -> str | None:
    """The decoded path of ``url`` when it is on ``site`` (any scheme), else None."""
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"} or (parts.hostname or "") != site.lower():
        return None
    if parts.port is not None or parts.username or parts.query or parts.fragment:
        return None
    path = unquote(parts.path or "/")
    return path if path.startswith("/") else None


# ---- the manifest ----------------------------------------------------------------------------


@dataclass(frozen=True)
class PageNote:
    title: str | None = None
    files: tuple[str, ...] = ()
    size: int | None = None


def parse_manifest(body: bytes, listed: set[str]) -> dict[str, PageNote]:
    """What the manifest says about listed pages (anything else it names is ignored).

    Raises:
        AuxError: not JSON of the manifest's shape.
    """
    try:
        data: Any = json.loads(body)
    except ValueError as exc:
        raise AuxError(f"the manifest is not JSON: {exc}") from exc
    pages = data.get("pages") if isinstance(data, dict) else None
    if not isinstance(pages, dict):
        raise AuxError('the manifest has no "pages" object')
    notes: dict[str, PageNote] = {}
    for path, about in pages.items():
        if path not in listed or not isinstance(about, dict):
            continue
        title = about.get("title")
        files = about.get("files")
        size = about.get("size")
        notes[path] = PageNote(
            title if isinstance(title, str) else None,
            tuple(f for f in files if isinstance(f, str)) if isinstance(files, list) else (),
            size if isinstance(size, int) and not isinstance(size, bool) and size >= 0 else None,
        )
    return notes


@dataclass
class SiteFacts:
    """What a static site publishes about itself, fetched at one time."""

    paths: list[str] = field(default_factory=list)
    robots: Robots = field(default_factory=Robots)
    notes: dict[str, PageNote] = field(default_factory=dict)
    manifest_problem: str | None = None


# ---- a static file server --------------------------------------------------------------------


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

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_HEAD(self) -> None:
        self._answer(head=True)

    def do_GET(self) -> None:
        self._answer(head=False)

    def _answer(self, head: bool) -> None:
        target = self._file()
        if isinstance(target, tuple):
            status, location = target
            body = (
                b"" if status == 301 else b"<!doctype html><title>Not found</title><p>Not found.\n"
            )
            self.send_response(status)
            if location:
                self.send_header("Location", location)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head:
                self.wfile.write(body)
            return
        data = target.read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", _content_type(target.name))
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if not head:
            self.wfile.write(data)

    def _file(self) -> Path | tuple[int, str | None]:
        path = unquote(urlsplit(self.path).path)
        segments = [s for s in path.split("/")[1:]]
        if any(s in {".", ".."} or "\\" in s or "\x00" in s for s in segments):
            return 404, None
        if any(s.startswith(".") and s != ".well-known" for s in segments if s):
            return 404, None
        candidate = self.root.joinpath(*[s for s in segments if s])
        try:
            real = candidate.resolve(strict=True)
        except OSError:
            return 404, None
        if not real.is_relative_to(self.root):
            return 404, None
        if real.is_dir():
            if not path.endswith("/"):
                return 301, path + "/"
            real = real / "index.html"
        try:
            info = os.stat(real)
        except OSError:
            return 404, None
        if not stat_module.S_ISREG(info.st_mode):
            return 404, None
        return real


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
    parser = argparse.ArgumentParser(description="Serve a static site on loopback.")
    parser.add_argument("directory", type=Path)
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args(argv)
    serve(args.directory, args.port, args.host)


if __name__ == "__main__":  # pragma: no cover
    main()
