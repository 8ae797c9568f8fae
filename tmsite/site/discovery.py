"""What lists the box elsewhere: ``server.json`` for the MCP Registry and ``/llms.txt``.

Both are made from what the box already says of itself — the ``serverInfo`` of
:func:`tmsite.mcp.lifecycle.server_info` (title, version, icons, website) and the site's
documents as the page rule finds them (:func:`tmsite.mounts.http.pages.all_pages`) — so neither can
drift from what a client is told on ``initialize`` or what a visitor reads.

* ``server.json`` (the MCP Registry's schema ``2025-12-11``): one ``remotes`` entry of type
  ``streamable-http`` at ``TM_PUBLIC_URL`` + ``/api/mcp``. Written by ``manage.py tm_registry
  server-json``; the registry takes it from the publisher, so the box does not serve it.
* ``/llms.txt`` (the llms.txt format: an H1 title, a blockquote summary, a paragraph, then
  sections of markdown links): the MCP endpoint, and every document of the site as a link to
  its markdown (``/docs/<slug>.md``, the file the page is rendered from, served as it is) with
  its ``tm://`` address. Made on each request, so a document added, retitled or removed shows
  at once; the ``http`` mount reads it like any page of the site
  (``tm://<host>/http/<site>/llms.txt``).

Spec: OBS4.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.views.decorators.http import require_safe

from tmsite.mcp import lifecycle
from tmsite.mcp.endpoint import MCP_PATH
from tmsite.mounts.http import pages
from tmsite.site import views

#: The MCP Registry schema ``server.json`` follows.
SCHEMA_URL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
#: The registry's limit on ``description`` (and ``title``).
REGISTRY_TEXT_MAX = 100


def endpoint_url() -> str:
    """The MCP endpoint at the box's public front door."""
    return lifecycle.public_url() + MCP_PATH.rstrip("/")


def registry_name() -> str:
    """``<the public host, reversed>/<TM_HOST>``: the registry's reverse-DNS name.

    The registry lets a publisher use the names under a domain it proves it holds, so the
    namespace is the public front door's host: ``https://tinymachines.ai`` → ``ai.tinymachines``.
    """
    host = urlsplit(lifecycle.public_url()).hostname or "localhost"
    return ".".join(reversed(host.split("."))) + "/" + str(settings.TM_HOST)


def short_description() -> str:
    """What the box is, within the registry's 100 characters."""
    return f"The box {settings.TM_HOST}, read-only: its docs, repositories, pages and records"[
        :REGISTRY_TEXT_MAX
    ]


def server_json() -> dict[str, Any]:
    """The box's entry for the MCP Registry (schema ``2025-12-11``)."""
    info = lifecycle.server_info()
    return {
        "$schema": SCHEMA_URL,
        "name": registry_name(),
        "title": str(info["title"])[:REGISTRY_TEXT_MAX],
        "description": short_description(),
        "version": info["version"],
        "websiteUrl": info["websiteUrl"],
        "icons": info["icons"],
        "remotes": [{"type": "streamable-http", "url": endpoint_url()}],
    }


def server_json_text() -> str:
    """``server.json`` as the command writes it."""
    return json.dumps(server_json(), indent=2, ensure_ascii=False) + "\n"


def markdown_path(page: pages.Page) -> str:
    """Where a documents page's markdown is served: ``/docs/x`` → ``/docs/x.md``.

    A section's own page (``/docs``, ``/docs/nes``) is its ``index.md``'s:
    ``/docs/index.md``, ``/docs/nes.md``.
    """
    return page.path + (".md" if page.slug else "/index.md")


def _link(title: str, url: str, note: str) -> str:
    # a title is a document's heading: keep it from closing the link text
    text = title.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
    return f"- [{text}]({url}): {note}"


def llms_txt() -> str:
    """``/llms.txt``: the box in a few lines, its MCP endpoint and every document's markdown."""
    info = lifecycle.server_info()
    origin = lifecycle.public_url()
    host = settings.TM_HOST
    lines = [
        f"# {info['title']}",
        "",
        f"> {info['description']}",
        "",
        f"Connect an MCP client to {endpoint_url()} (Streamable HTTP, no account or key) and "
        f"read tm://{host}/ to list the namespace; the documents below are the same files the "
        "site renders, as markdown.",
        "",
        "## MCP",
        "",
        _link(
            "MCP endpoint",
            endpoint_url(),
            "Streamable HTTP; call the `overview` tool first",
        ),
        "",
    ]
    for lang, heading in (("en", "Docs"), ("ja", "Docs in Japanese")):
        own = [p for p in pages.all_pages() if p.lang == lang and not p.fallback]
        if not own:
            continue
        lines += [f"## {heading}", ""]
        lines += [
            _link(views._doc_title(p), origin + views.href(markdown_path(p)), _address(p))
            for p in own
        ]
        lines.append("")
    return "\n".join(lines)


def _address(page: pages.Page) -> str:
    return f"tm://{settings.TM_HOST}/fs/{page.source}"


@require_safe
def llms(request: HttpRequest) -> HttpResponseBase:
    """``GET /llms.txt``."""
    response = HttpResponse(llms_txt(), content_type="text/plain; charset=utf-8")
    return views._finish(request, response, None)


@require_safe
def markdown(request: HttpRequest, lang: str, slug: str) -> HttpResponseBase:
    """``GET /docs/<slug>.md``: the markdown a documents page is rendered from, as it is.

    Only a page's own address with ``.md`` answers (``index.md`` for a section's page); any
    other is the site's 404.
    """
    wanted = "" if slug == "index" else slug
    page = pages.page_at_slug(lang, wanted)
    if page is None or markdown_path(page) != request.path:
        return views.not_found(request)
    try:
        text = pages.source_path(page.source).read_bytes()
    except OSError:
        return views.not_found(request)
    response = HttpResponse(text, content_type="text/markdown; charset=utf-8")
    response["X-Content-Type-Options"] = "nosniff"
    return views._finish(request, response, None)
