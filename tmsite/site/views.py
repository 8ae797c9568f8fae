"""The site's pages: the front pages, the documents, the pieces, sitemap.xml and robots.txt.

Every page is a whole HTML5 document: a ``<nav>`` in the header (site links and the language
switch), the content in ``<main>``. Documents come from the checkout's ``docs/`` through the page
rule of :mod:`tmsite.mounts.http.pages`, rendered by :mod:`tmsite.site.rendering`. Every answer
carries an ``ETag`` (and a ``Last-Modified`` where one file makes it) and honours conditional
requests; HEAD answers like GET.

Spec: OP3.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote
from xml.sax.saxutils import escape

from django.conf import settings
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
    HttpResponsePermanentRedirect,
)
from django.shortcuts import render
from django.urls import reverse
from django.utils.cache import get_conditional_response
from django.utils.http import http_date
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_safe

from tmsite import icon
from tmsite.mounts.http import pages
from tmsite.site.rendering import render_file

#: How long a browser or proxy may reuse a page before asking again (seconds).
MAX_AGE = 60
#: The stylesheet every page links (served by :func:`stylesheet`).
STYLESHEET = Path(__file__).resolve().parent / "static" / "site.css"

#: The words of the frame, per language.
WORDS: dict[str, dict[str, str]] = {
    "en": {
        "language": "English",
        "home": "Home",
        "docs": "Docs",
        "pieces": "Pieces",
        "explorer": "Explorer",
        "documents": "Documents",
        "intro": (
            "Notes and documents about small machines, and the pieces of the 6502 work: "
            "what each is, where its source is and under which terms it is published."
        ),
        "machines": "Programs can read the same documents through the MCP endpoint at",
        "fallback": "",
        "not_found_title": "Page not found",
        "not_found": "There is no page at this address.",
        "no_docs": "There are no documents yet.",
        "switch_label": "Language",
    },
    "ja": {
        "language": "日本語",
        "home": "ホーム",
        "docs": "ドキュメント",
        "pieces": "構成要素",
        "explorer": "エクスプローラー",
        "documents": "ドキュメント",
        "intro": (
            "小さな機械についてのノートとドキュメント、そして 6502 の仕事の構成要素"
            "（それぞれが何か、ソースがどこにあり、どの条件で公開されているか）。"
        ),
        "machines": "プログラムは同じドキュメントを MCP エンドポイントから読めます：",
        "fallback": "このページはまだ翻訳されていません。以下は英語の原文です。",
        "not_found_title": "ページが見つかりません",
        "not_found": "このアドレスにページはありません。",
        "no_docs": "ドキュメントはまだありません。",
        "switch_label": "言語",
    },
}


def site_name() -> str:
    """The site's name, for titles and the header (``settings.TM_SITE_NAME``)."""
    return str(getattr(settings, "TM_SITE_NAME", "tinymachines"))


def href(path: str) -> str:
    """A URL path percent-encoded for an attribute or a sitemap."""
    return quote(path, safe="/")


def _front_path(lang: str) -> str:
    return "/" if lang == pages.LANGUAGES[0] else f"/{lang}/"


@dataclass(frozen=True)
class _Link:
    label: str
    href: str
    current: bool = False


def site_links(lang: str, here: str) -> list[_Link]:
    """The site's links in every page's header, the explorer's too.

    Args:
        lang: the page's language.
        here: which is current (``home``, ``docs``, ``pieces``, ``explorer`` or ``""``).
    """
    words = WORDS[lang]
    docs_index = pages.page_at_slug(lang, "")
    docs_href = href(docs_index.path) if docs_index else _front_path(lang) + "#docs"
    return [
        _Link(words["home"], _front_path(lang), here == "home"),
        _Link(words["docs"], docs_href, here == "docs"),
        _Link(words["pieces"], "/pieces", here == "pieces"),
        _Link(words["explorer"], reverse("site:explore"), here == "explorer"),
    ]


def _frame(
    request: HttpRequest, lang: str, *, title: str | None, here: str, other: str | None
) -> dict[str, Any]:
    """The context every page template needs.

    Args:
        request: the request being answered (for the template's context processors).
        lang: the page's language.
        title: the page's own title (the ``<h1>``), or None for the front page.
        here: which site link is current (see :func:`site_links`).
        other: the path of this page in the other language, if it has one.
    """
    words = WORDS[lang]
    nav = site_links(lang, here)
    other_lang = next(code for code in pages.LANGUAGES if code != lang)
    switch = {
        "lang": other_lang,
        "label": WORDS[other_lang]["language"],
        "href": href(other if other is not None else _front_path(other_lang)),
    }
    alternates = []
    if other is not None:
        alternates = [
            {"lang": lang, "href": request.build_absolute_uri(href(request.path))},
            {"lang": other_lang, "href": request.build_absolute_uri(href(other))},
        ]
    name = site_name()
    return {
        "lang": lang,
        "words": words,
        "site_name": name,
        "doc_title": f"{title} · {name}" if title else name,
        "nav": nav,
        "switch": switch,
        "alternates": alternates,
        "home": _front_path(lang),
        "stylesheet": "/static/site.css",
    }


def _finish(request: HttpRequest, response: HttpResponse, mtime: float | None) -> HttpResponseBase:
    """Make a rendered answer cacheable and answer a conditional request with 304."""
    etag = '"' + hashlib.sha256(response.content).hexdigest()[:32] + '"'
    response["ETag"] = etag
    last_modified = int(mtime) if mtime is not None else None
    if last_modified is not None:
        response["Last-Modified"] = http_date(last_modified)
    response["Cache-Control"] = f"public, max-age={MAX_AGE}"
    answer = get_conditional_response(
        request, etag=etag, last_modified=last_modified, response=response
    )
    return answer if answer is not None else response


def _page_not_found(request: HttpRequest, lang: str) -> HttpResponse:
    context = _frame(request, lang, title=WORDS[lang]["not_found_title"], here="", other=None)
    context["path"] = request.path
    return render(request, "tm_site/404.html", context, status=404)


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """The site's HTML 404, fit to be the project's ``handler404``."""
    lang = pages.LANGUAGES[0]
    for code in pages.LANGUAGES[1:]:
        if request.path == f"/{code}" or request.path.startswith(f"/{code}/"):
            lang = code
    return _page_not_found(request, lang)


# --- the front pages -----------------------------------------------------------------------


def _doc_title(page: pages.Page) -> str:
    try:
        title = render_file(pages.source_path(page.source), page.source, page.lang).title
    except OSError:
        title = None
    return title or (page.slug.rsplit("/", 1)[-1] if page.slug else WORDS[page.lang]["docs"])


@require_safe
def front(request: HttpRequest, lang: str = "en") -> HttpResponseBase:
    """The front page of one language: what the site is, its documents, the pieces."""
    documents = [
        {
            "href": href(p.path),
            "title": _doc_title(p),
            "depth": p.slug.count("/") + (1 if p.slug else 0),
            "fallback": p.fallback,
        }
        for p in pages.all_pages()
        if p.lang == lang
    ]
    other = next(code for code in pages.LANGUAGES if code != lang)
    context = _frame(request, lang, title=None, here="home", other=_front_path(other))
    context["documents"] = documents
    return _finish(request, render(request, "tm_site/front.html", context), None)


# --- the documents -------------------------------------------------------------------------


@require_safe
def doc(request: HttpRequest, lang: str = "en", slug: str | None = None) -> HttpResponseBase:
    """One documents page: ``/docs[/<slug>]`` or ``/ja/docs[/<slug>]``.

    A Japanese page without a translation is the English text under a note saying so. An
    address that names a page another way (``/docs/nes/``, ``/docs/nes/index``) is sent on to
    the page's own address; anything else the page rule does not know is a 404.
    """
    trailing_slash = slug is not None and (slug == "" or slug.endswith("/"))
    wanted = (slug or "").rstrip("/")
    page = pages.page_at_slug(lang, wanted)
    if page is None:
        return _page_not_found(request, lang)
    if trailing_slash or page.slug != wanted:
        return HttpResponsePermanentRedirect(href(page.path))
    try:
        rendered = render_file(pages.source_path(page.source), page.source, page.lang)
    except OSError:
        return _page_not_found(request, lang)
    counterpart = [
        p
        for code in pages.LANGUAGES
        if code != lang and (p := pages.page_at_slug(code, page.slug)) is not None
    ]
    title = rendered.title or (page.slug.rsplit("/", 1)[-1] if page.slug else WORDS[lang]["docs"])
    context = _frame(
        request,
        lang,
        title=title,
        here="docs",
        other=counterpart[0].path if counterpart else None,
    )
    context.update(
        {
            "page": page,
            "content": mark_safe(rendered.html),  # the served checkout's own documents
            "content_lang": pages.LANGUAGES[0] if page.fallback else lang,
            "fallback_note": WORDS[lang]["fallback"] if page.fallback else "",
        }
    )
    response = render(request, "tm_site/doc.html", context)
    return _finish(request, response, rendered.mtime)


# --- the pieces ----------------------------------------------------------------------------

#: The fields of a piece shown under its name, in order, with their labels.
PIECE_FIELDS: tuple[tuple[str, str], ...] = (
    ("source", "Source"),
    ("ships_as", "Ships as"),
    ("code_licence", "Code licence"),
    ("data_terms", "Data terms"),
    ("public_url", "Public URL"),
    ("not_hosted_because", "Not hosted because"),
)


def pieces_file() -> Path:
    """The pieces record of the served checkout."""
    return pages.checkout() / "data" / "pieces.json"


def load_pieces(path: Path) -> list[dict[str, str | None]]:
    """Read the pieces record: an object with ``pieces: [...]`` or a bare list of objects.

    Raises:
        FileNotFoundError: there is no record.
        ValueError: the record is not JSON of either shape (the message says what is wrong).
    """
    try:
        data = json.loads(path.read_bytes())
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc}") from exc
    items = data.get("pieces") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ValueError("expected a list of pieces, or an object whose 'pieces' is one")
    found: list[dict[str, str | None]] = []
    for number, item in enumerate(items):
        if not isinstance(item, dict):
            raise ValueError(f"piece {number} is not an object")
        found.append(
            {
                str(k): (None if v is None else str(v))
                for k, v in item.items()
                if not isinstance(v, dict | list)
            }
        )
    return found


@require_safe
def pieces(request: HttpRequest) -> HttpResponseBase:
    """The pieces of the work, from ``data/pieces.json`` (a clear note while there is none)."""
    path = pieces_file()
    problem = ""
    items: list[dict[str, str | None]] = []
    mtime: float | None = None
    try:
        mtime = path.stat().st_mtime
        items = load_pieces(path)
    except FileNotFoundError:
        problem = "The pieces are not recorded yet: data/pieces.json does not exist."
    except (OSError, ValueError) as exc:
        problem = f"The pieces record data/pieces.json cannot be read: {exc}"
    shown = []
    for item in items:
        rows = []
        for field, label in PIECE_FIELDS:
            value = item.get(field)
            if value:
                link = value if value.startswith(("https://", "http://")) else None
                rows.append({"label": label, "value": value, "link": link})
        shown.append(
            {
                "key": item.get("key") or "",
                "name": item.get("name") or item.get("key") or "?",
                "what": item.get("what") or "",
                "rows": rows,
            }
        )
    context = _frame(request, "en", title=WORDS["en"]["pieces"], here="pieces", other=None)
    context.update({"pieces": shown, "problem": problem})
    return _finish(request, render(request, "tm_site/pieces.html", context), mtime)


# --- machine-read files ----------------------------------------------------------------------


def _lastmod(source: str | None) -> str:
    if source is None:
        return ""
    try:
        mtime = os.stat(pages.source_path(source)).st_mtime
    except OSError:
        return ""
    return datetime.fromtimestamp(mtime, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@require_safe
def sitemap(request: HttpRequest) -> HttpResponseBase:
    """Every page the site serves, as absolute URLs on the requested host."""
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">',
    ]
    for page in pages.site_pages():
        loc = escape(request.build_absolute_uri(href(page.path)))
        lastmod = _lastmod(page.source)
        stamp = f"<lastmod>{lastmod}</lastmod>" if lastmod else ""
        lines.append(f"  <url><loc>{loc}</loc>{stamp}</url>")
    lines.append("</urlset>")
    body = "\n".join(lines) + "\n"
    response = HttpResponse(body, content_type="application/xml; charset=utf-8")
    return _finish(request, response, None)


@require_safe
def robots(request: HttpRequest) -> HttpResponseBase:
    """Every path may be crawled; the sitemap says which pages there are."""
    sitemap_url = request.build_absolute_uri("/sitemap.xml")
    body = f"User-agent: *\nAllow: /\n\nSitemap: {sitemap_url}\n"
    response = HttpResponse(body, content_type="text/plain; charset=utf-8")
    return _finish(request, response, None)


@require_safe
def icon_file(request: HttpRequest, name: str) -> HttpResponseBase:
    """One form of the box's icon (:data:`tmsite.icon.ICONS`), served by the project itself.

    An SVG may carry script: it is sent with a policy that runs none and loads nothing.
    """
    found = next(i for i in icon.ICONS if i.file == name)
    response = HttpResponse(found.location.read_bytes(), content_type=found.mime_type)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; style-src 'unsafe-inline'"
    return _finish(request, response, found.location.stat().st_mtime)


@require_safe
def stylesheet(request: HttpRequest) -> HttpResponseBase:
    """The site's one stylesheet, served by the project itself (with or without DEBUG)."""
    response = HttpResponse(STYLESHEET.read_bytes(), content_type="text/css; charset=utf-8")
    return _finish(request, response, STYLESHEET.stat().st_mtime)
