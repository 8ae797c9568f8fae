"""Which requests came over TLS, when the box is served over TLS (``TM_TLS``).

nginx terminates TLS and says so in ``X-Forwarded-Proto``; Django believes that header
(``SECURE_PROXY_SSL_HEADER``) from whoever sends it, so this middleware, placed before
Django's ``SecurityMiddleware``, drops it unless the socket's peer is a trusted proxy
(``TM_RATE_TRUSTED_PROXIES``, the same list the rate limit believes ``X-Forwarded-For`` from).

The box's own loopback reads are the other exception: the http mount reads the site's pages at
``TM_FRONT_DOOR`` (this server, or nginx on this machine, often over plain http) as a visitor
of the public https door would get them, so a caller on loopback counts as having come over
TLS and is never redirected to https. A visitor forwarded by nginx is never on loopback: nginx
replaces ``X-Forwarded-For`` with the peer it saw.

Nothing here is kept or logged. Off (``MiddlewareNotUsed``) when the box is not served over
TLS, so the embedded default over plain http is untouched.

Spec: OP5.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import MiddlewareNotUsed
from django.http import HttpRequest, HttpResponseBase

from tmsite.callers import caller

_PROTO = "HTTP_X_FORWARDED_PROTO"


class ForwardedProtoMiddleware:
    """``X-Forwarded-Proto`` from a trusted proxy only; the box's own reads count as https."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        if not getattr(settings, "TM_TLS", False):
            raise MiddlewareNotUsed
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        """Settle ``X-Forwarded-Proto`` for Django's ``SecurityMiddleware``, then answer."""
        meta = request.META
        if not caller.trusted(str(meta.get("REMOTE_ADDR") or "")):
            meta.pop(_PROTO, None)
        if not request.is_secure() and caller.loopback(caller.address_in(meta)):
            meta[_PROTO] = "https"
        return self.get_response(request)
