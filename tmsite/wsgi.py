"""WSGI entry point (gunicorn ``tmsite.wsgi``).

The MCP endpoint answers through a handler with only the middleware it needs (which requests
came over TLS, security headers and the host check); the site, the REST routes and the admin
keep the full stack. Sessions, messages, CSRF and authentication have nothing to do on a
stateless, anonymous JSON-RPC POST, and running them was a quarter of the cost of a ``ping``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler
from django.core.wsgi import get_wsgi_application
from typing_extensions import override

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tmsite.settings")

MCP_PATH = "/api/mcp"
ENDPOINT_MIDDLEWARE = [
    "tmsite.callers.tls.ForwardedProtoMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",
]


class EndpointHandler(WSGIHandler):
    """A WSGI handler whose middleware chain is ``ENDPOINT_MIDDLEWARE``."""

    @override
    def load_middleware(self, is_async: bool = False) -> None:
        full = settings.MIDDLEWARE
        settings.MIDDLEWARE = [m for m in full if m in ENDPOINT_MIDDLEWARE]
        try:
            super().load_middleware(is_async)
        finally:
            settings.MIDDLEWARE = full


site_application = get_wsgi_application()
endpoint_application = EndpointHandler()


def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """The WSGI callable: ``/api/mcp`` through the short chain, everything else the full one."""
    if environ.get("PATH_INFO") == MCP_PATH:
        return endpoint_application(environ, start_response)
    return site_application(environ, start_response)
