"""Who is asking, for the rate limit and the admin login's throttle: the address, held in memory.

The address is the socket's peer (``REMOTE_ADDR``), unless that peer is a trusted proxy
(``TM_RATE_TRUSTED_PROXIES``, loopback by default: nginx on the same machine), in which case it
is the last address in ``X-Forwarded-For`` that is not itself a trusted proxy. A loopback peer
with no forwarding header is the box itself (the http mount reading its own front door, a
health check, the operator's tools) and is exempt (``TM_RATE_EXEMPT``).

The address is never written anywhere: not to the request log, not to a log line. Where a
caller must be recognised beyond one request (the admin login's throttle), it is :func:`keyed`:
the HMAC of the address under the rate limit's secret for the UTC day, the key its buckets have.

Spec: OP1.
"""

from __future__ import annotations

import ipaddress
import logging
from functools import lru_cache

from django.conf import settings
from django.http import HttpRequest

from tmsite.oplog import buckets


def _normal(text: str) -> str:
    text = text.strip().strip('"')
    if text.startswith("[") and "]" in text:
        text = text[1 : text.index("]")]
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return text[:64]


@lru_cache(maxsize=8)
def _normal_set(items: tuple[str, ...]) -> frozenset[str]:
    """A setting's addresses, normalized once per value of the setting (not per request)."""
    return frozenset(_normal(item) for item in items)


def _trusted() -> frozenset[str]:
    return _normal_set(tuple(settings.TM_RATE_TRUSTED_PROXIES))


def trusted_peer(request: HttpRequest) -> bool:
    """Whether the socket's peer is a trusted proxy, whose forwarding headers are believed."""
    return _normal(str(request.META.get("REMOTE_ADDR") or "")) in _trusted()


def loopback(caller: str) -> bool:
    """Whether a caller's address (as :func:`address` gives it) is this machine's loopback."""
    try:
        ip = ipaddress.ip_address(caller)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped.is_loopback
    return ip.is_loopback


def address(request: HttpRequest) -> str:
    """The caller's address as the rate limit keys it."""
    trusted = _trusted()
    peer = _normal(str(request.META.get("REMOTE_ADDR") or ""))
    if peer not in trusted:
        return peer
    forwarded = str(request.META.get("HTTP_X_FORWARDED_FOR") or "")
    hops = [_normal(hop) for hop in forwarded.split(",") if hop.strip()]
    for hop in reversed(hops):
        if hop not in trusted:
            return hop
    return peer if not hops else hops[0]


def exempt(request: HttpRequest, caller: str) -> bool:
    """The box's own calls: an exempt peer that no proxy forwarded."""
    if "HTTP_X_FORWARDED_FOR" in request.META:
        return False
    return caller in _normal_set(tuple(settings.TM_RATE_EXEMPT))


def limited(request: HttpRequest) -> str | None:
    """The bucket key of a caller the rate limit applies to, or None (limit off, or exempt).

    Worked out once per request: the settings' address lists are normalized once per value,
    and only the peer and the forwarded hops are parsed.
    """
    if not settings.TM_RATE_LIMIT:
        return None
    who = address(request)
    return None if exempt(request, who) else who


#: This process's own secrets, for when the rate limit's store does not answer.
_own = buckets.MemoryStore()
_log = logging.getLogger(__name__)


def keyed(request: HttpRequest, now: float) -> str:
    """The caller as a row may keep it: 32 hex digits that stand for it on the UTC day of ``now``.

    The digest is the rate limit's (``buckets.digest``) under the secret of the store
    ``TM_RATE_STORE`` names, so every worker (and, with Redis, every machine) gives one caller the
    same key; the next day's secret is new, and yesterday's keys link to nothing. A store that
    does not answer (Redis down) leaves this process's own secret for the day: the key is then
    the same only within the process.
    """
    return keyed_address(address(request), now)


def keyed_address(who: str, now: float) -> str:
    """:func:`keyed` for an address already worked out (the request's, held in memory)."""
    try:
        secret = buckets.store().day_secret(now)
    except Exception as exc:
        _log.warning("the rate limit's store did not give the day's secret: %s", type(exc).__name__)
        secret = _own.day_secret(now)
    return buckets.digest(secret, who).hex()
