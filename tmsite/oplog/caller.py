"""Who is asking, for the rate limit and the admin login's throttle: the caller, held in memory.

The address is the socket's peer (``REMOTE_ADDR``), unless that peer is a trusted proxy
(``TM_RATE_TRUSTED_PROXIES``, loopback by default: nginx on the same machine), in which case it
is the last address in ``X-Forwarded-For`` that is not itself a trusted proxy. A loopback peer
with no forwarding header is the box itself (the http mount reading its own front door, a
health check, the operator's tools) and is exempt (``TM_RATE_EXEMPT``).

The caller is the address's :func:`group`: an IPv4 address itself, an IPv6 address its /64 (a
network handed to one subscriber holds 2**64 addresses, each of which would otherwise be a
caller of its own with a bucket, a daily count of proposals and a cap of its own), an
IPv4-mapped one its IPv4 address, loopback itself. The rate limit, the caller's cap on requests
in flight, the proposals' daily count and share of the queue, and the login throttle all key
the caller so. A trusted proxy's ``X-Forwarded-For`` whose caller is not an address
(``unknown``, an obfuscated name, garbage) is not a caller: every such request is
:data:`UNREADABLE`, one caller, and the MCP and REST surfaces refuse it (:func:`unreadable`).

The address is never written anywhere: not to the request log, not to a log line. Where a
caller must be recognised beyond one request (the admin login's throttle), it is :func:`keyed`:
the HMAC of the caller under the rate limit's secret for the UTC day, the key its buckets have.

Spec: OP1.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.http import HttpRequest

from tmsite.core.errors import BadArgument
from tmsite.core.settled import settled
from tmsite.oplog import buckets

#: Where an environ carries the caller's address its ASGI front worked out (never logged).
ADDRESS_KEY = "tm.caller_address"
#: The caller of every request whose trusted proxy forwarded no address for it.
UNREADABLE = "x-forwarded-for:unreadable"
#: The leading bits of an IPv6 address that name one caller (RFC 6177: a subscriber's /64 at
#: least; many are given a /56 or a /48).
IPV6_PREFIX = 64


def _normal(text: str) -> str:
    """An address as one spelling (an IPv6 form, brackets and quotes away), else its text."""
    return _known_normal(text) if len(text) <= 64 else _normalized(text)


#: Addresses repeat from request to request: each spelling is worked out once (bounded).
@lru_cache(maxsize=4096)
def _known_normal(text: str) -> str:
    return _normalized(text)


def _normalized(text: str) -> str:
    text = text.strip().strip('"')
    if text.startswith("[") and "]" in text:
        text = text[1 : text.index("]")]
    elif text.count(":") == 1:  # an IPv4 address with its port, as some proxies forward it
        text = text.partition(":")[0]
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return text[:64]


def is_address(text: str) -> bool:
    """Whether ``text`` (as :func:`_normal` gives it) is an IP address."""
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


@lru_cache(maxsize=4096)
def group(address: str) -> str:
    """The caller ``address`` stands for: an IPv6 address's /64, any other address itself.

    An IPv4-mapped IPv6 address is its IPv4 address, and loopback is itself (``::1`` is one
    address, the box's own). Text that is not an address is itself.
    """
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv4Address):
        return str(ip)
    if ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    if ip.is_loopback:
        return str(ip)
    return str(ipaddress.IPv6Network((ip, IPV6_PREFIX), strict=False))


@lru_cache(maxsize=8)
def _normal_set(items: tuple[str, ...]) -> frozenset[str]:
    """A setting's addresses, normalized once per value of the setting (not per request)."""
    return frozenset(_normal(item) for item in items)


@settled
def _trusted() -> frozenset[str]:
    return _normal_set(tuple(settings.TM_RATE_TRUSTED_PROXIES))


@settled
def _exempt() -> frozenset[str]:
    """The exempt callers (an exempt IPv6 address exempts the caller it stands for)."""
    return frozenset(group(address) for address in _normal_set(tuple(settings.TM_RATE_EXEMPT)))


@settled
def _limit_on() -> bool:
    return bool(settings.TM_RATE_LIMIT)


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
    """The caller as the rate limit keys it (:func:`group` of its address)."""
    return address_in(request.META)


def address_in(meta: Mapping[str, Any]) -> str:
    """:func:`address` from a request's ``META`` (or a WSGI environ).

    An environ the ASGI server made carries the caller its front worked out already
    (``ADDRESS_KEY``, ``tmsite.serve``): it is not worked out twice. A trusted proxy's
    forwarded caller that is not an address is :data:`UNREADABLE`.
    """
    known = meta.get(ADDRESS_KEY)
    if isinstance(known, str):
        return known
    return group(client_in(meta))


def client_in(meta: Mapping[str, Any]) -> str:
    """The caller's own address from a request's ``META``, not its :func:`group`.

    The socket's peer, or the last forwarded hop that is not a trusted proxy; a trusted proxy's
    forwarded caller that is not an address is :data:`UNREADABLE`. For a decision about one
    address (``/metrics``' allowed addresses), never for keeping.
    """
    trusted = _trusted()
    peer = _normal(str(meta.get("REMOTE_ADDR") or ""))
    if peer not in trusted:
        return peer
    forwarded = str(meta.get("HTTP_X_FORWARDED_FOR") or "")
    hops = [_normal(hop) for hop in forwarded.split(",") if hop.strip()]
    for hop in reversed(hops):
        if hop not in trusted:
            return hop if is_address(hop) else UNREADABLE
    return peer if not hops else hops[0]


def unreadable(caller: str | None) -> BadArgument | None:
    """The refusal of a request whose trusted proxy forwarded no address, else None."""
    if caller != UNREADABLE:
        return None
    return BadArgument(
        None,
        "the X-Forwarded-For header a trusted proxy sent names no IP address for the caller; "
        "the request is refused (the proxy must forward the client's address)",
        field="X-Forwarded-For",
    )


def exempt(request: HttpRequest, caller: str) -> bool:
    """The box's own calls: an exempt peer that no proxy forwarded."""
    return exempt_in(request.META, caller)


def exempt_in(meta: Mapping[str, Any], caller: str) -> bool:
    """:func:`exempt` from a request's ``META`` (or a WSGI environ)."""
    if "HTTP_X_FORWARDED_FOR" in meta:
        return False
    return caller in _exempt()


def limited(request: HttpRequest) -> str | None:
    """The bucket key of a caller the rate limit applies to, or None (limit off, or exempt).

    Worked out once per request: the settings' address lists are normalized once per value,
    and only the peer and the forwarded hops are parsed.
    """
    return limited_in(request.META)


def limited_in(meta: Mapping[str, Any]) -> str | None:
    """:func:`limited` from a request's ``META`` (or a WSGI environ)."""
    if not _limit_on():
        return None
    who = address_in(meta)
    return None if exempt_in(meta, who) else who


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
