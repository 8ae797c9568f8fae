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

A small static file server for such a site (the demo site in ``demo_sites/``, the tests) is
:mod:`tmsite.demo.static_site`.

Spec: HTTP.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit
from xml.etree import ElementTree

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
    """One ``Allow`` or ``Disallow`` line: a path pattern with ``*`` and a final ``$``."""

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
    """The rules that apply to us, or ``fence_all`` (the reason) when none can be trusted."""

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
    groups = _robots_groups(text)
    chosen: list[Rule] = []
    for wanted in (agent.lower(), "*"):
        for group_agents, group_rules in groups:
            if wanted in group_agents:
                chosen.extend(group_rules)
        if chosen:
            break
    return Robots(tuple(chosen))


def _robots_groups(text: str) -> list[tuple[list[str], list[Rule]]]:
    """The groups of a robots.txt in order: (its user agents, lower-cased; its rules)."""
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
    return groups


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
    """What the manifest says of one listed page: its title, the files it is made of, its size."""

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
