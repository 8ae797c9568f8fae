"""The explorer: one page that draws any ``tm://`` address from its blocks.

``/explore?uri=tm://…`` serves a small HTML shell; plain ES modules (no build step) read the
address through the REST route ``/api/v1/resolve`` as ``?as=blocks``, the manifest for shapes,
colours and handles, and the renderers for media types — nothing else. The modules are served
here, from ``static/explorer/``, by the project itself (with or without DEBUG), each with an
ETag; the renderers mount publishes their SHA-256 so the page checks what it imports.

A shown address is also listened to (:file:`static/explorer/live.js`): a 2026-07-28
``subscriptions/listen`` POSTed to the MCP endpoint, whose notices say, without a reload, that
the address or a child beneath it changed. The page asks only where ``server/discover``
advertises ``resources.subscribe`` (``python -m tmsite.serve``), and only when the page's own
origin may call the endpoint (loopback, or listed in ``TM_ALLOWED_ORIGINS``): elsewhere it is
drawn without the endpoint's address and asks nothing.

A logged-in staff user also sees, under the address, a link to the admin change page of the row
behind it — an entity, an MCP server record, a map entry, a trail (:mod:`tmsite.site.admin_links`);
that page is then ``private``. Every link in the explorer is a page load, so the shell, drawn
for each address, always names the right row.

Spec: BLOCKS, OP4, SUB3.
"""

from __future__ import annotations

import hashlib
import re

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import render
from django.urls import path, re_path
from django.utils.cache import get_conditional_response
from django.views.decorators.http import require_safe

from tmsite.core.uri import TmUri
from tmsite.mcp.endpoint import origin_allowed
from tmsite.mounts.renderers.catalogue import MODULE_PREFIX, STATIC_DIR
from tmsite.site.admin_links import admin_row
from tmsite.site.views import site_links, site_name

_ASSET = re.compile(r"[a-z0-9][a-z0-9-]{0,63}\.(?:js|css)", re.ASCII)
_TYPES = {"js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8"}


def _host() -> str:
    return str(settings.TM_HOST)


@require_safe
def explore(request: HttpRequest) -> HttpResponse:
    """The explorer page; ``uri`` is the address to draw first (default: the host's root)."""
    root = str(TmUri(_host(), collection=True))
    start = request.GET.get("uri") or root
    words = request.GET.get("q", "")
    if words:  # the search box: the same search as an address, drawn like any other
        start = str(TmUri(_host(), collection=True).with_params({"as": "search", "q": words}))
    user = request.user
    staff = bool(user.is_active and user.is_staff)
    context = {
        "lang": "en",
        "site_name": site_name(),
        "nav": site_links("en", "explorer"),
        "start": start,
        "words": words,
        "admin_row": admin_row(start) if staff else None,
        "root": root,
        "manifest": str(TmUri(_host(), "manifest")),
        "api": "/api/v1/resolve",
        "mcp": "/api/mcp" if _may_call_the_endpoint(request) else "",
        "module": MODULE_PREFIX + "explorer.js",
        "stylesheet": MODULE_PREFIX + "explorer.css",
    }
    response = render(request, "tm_site/explorer.html", context)
    response["Cache-Control"] = "private, no-cache" if staff else "no-cache"
    return response


def _may_call_the_endpoint(request: HttpRequest) -> bool:
    """Whether the page's own origin is one the MCP endpoint answers (a browser sends it)."""
    return origin_allowed(request.build_absolute_uri("/").rstrip("/"))


@require_safe
def asset(request: HttpRequest, name: str) -> HttpResponseBase:
    """One module or stylesheet of the explorer, exactly the bytes the renderers mount hashes."""
    if not _ASSET.fullmatch(name):
        raise Http404("no such module")
    file = STATIC_DIR / name
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise Http404("no such module") from exc
    response = HttpResponse(data, content_type=_TYPES[name.rsplit(".", 1)[1]])
    etag = '"' + hashlib.sha256(data).hexdigest()[:32] + '"'
    response["ETag"] = etag
    response["Cache-Control"] = "no-cache"
    response["X-Content-Type-Options"] = "nosniff"
    conditional = get_conditional_response(request, etag=etag, response=response)
    return conditional if conditional is not None else response


urlpatterns = [
    path("explore", explore, name="explore"),
    re_path(r"^static/explorer/(?P<name>[^/]+)\Z", asset, name="explorer-asset"),
]
