"""The http mount's URIs, for any mount that links to a page: pure builders, no mount needed.

``tm://<host>/http/<site>/`` is a site, ``http/<site>/<path>`` the page at that URL path (a
path ending in ``/`` is a collection, as the URL is).

Spec: HTTP, NS2.
"""

from __future__ import annotations

from tmsite.core.uri import TmUri

MOUNT = "http"


def site_root(host: str, site: str) -> TmUri:
    """A served site's collection."""
    return TmUri(host, MOUNT, (site,), True)


def page_uri(host: str, site: str, path: str) -> TmUri:
    """The page of ``site`` at URL path ``path`` (``/docs/mcp``, ``/ja/``)."""
    segments = [s for s in path.strip("/").split("/") if s] if path != "/" else []
    return TmUri(host, MOUNT, (site, *segments), path.endswith("/"))
