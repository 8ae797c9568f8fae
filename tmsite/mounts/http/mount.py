"""The ``http`` mount: the pages of the sites this box serves, as a visitor gets them.

``tm://<host>/http/<site>/<path>`` — ``<site>`` is one of the configured sites (``TM_SITES``),
never an address: every fetch connects to that site's front door on loopback and names the site
only in ``Host`` (and SNI). Two kinds of site:

* ``self`` — this Django project's own site. Its pages are listed from the page rule and the
  page families (:func:`~tmsite.mounts.http.pages.site_pages`), not crawled; a page links to
  the markdown it is rendered from, to the view module that renders it (Django's resolver),
  and — read with :mod:`ast` — to the records its code reads
  (:mod:`tmsite.mounts.http.sitegraph`).
* ``static`` — a site the box serves but did not build: listed from its ``sitemap.xml``, fenced
  by its ``robots.txt``, described by its ``/.well-known/tm-manifest.json``
  (:mod:`tmsite.mounts.http.site`).

Representations (``?as=``):

* ``text`` (the default for HTML): the readable text of ``<main>``, ``text/vnd.tm.page``;
* ``rendered``: ``application/vnd.tm.rendered+json`` — ``status``, ``headers`` (in order, as
  received; ``Set-Cookie`` values withheld) and ``body``, the HTML as text. JSON keeps the
  headers and the bytes in one read a client can trust; ``?as=raw`` is the HTML alone;
* ``stat``: status, type, size, fetched time and title, from a GET that stops after 64 KiB;
* ``raw`` (the default for anything but HTML): the body as itself, with its own type.

A 3xx is ``redirect`` (never followed), a 404 ``not-found`` with the nearest pages, any other
status of 400 or more, or a failed fetch, ``unreachable``, the deadline ``timeout``.

Spec: HTTP, NS3, LK2.
"""

from __future__ import annotations

import builtins
import os
import re
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote, urljoin

from django.conf import settings
from django.core import checks
from typing_extensions import override

from tmsite import mime
from tmsite.check_registry import check
from tmsite.core import work
from tmsite.core.errors import (
    BadFacet,
    BadUri,
    Binary,
    Denied,
    NotFound,
    Redirect,
    Refusal,
    Timeout,
    Unreachable,
)
from tmsite.core.facets import parse_facets
from tmsite.core.links import Confidence, Link
from tmsite.core.parts import too_large
from tmsite.core.types import Content, Document, Entry, Listing, Request, Stat, Template, vnd
from tmsite.core.uri import TmUri
from tmsite.mounts.base import ChangeSource, Mount, Watching, unknown_argument, whole_stat
from tmsite.mounts.fs import uris as fs_uris
from tmsite.mounts.git import uris as git_uris
from tmsite.mounts.http import pages
from tmsite.mounts.http import sitegraph as graph
from tmsite.mounts.http import uris as http_uris
from tmsite.mounts.http.extract import decode, page_text, page_title
from tmsite.mounts.http.fetch import (
    PROCESS_BUDGET,
    Fetched,
    Fetcher,
    FetchFailed,
    FrontDoor,
    worker_threads,
)
from tmsite.mounts.http.site import (
    AUX_CAP,
    MANIFEST,
    ROBOTS,
    SITEMAP,
    AuxError,
    Robots,
    SiteFacts,
    parse_manifest,
    parse_robots,
    parse_sitemap,
    site_path,
)
from tmsite.mounts.http.watch import PageWatcher, tick
from tmsite.search.passages import digest

#: The type of a page read as text.
PAGE_TYPE = "text/vnd.tm.page"
RENDERED_TYPE = vnd("rendered")
PAGE_FACETS = ("text", "rendered", "stat", "raw")
_PAGE_PARAMS = ("as", "lines", "range", "pointer")
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
#: Bytes a stat reads at most (the title is in the first of them).
STAT_CAP = 64 * 1024
DEFAULT_DEADLINE = 10.0
DEFAULT_BODY_CAP = 4 * 1024 * 1024
DEFAULT_FRONT_DOOR = "http://127.0.0.1:8000"
DEFAULT_SITE = "tinymachines.ai"
DEMO_SITE = "demo.tinymachines.ai"
DEMO_FRONT_DOOR = "http://127.0.0.1:8001"
#: Seconds what a static site publishes about itself (robots, sitemap, manifest) is kept.
DEFAULT_AUX_TTL = 30.0
#: Seconds before a page the index could not fetch is offered to it again.
RETRY_SECONDS = 60.0
#: Seconds the set of the site's non-document pages is kept (page families may be large).
FAMILY_TTL = 5.0
_SITE_NAME = re.compile(
    r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*"
)
LANGUAGE_NAMES = {"en": "English", "ja": "Japanese"}
_WITHHELD_HEADERS = frozenset({"set-cookie"})


@dataclass(frozen=True)
class Site:
    """One configured site.

    Attributes:
        name: Its host name: the ``<site>`` segment, ``Host`` and SNI.
        kind: ``self`` (this project's site) or ``static`` (served, not built, here).
        door: Where its pages are fetched from.
        scheme: How visitors reach it (redirect targets are resolved against it).
        verify: Verify the front door's certificate against the name (https).
        ca_file: A PEM file of the authorities to trust for that certificate instead of the
            system's (a box's own authority in front of its loopback door).
    """

    name: str
    kind: str
    door: FrontDoor
    scheme: str = "https"
    verify: bool = True
    ca_file: str | None = None


def sites_from_settings() -> list[Site]:
    """The sites of ``TM_SITES`` (or the default: this project's site and the demo site).

    Raises:
        ValueError: a site name that is not a lower-case host name, an unknown kind or scheme,
            a front door that is not a loopback http(s) URL, or a ``ca_file`` that is no file.
    """
    door = str(getattr(settings, "TM_FRONT_DOOR", DEFAULT_FRONT_DOOR))
    configured = getattr(settings, "TM_SITES", None)
    if configured is None:
        configured = {
            str(getattr(settings, "TM_SITE_HOST", DEFAULT_SITE)): {"kind": "self"},
            DEMO_SITE: {"kind": "static", "front_door": DEMO_FRONT_DOOR},
        }
    if not isinstance(configured, Mapping):
        raise ValueError("TM_SITES must map site names to {kind, front_door, …}")
    sites: list[Site] = []
    for name, about in configured.items():
        if not isinstance(name, str) or not _SITE_NAME.fullmatch(name):
            raise ValueError(f"TM_SITES: {name!r} is not a lower-case host name")
        if not isinstance(about, Mapping):
            raise ValueError(f"TM_SITES[{name!r}] must be a mapping such as {{'kind': 'self'}}")
        kind = str(about.get("kind", "self"))
        if kind not in {"self", "static"}:
            raise ValueError(f"TM_SITES[{name!r}]: kind is self or static, not {kind!r}")
        scheme = str(about.get("scheme", "https"))
        if scheme not in {"http", "https"}:
            raise ValueError(f"TM_SITES[{name!r}]: scheme is http or https, not {scheme!r}")
        site_door = FrontDoor.parse(str(about.get("front_door", door)))
        ca_file = about.get("ca_file")
        if ca_file is not None and not os.path.isfile(ca_file):
            raise ValueError(f"TM_SITES[{name!r}]: ca_file {ca_file!r} is not a file")
        verify = bool(about.get("verify", True))
        sites.append(Site(name, kind, site_door, scheme, verify, ca_file))
    return sites


@check
def check_sites() -> builtins.list[checks.CheckMessage]:
    """``tm.E020``: ``TM_SITES`` and ``TM_FRONT_DOOR`` describe sites the mount can read."""
    try:
        sites_from_settings()
    except ValueError as exc:
        return [
            checks.Error(
                str(exc),
                hint="a site is a lower-case host name with kind self or static and a "
                "front door on loopback, such as http://127.0.0.1:8000",
                id="tm.E020",
            )
        ]
    return []


def self_fetch_limit() -> int:
    """``TM_HTTP_SELF_FETCHES``, else one less than gunicorn's ``--threads``, else 4."""
    configured = getattr(settings, "TM_HTTP_SELF_FETCHES", None)
    if configured is not None:
        return int(configured)
    threads = worker_threads()
    return max(0, threads - 1) if threads is not None else 4


@dataclass
class _Node:
    """A collection of a site: its sub-collections and its pages."""

    dirs: dict[str, _Node] = field(default_factory=dict)
    leaves: dict[str, str] = field(default_factory=dict)  # name → url path
    is_page: bool = False

    def find(self, segments: Sequence[str]) -> _Node | None:
        node: _Node | None = self
        for segment in segments:
            node = node.dirs.get(segment) if node is not None else None
        return node


def _tree(paths: Sequence[str]) -> _Node:
    root = _Node()
    for path in paths:
        segments = [s for s in path.split("/") if s]
        collection = path.endswith("/")
        node = root
        for segment in segments if collection else segments[:-1]:
            node = node.dirs.setdefault(segment, _Node())
        if collection:
            node.is_page = True
        else:
            node.leaves[segments[-1]] = path
    return root


def url_path(segments: Sequence[str], collection: bool) -> str:
    """The URL path of a page's segments: ``/`` for none, a trailing ``/`` for a collection."""
    if not segments:
        return "/"
    return "/" + "/".join(segments) + ("/" if collection else "")


def request_target(path: str) -> str:
    """The percent-encoded origin-form target of a decoded URL path."""
    return quote(path.encode("utf-8", "surrogateescape"), safe="/-._~!$'()*,;:@&=+")


class HttpMount(Mount):
    """``http/``: the configured sites, each a tree of the pages it serves, fetched on read."""

    name = "http"
    title = "The sites this box serves"
    what = (
        "The pages of the sites this box serves, fetched over loopback from the front door "
        "exactly as a visitor gets them: as text, rendered HTML with headers, stat, or raw."
    )

    def __init__(
        self,
        host: str,
        sites: Sequence[Site],
        *,
        deadline: float = DEFAULT_DEADLINE,
        body_cap: int = DEFAULT_BODY_CAP,
        self_fetches: int = 4,
        aux_ttl: float = DEFAULT_AUX_TTL,
        repo: str = "tmsite",
    ) -> None:
        super().__init__(host)
        self.sites = {site.name: site for site in sites}
        self.deadline = deadline
        self.body_cap = body_cap
        self.aux_ttl = aux_ttl
        self.repo = repo
        #: The process's one budget (shared by every instance), sized by the latest mount.
        self.budget = PROCESS_BUDGET
        self.budget.limit = max(0, self_fetches)
        self._facts: dict[str, tuple[float, SiteFacts | Refusal]] = {}
        self._family: tuple[float, frozenset[str]] | None = None
        self._lock = threading.Lock()
        #: What the other mounts serve, handed over by the registry: the fs mount's roots
        #: (empty when fs is not served) and whether the git mount is served. Links into
        #: them are offered only then.
        self.fs_roots: frozenset[str] = frozenset()
        self.git_served = False
        #: Pages offered to the index under a stamp of their own: page address → (the stamp
        #: of what it is made from, the stamp offered, when its fetch failed or None).
        self._offered: dict[str, tuple[str, str, float | None]] = {}

    @classmethod
    def from_settings(cls, host: str) -> HttpMount:
        """The mount over ``TM_SITES``, with the deadline, body cap and self-fetch limit set."""
        return cls(
            host,
            sites_from_settings(),
            deadline=float(getattr(settings, "TM_HTTP_DEADLINE", DEFAULT_DEADLINE)),
            body_cap=int(getattr(settings, "TM_HTTP_BODY_CAP", DEFAULT_BODY_CAP)),
            self_fetches=self_fetch_limit(),
            repo=str(getattr(settings, "TM_CHECKOUT_REPO", "tmsite")),
        )

    # ---- sites and paths ----------------------------------------------------------------

    @property
    def self_sites(self) -> builtins.list[Site]:
        """The configured sites this project renders itself (kind ``self``), in order."""
        return [site for site in self.sites.values() if site.kind == "self"]

    @property
    def canonical(self) -> Site | None:
        """The site whose pages name the records they read (the first ``self`` site)."""
        own = self.self_sites
        return own[0] if own else None

    def site_root(self, site: str) -> TmUri:
        """The collection of the site named ``site``."""
        return http_uris.site_root(self.host, site)

    def page_uri(self, site: str, path: str) -> TmUri:
        """The tm:// URI of a page of ``site`` at URL path ``path``."""
        return http_uris.page_uri(self.host, site, path)

    def _site(self, uri: TmUri) -> Site:
        name = uri.path[0]
        site = self.sites.get(name)
        if site is None:
            from tmsite.core.nearest import rank

            candidates = [(n, str(self.site_root(n))) for n in self.sites]
            raise NotFound(
                str(uri),
                "no configured site has that name; only these sites are served, and a site is "
                "never an address or a port",
                nearest=rank(name, candidates, exclude=str(uri)) or [c for _, c in candidates],
            )
        return site

    def _segments(self, uri: TmUri) -> tuple[str, ...]:
        segments = uri.path[1:]
        for segment in segments:
            bad = (
                segment in {"", ".", ".."}
                or any(ch in segment for ch in "/\\")
                or any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in segment)
                or any(0xDC80 <= ord(ch) <= 0xDCFF for ch in segment)
            )
            if bad:
                raise BadUri(
                    str(uri),
                    "a page path is plain segments: no empty segment, '.', '..', '/', '\\', "
                    "control characters or bytes that are not UTF-8",
                )
        return segments

    # ---- what a site serves ---------------------------------------------------------------

    def _self_paths(self) -> builtins.list[str]:
        return [page.path for page in pages.site_pages()]

    def _families(self) -> frozenset[str]:
        """The site's pages that are not documents (fixed pages and registered families)."""
        now = time.monotonic()
        with self._lock:
            cached = self._family
        if cached is not None and now - cached[0] < FAMILY_TTL:
            return cached[1]
        docs = {page.path for page in pages.all_pages()}
        found = frozenset(p.path for p in pages.site_pages() if p.path not in docs)
        with self._lock:
            self._family = (now, found)
        return found

    def _serves(self, site: Site, path: str) -> bool:
        """Whether a self site serves a page at ``path`` (without listing every page)."""
        if pages.page_at(path) is not None:
            return True
        return path in self._families()

    def facts(self, site: Site) -> SiteFacts:
        """What a static site publishes about itself, fetched at most every ``aux_ttl`` s.

        Raises:
            Unreachable: its robots.txt or sitemap.xml cannot be read.
            Timeout: one of them took longer than the deadline.
        """
        now = time.monotonic()
        with self._lock:
            cached = self._facts.get(site.name)
        if cached is not None and now - cached[0] < self.aux_ttl:
            held = cached[1]
            if isinstance(held, Refusal):
                raise type(held)(held.uri, held.message, **held.helpers)
            return held
        try:
            found: SiteFacts | Refusal = self._fetch_facts(site)
        except (Unreachable, Timeout) as refusal:
            found = refusal
        with self._lock:
            self._facts[site.name] = (now, found)
        if isinstance(found, Refusal):
            raise found
        return found

    def _aux(self, site: Site, path: str) -> Fetched | None:
        """An auxiliary file under the same guard as a page; None when it is absent (4xx)."""
        root = str(self.site_root(site.name))
        try:
            fetched = self._fetcher(site).fetch(path, cap=AUX_CAP)
        except FetchFailed as failed:
            if failed.kind == "timeout":
                raise Timeout(root, f"{path}: {failed.detail}", seconds=self.deadline) from None
            raise Unreachable(
                root, f"{path} cannot be read: {failed.detail}", failed=f"{path}: {failed.detail}"
            ) from None
        if 300 <= fetched.status < 400:
            raise Unreachable(
                root,
                f"{path} answered a redirect ({fetched.status}); auxiliary files are never "
                "followed, so the site cannot be read",
                failed=f"{path}: redirect {fetched.status}",
                status=fetched.status,
            )
        if 400 <= fetched.status < 500:
            return None
        if fetched.status != 200:
            raise Unreachable(
                root,
                f"{path} answered {fetched.status}",
                failed=f"{path}: status {fetched.status}",
                status=fetched.status,
            )
        return fetched

    def _fetch_facts(self, site: Site) -> SiteFacts:
        root = str(self.site_root(site.name))
        robots_answer = self._aux(site, ROBOTS)
        robots = parse_robots(decode(robots_answer.body, "")) if robots_answer else Robots()
        sitemap_answer = self._aux(site, SITEMAP)
        if sitemap_answer is None:
            raise Unreachable(
                root,
                "the site publishes no sitemap.xml, so no page of it is offered",
                failed=f"{SITEMAP}: absent",
            )
        try:
            paths = parse_sitemap(sitemap_answer.body, site.name)
        except AuxError as exc:
            raise Unreachable(root, str(exc), failed=f"{SITEMAP}: {exc}") from None
        facts = SiteFacts(paths=paths, robots=robots)
        try:
            manifest = self._aux(site, MANIFEST)
            if manifest is not None:
                facts.notes = parse_manifest(manifest.body, set(paths))
        except (AuxError, Unreachable, Timeout) as exc:
            facts.manifest_problem = getattr(exc, "message", str(exc))
        return facts

    def tree(self, site: Site) -> tuple[_Node, SiteFacts | None]:
        """The pages ``site`` serves as a tree, and for a static site what it publishes.

        Raises:
            Unreachable: a static site's robots.txt or sitemap.xml cannot be read.
            Timeout: one of them took longer than the deadline.
        """
        if site.kind == "static":
            facts = self.facts(site)
            return _tree(facts.paths), facts
        return _tree(self._self_paths()), None

    # ---- fetching -------------------------------------------------------------------------

    def _fetcher(self, site: Site) -> Fetcher:
        budget = self.budget if site.kind == "self" else None
        return Fetcher(site.name, site.door, self.deadline, budget, site.verify, site.ca_file)

    def _fetch(self, uri: TmUri, site: Site, path: str, *, cap: int, truncate: bool) -> Fetched:
        text = str(uri)
        # A page is metered; what a site publishes about itself (``_aux``) is fetched once a
        # while for every caller, however many ask.
        work.spend("fetched")
        try:
            return self._fetcher(site).fetch(request_target(path), cap=cap, truncate=truncate)
        except FetchFailed as failed:
            if failed.kind == "timeout":
                raise Timeout(text, failed.detail, seconds=self.deadline) from None
            if failed.kind == "too-large":
                refusal = too_large(uri, failed.size or cap)
                refusal.helpers["text"] = str(uri.identity.with_params({"as": "text"}))
                raise refusal from None
            if failed.kind == "busy":
                raise Unreachable(text, failed.detail, failed="busy", retryAfter=1) from None
            raise Unreachable(text, failed.detail, failed=failed.detail) from None

    def _refuse_status(self, uri: TmUri, site: Site, path: str, fetched: Fetched) -> None:
        text = str(uri)
        status = fetched.status
        if 300 <= status < 400:
            location = fetched.header("Location")
            visitor = f"{site.scheme}://{site.name}{request_target(path)}"
            target = urljoin(visitor, location) if location else None
            helpers: dict[str, Any] = {"status": status, "target": target}
            if target:
                helpers["targetUri"] = self._uri_of_url(target)
            raise Redirect(
                text,
                f"the page answers {status}: a visitor is sent on"
                + (f" to {target}" if target else " (no Location given)")
                + "; redirects are reported, never followed",
                **helpers,
            )
        if status in {404, 410}:
            raise NotFound(text, f"the site answers {status} for this page")
        if status >= 400:
            raise Unreachable(text, f"the site answers {status}", status=status)

    def _uri_of_url(self, url: str) -> str | None:
        for name in self.sites:
            path = site_path(url, name)
            if path is not None:
                return str(self.page_uri(name, path))
        return None

    # ---- the contract -------------------------------------------------------------------

    @override
    def list(self, req: Request) -> Listing:
        uri = req.uri
        if not uri.path:
            children = [
                Entry(
                    str(self.site_root(site.name)),
                    f"{site.name}/",
                    True,
                    vnd("listing"),
                    title=f"{site.name}, page by page",
                    extra={"kind": site.kind},
                )
                for site in self.sites.values()
            ]
            return Listing(children)
        site = self._site(uri)
        segments = self._segments(uri)
        root, facts = self.tree(site)
        node = root.find(segments)
        if node is None:
            parent = root.find(segments[:-1])
            if parent is not None and segments and segments[-1] in parent.leaves:
                raise NotFound(
                    str(uri),
                    "that is a page: its URI has no trailing /",
                    nearest=[str(uri.as_leaf())],
                )
            raise NotFound(str(uri), "the site serves no pages under this path")
        entries: builtins.list[Entry] = []
        for name in sorted(node.dirs):
            child = uri.identity.child(name, collection=True)
            entries.append(Entry(str(child), f"{name}/", True, vnd("listing")))
        for name in sorted(node.leaves):
            child = uri.identity.child(name)
            entries.append(self._leaf_entry(site, child, node.leaves[name], facts))
        path = url_path(segments, True)
        extra: dict[str, Any] = {}
        links: builtins.list[Link] = []
        if node.is_page:
            extra["page"] = str(uri.identity.with_params({"as": "text"}))
            links.extend(self._page_links(site, path, uri.identity, None))
        links.extend(self._collection_data(site, path))
        return Listing(entries, extra, links)

    def _leaf_entry(self, site: Site, uri: TmUri, path: str, facts: SiteFacts | None) -> Entry:
        if facts is None:
            return Entry(str(uri), uri.name, False, _self_type(uri.name))
        if facts.robots.refusal(path) is not None:
            return Entry(str(uri), uri.name, False, redacted=True)
        note = facts.notes.get(path)
        return Entry(
            str(uri),
            uri.name,
            False,
            _guess_type(uri.name),
            size=note.size if note else None,
            title=note.title if note else None,
        )

    @override
    def read(self, req: Request) -> Content:
        uri = req.uri
        if not uri.path:
            raise self.leaf_as_collection(uri)
        site = self._site(uri)
        segments = self._segments(uri)
        if not segments and not uri.collection:
            raise self.leaf_as_collection(uri)
        req.facets.require(req.text, _PAGE_PARAMS, "a page")
        req.facets.require_facet(req.text, PAGE_FACETS, "a page")
        facet = req.facets.facet
        path = url_path(segments, uri.collection)
        facts: SiteFacts | None = None
        if site.kind == "static":
            facts = self.facts(site)
            self._fence(uri, path, facts)
        if uri.collection and not (
            path in facts.paths if facts is not None else self._serves(site, path)
        ):
            raise BadFacet(
                req.text,
                f"a collection lists its pages and has no ?as={facet}; it is not a page itself",
                valid=[],
            )
        if not uri.collection and site.kind == "self" and not self._serves(site, path):
            node = _tree(self._self_paths()).find(segments)
            if node is not None:
                raise self.leaf_as_collection(uri)
        if facet == "stat":
            return self._stat(req, site, path, facts)
        fetched = self._fetch(uri, site, path, cap=self.body_cap, truncate=False)
        self._refuse_status(uri, site, path, fetched)
        return self._content(req, site, path, fetched)

    def _fence(self, uri: TmUri, path: str, facts: SiteFacts) -> None:
        """A static site's fence: listed in its sitemap, not under a Disallow."""
        if path not in facts.paths:
            if path + "/" in facts.paths:
                raise NotFound(
                    str(uri),
                    "that is a collection: its URI ends with /",
                    nearest=[str(uri.as_collection().keeping())],
                )
            node = _tree(facts.paths).find([s for s in path.strip("/").split("/") if s])
            if node is not None and not path.endswith("/"):
                raise self.leaf_as_collection(uri)
            raise NotFound(str(uri), "the site's sitemap.xml does not list this page")
        rule = facts.robots.refusal(path)
        if rule is not None:
            raise Denied(str(uri), f"the site's robots.txt fences this page ({rule})", rule=rule)

    # ---- representations -------------------------------------------------------------------

    def _content(self, req: Request, site: Site, path: str, fetched: Fetched) -> Content:
        uri = req.uri
        facet = req.facets.facet
        media = fetched.media_type
        is_html = media in _HTML_TYPES
        is_text = is_html or mime.is_text(media) or media.endswith(("+json", "+xml"))
        links = self._page_links(site, path, uri.identity, facet, textual=is_text)
        if facet == "rendered":
            if not is_text:
                raise self._binary(uri, media)
            body = {
                "uri": str(uri.identity),
                "url": f"{site.scheme}://{site.name}{request_target(path)}",
                "status": fetched.status,
                "headers": [
                    [k, "(withheld)" if k.lower() in _WITHHELD_HEADERS else v]
                    for k, v in fetched.headers
                ],
                "body": decode(fetched.body, fetched.content_type),
            }
            return Content(req.text, RENDERED_TYPE, body, links, kind="rendered")
        if is_html and facet in {None, "text"}:
            text = page_text(decode(fetched.body, fetched.content_type))
            return Content(req.text, PAGE_TYPE, text, links, kind="page", size=len(text.encode()))
        if facet == "text" and not is_text:
            raise self._binary(uri, media)
        size = len(fetched.body)
        if is_text:
            return Content(
                req.text, media, decode(fetched.body, fetched.content_type), links, size=size
            )
        return Content(req.text, media, fetched.body, links, size=size)

    def _binary(self, uri: TmUri, media: str) -> Binary:
        identity = uri.identity
        return Binary(
            str(uri),
            f"it is {media}, not text: read it with ?as=raw",
            mimeType=media,
            stat=str(identity.with_params({"as": "stat"})),
            raw=str(identity.with_params({"as": "raw"})),
        )

    def _stat(self, req: Request, site: Site, path: str, facts: SiteFacts | None) -> Content:
        uri = req.uri
        whole_stat(req)
        fetched = self._fetch(uri, site, path, cap=STAT_CAP, truncate=True)
        if fetched.status in {404, 410}:
            self._refuse_status(uri, site, path, fetched)
        media = fetched.media_type
        is_html = media in _HTML_TYPES
        body = Stat(
            str(uri.identity),
            uri.name,
            PAGE_TYPE if is_html and fetched.status < 300 else media,
            uri.collection,
            size=fetched.size,
            extra={
                "site": site.name,
                "path": path,
                "url": f"{site.scheme}://{site.name}{request_target(path)}",
                "status": fetched.status,
                "contentType": fetched.header("Content-Type"),
                "fetched": fetched.fetched_at.isoformat(),
                "title": page_title(fetched.body) if is_html else None,
            },
        ).to_json()
        if 300 <= fetched.status < 400:
            body["location"] = fetched.header("Location")
        if facts is not None:
            note = facts.notes.get(path)
            if note is not None:
                body["title"] = note.title or body["title"]
                body["files"] = list(note.files)
            if facts.manifest_problem:
                body["manifestProblem"] = facts.manifest_problem
        links = self._page_links(site, path, uri.identity, "stat")
        return Content(req.text, vnd("stat"), body, links, kind="stat")

    # ---- links --------------------------------------------------------------------------------

    def _page_links(
        self, site: Site, path: str, identity: TmUri, facet: str | None, *, textual: bool = True
    ) -> builtins.list[Link]:
        """The links of a page; ``textual`` False (an image): no ``?as=rendered``, refused."""
        links = [*self.up_links(identity)]
        parent = identity.parent()
        if not identity.collection and parent is not None:
            links.append(Link("collection", str(parent)))
        links.append(Link("describedby", str(identity.with_params({"as": "stat"}))))
        if facet in {"stat", "rendered"} or (facet == "raw" and not textual):
            links.append(Link("alternate", str(identity)))
        else:
            other = "rendered" if textual else "raw"
            links.append(Link("alternate", str(identity.with_params({"as": other}))))
        if site.kind == "self":
            links.extend(self._version_alternates(site, path))
            links.extend(self.page_source_links(site, path))
        return links

    def _version_alternates(self, site: Site, path: str) -> builtins.list[Link]:
        links = []
        lang = graph.language_of(path)
        default = pages.LANGUAGES[0]
        if lang == default:
            others = [(code, _prefixed(code, path)) for code in pages.LANGUAGES[1:]]
        else:
            others = [(default, _unprefixed(lang, path))]
        for code, other in others:
            if other is not None and self._serves(site, other):
                links.append(
                    Link(
                        "alternate",
                        str(self.page_uri(site.name, other)),
                        title=f"the same page in {LANGUAGE_NAMES.get(code, code)}",
                    )
                )
        for other_site in self.self_sites:
            if other_site.name != site.name:
                links.append(
                    Link(
                        "alternate",
                        str(self.page_uri(other_site.name, path)),
                        title=f"the same page on {other_site.name}",
                    )
                )
        return links

    def _in_checkout(self, relpath: str) -> bool:
        """Whether the served checkout's repository holds this project's module ``relpath``.

        Another repository served as the checkout has no view module of this site.
        """
        return self.git_served and (pages.checkout() / relpath).is_file()

    def _record_exists(self, record: str) -> bool:
        return (pages.checkout() / "data" / record).is_file()

    def page_source_links(self, site: Site, path: str) -> builtins.list[Link]:
        """A self site's page: its markdown, its view module, and (as a reader) its records."""
        links: builtins.list[Link] = []
        page = pages.page_at(path)
        if page is not None and "docs" in self.fs_roots:
            links.append(
                Link(
                    "tm:source",
                    str(fs_uris.checkout_file_uri(self.host, page.source)),
                    "exact",
                    title="the markdown this page is rendered from",
                    type="text/markdown",
                )
            )
        view = graph.view_for(path)
        if view is not None and view.source is not None and self._in_checkout(view.source):
            title = "the view that renders this page"
            if view.several:
                title += " (one of several it renders)"
            links.append(Link("tm:source", self._git_uri(view.source), "exact", title=title))
        if site is self.canonical and "data" in self.fs_roots:
            for record, confidence in sorted(graph.page_readers(path).items()):
                if self._record_exists(record):
                    links.append(self._data_link(record, confidence))
        return links

    def _collection_data(self, site: Site, path: str) -> builtins.list[Link]:
        if site is not self.canonical or "data" not in self.fs_roots:
            return []
        table = graph.route_table(self._self_paths())
        return [
            self._data_link(record, confidence)
            for record, confidence in sorted(table.readers.get(path, {}).items())
            if self._record_exists(record)
        ]

    def _data_link(self, record: str, confidence: Confidence) -> Link:
        return Link(
            "tm:data",
            str(fs_uris.file_uri(self.host, ("data", record))),
            confidence,
            title="a record this page's code reads",
            type="application/json",
        )

    def _git_uri(self, relpath: str) -> str:
        return str(git_uris.file_uri(self.host, self.repo, relpath))

    @override
    def links_into(self, uri: TmUri) -> builtins.list[Link]:
        """Links into fs and git about the site's pages, records, view modules and scripts.

        On fs (read now, not ``at``): a document links ``tm:renders-as`` to its pages; a record
        ``tm:read-by`` to the pages whose code reads it and ``tm:generated-by`` to the script
        that writes it. On git (at ``HEAD``): a view module links ``tm:renders-as`` to the pages
        its views render; a script ``tm:generates`` to the records it writes.
        """
        if uri.mount == "fs" and not uri.collection and uri.param("at") is None:
            if len(uri.path) >= 2 and uri.path[0] == "docs":
                return self._renders_as("/".join(uri.path))
            if len(uri.path) == 2 and uri.path[0] == "data" and uri.path[1].endswith(".json"):
                return self._record_links(uri.path[1])
        if (
            uri.mount == "git"
            and not uri.collection
            and len(uri.path) >= 2
            and uri.path[0] == self.repo
            and uri.param("at") in {None, "HEAD"}
        ):
            return self._git_links("/".join(uri.path[1:]))
        return []

    def _renders_as(self, relpath: str) -> builtins.list[Link]:
        url = pages.page_for(relpath)
        if url is None or not pages.is_source(relpath):
            return []
        candidates = [url]
        if graph.language_of(url) == pages.LANGUAGES[0]:
            candidates.extend(p for code in pages.LANGUAGES[1:] if (p := _prefixed(code, url)))
        links = []
        for candidate in candidates:
            page = pages.page_at(candidate)
            if page is not None and page.source == relpath:
                links.extend(self._renders(candidate, "the page it renders as"))
        return links

    def _renders(self, path: str, what: str) -> builtins.list[Link]:
        """``tm:renders-as`` to the page at ``path`` on each of this project's sites."""
        return [
            Link(
                "tm:renders-as",
                str(self.page_uri(site.name, path)),
                "exact",
                title=f"{what} on {site.name}",
            )
            for site in self.self_sites
        ]

    def _record_links(self, record: str) -> builtins.list[Link]:
        if not self._record_exists(record):
            return []
        links: builtins.list[Link] = []
        canonical = self.canonical
        if canonical is not None:
            table = graph.route_table(self._self_paths())
            for reader, confidence in sorted(table.read_by.get(record, {}).items()):
                links.append(
                    Link(
                        "tm:read-by",
                        str(self.page_uri(canonical.name, reader)),
                        confidence,
                        title="the pages of a route whose code reads this record"
                        if reader.endswith("/")
                        else "a page whose code reads this record",
                    )
                )
        if self.git_served:
            for script, confidence in graph.writers(pages.checkout()).get(record, {}).items():
                links.append(
                    Link(
                        "tm:generated-by",
                        self._git_uri(f"scripts/{script}"),
                        confidence,
                        title="the script that writes this record",
                    )
                )
        return links

    def _git_links(self, relpath: str) -> builtins.list[Link]:
        links: builtins.list[Link] = []
        if relpath.startswith("scripts/") and relpath.count("/") == 1 and "data" in self.fs_roots:
            script = relpath.split("/", 1)[1]
            for record, by in sorted(graph.writers(pages.checkout()).items()):
                if script in by:
                    links.append(
                        Link(
                            "tm:generates",
                            str(fs_uris.file_uri(self.host, ("data", record))),
                            by[script],
                            title="a record this script writes",
                        )
                    )
        if not relpath.endswith(".py") or not self.self_sites:
            return links
        _, by_module = graph._callbacks()
        if relpath not in {graph.module_source(m) for m in by_module}:
            return links
        table = graph.route_table(self._self_paths())
        for page_path in table.renders.get(relpath, []):
            links.extend(self._renders(page_path, "a page its views render"))
        return links

    # ---- completion, templates, the map ---------------------------------------------------

    @override
    def complete(self, argument: str, value: str, context: Mapping[str, str]) -> builtins.list[str]:
        if argument == "site":
            return [name for name in self.sites if name.startswith(value)]
        if argument == "as":
            return [facet for facet in PAGE_FACETS if facet.startswith(value)]
        if argument != "path":
            raise unknown_argument(argument, ["site", "path", "as"])
        site = self.sites.get(context.get("site") or next(iter(self.sites), ""))
        if site is None:
            return []
        directory, _, leaf = value.lstrip("/").rpartition("/")
        segments = [s for s in directory.split("/") if s]
        try:
            root, _ = self.tree(site)
        except Refusal:
            return []
        node = root.find(segments)
        if node is None:
            return []
        prefix = f"{directory}/" if directory else ""
        names = [f"{name}/" for name in sorted(node.dirs)] + sorted(node.leaves)
        out = []
        for name in sorted(names, key=lambda n: (n.rstrip("/"), n)):
            if name.startswith(leaf):
                out.append(prefix + name)
            if len(out) > 100:
                break
        return out

    @override
    def templates(self) -> builtins.list[Template]:
        return [
            Template(
                "http",
                f"tm://{self.host}/http/{{site}}/{{+path}}{{?as}}",
                "A page of a site this box serves",
                "Pages fetched over loopback from the front door, exactly as a visitor gets "
                "them. http/ lists the sites; a path ending in / lists the pages under it (500 "
                "a page, with a cursor). A page reads as its text (?as=text, the default for "
                "HTML); ?as=rendered is the HTML with the response headers; ?as=stat is status, "
                "type, size, fetched time and title; ?as=raw is the body as itself (images). "
                "A redirect is reported, never followed; a page of this site links tm:source to "
                "its markdown and its view, and tm:data to the records its code reads.",
                ("site", "path", "as"),
            )
        ]

    @override
    def change_sources(self, watching: Watching) -> builtins.list[ChangeSource]:
        """Pages made from a served file follow it; the others are fetched again now and then."""
        every = watching.setting("TM_SUB_HTTP_POLL", 5.0)
        fetch = watching.stamped(self.name, tick(every), (), interval=every)
        followed = PageWatcher(self, fetch.source.interest, watching.publish)
        return [
            ChangeSource(self.name, followed, start=followed.start),
            ChangeSource(f"{self.name}-poll", fetch.source, arm=fetch.arm),
        ]

    @override
    def reindexes(self, changed: TmUri) -> builtins.list[TmUri]:
        """Its own pages; and the pages made from a served file that changed.

        A document makes one page; a record under ``data/`` may show on any page made from the
        records, so each site of this project is read again.
        """
        if changed.host != self.host or changed.mount != fs_uris.MOUNT or not changed.path:
            return super().reindexes(changed)
        if changed.path[0] == "data":
            return [self.site_root(site.name) for site in self.self_sites]
        source = "/".join(changed.path)
        out = []
        for site in self.self_sites:
            for page in pages.site_pages():
                made = page.source or ""
                if made == source or (changed.collection and made.startswith(source + "/")):
                    out.append(self.page_uri(site.name, page.path))
        return out

    @override
    def documents(self) -> Iterator[Document]:
        """The pages of this project's own sites, each as ``?as=text`` gives it (by lines).

        Only the sites the box builds (``self``): a static site's pages are another's. A page
        made from a document is stamped by that file (its modified time and size); the others
        (front pages, families) by the checkout's records under ``data/``, which they are made
        from. The text is fetched from the front door, as a visitor gets it, only when the
        stamp moved; a page that cannot be fetched then is offered by its address alone, and
        from ``RETRY_SECONDS`` later offered under a new stamp, so the index's next walk
        fetches it again rather than waiting for its files to change.
        """
        records = self._records_stamp()
        for site in self.self_sites:
            for page in pages.site_pages():
                if _self_type(page.path) != PAGE_TYPE:
                    continue
                uri = self.page_uri(site.name, page.path)
                made = _file_stamp(pages.source_path(page.source)) if page.source else records
                stamp = self._stamp(str(uri), made)
                yield Document(
                    str(uri),
                    page.path,
                    "page",
                    stamp,
                    PAGE_TYPE,
                    partial(self._visitor_text, uri, made, stamp),
                    lines=True,
                )

    def _stamp(self, uri: str, made: str) -> str:
        """The stamp a page is offered under: ``made``, unless a fetch of it failed."""
        kept = self._offered.get(uri)
        if kept is None or kept[0] != made:
            return made
        _, offered, failed = kept
        if failed is None or time.monotonic() - failed < RETRY_SECONDS:
            return offered
        return f"{made} retry {failed:.3f}"

    def _records_stamp(self) -> str:
        data = pages.checkout() / "data"
        try:
            files = sorted(data.iterdir())
        except OSError:
            return "no-records"
        return "records-" + digest(" ".join(_file_stamp(path) for path in files if path.is_file()))

    def _visitor_text(self, uri: TmUri, made: str, stamp: str) -> str:
        try:
            read = self.read(Request(uri, parse_facets(uri)))
        except Refusal:
            self._offered[str(uri)] = (made, stamp, time.monotonic())
            return ""
        if stamp == made:
            self._offered.pop(str(uri), None)
        else:  # fetched on a retry: keep offering the stamp it is indexed under
            self._offered[str(uri)] = (made, stamp, None)
        return read.body if isinstance(read.body, str) else ""

    @override
    def collections(self, limit: int = 10_000) -> Iterator[Entry]:
        yield from super().collections(limit)
        count = 0
        for site in self.sites.values():
            root_uri = self.site_root(site.name)
            yield Entry(str(root_uri), f"{site.name}/", True, vnd("listing"), title=site.name)
            if site.kind != "self":
                continue
            stack: builtins.list[tuple[TmUri, _Node, str]] = [
                (root_uri, _tree(self._self_paths()), f"{site.name}/")
            ]
            while stack:
                uri, node, name = stack.pop(0)
                for child in sorted(node.dirs):
                    child_uri = uri.child(child, collection=True)
                    child_name = f"{name}{child}/"
                    yield Entry(str(child_uri), child_name, True, vnd("listing"))
                    count += 1
                    if count >= limit:
                        return
                    stack.append((child_uri, node.dirs[child], child_name))


def _file_stamp(path: Path) -> str:
    try:
        info = path.stat()
    except OSError:
        return "absent"
    return f"{info.st_mtime_ns}-{info.st_size}"


def _self_type(name: str) -> str:
    """A page of this project's site is HTML unless its name says a text type (``llms.txt``)."""
    found = mime.by_name(name) if "." in name else None
    if found is None or found in _HTML_TYPES or not mime.is_text(found):
        return PAGE_TYPE
    return found


def _guess_type(name: str) -> str:
    if "." not in name or name.endswith((".html", ".htm")):
        return PAGE_TYPE
    return mime.by_name(name) or mime.OCTET_STREAM


def _prefixed(lang: str, path: str) -> str | None:
    return f"/{lang}/" if path == "/" else f"/{lang}{path}"


def _unprefixed(lang: str, path: str) -> str | None:
    if path == f"/{lang}/" or path == f"/{lang}":
        return "/"
    if path.startswith(f"/{lang}/"):
        return path[len(lang) + 1 :]
    return None
