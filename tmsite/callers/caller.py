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

from tmsite.callers import buckets
from tmsite.core.errors import BadArgument
from tmsite.core.settled import settled

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


def trusted(peer: str) -> bool:
    """Whether the socket's peer is a trusted proxy, whose forwarding headers are believed."""
    return _normal(peer) in _trusted()


def loopback(caller: str) -> bool:
    """Whether a caller's address (as :func:`address` gives it) is this machine's loopback."""
    try:
        ip = ipaddress.ip_address(caller)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped.is_loopback
    return ip.is_loopback


def client(peer: str, forwarded: str | None) -> str:
    """The caller's own address (not its :func:`group`) from the peer and ``X-Forwarded-For``.

    ``peer`` is the socket's, ``forwarded`` the header (None: absent). The peer, or the last
    forwarded hop that is not a trusted proxy; a trusted proxy's forwarded caller that is not an
    address is :data:`UNREADABLE`. For a decision about one address (``/metrics``' allowed
    addresses), never for keeping.
    """
    trusted = _trusted()
    peer = _normal(peer)
    if peer not in trusted:
        return peer
    hops = [_normal(hop) for hop in (forwarded or "").split(",") if hop.strip()]
    for hop in reversed(hops):
        if hop not in trusted:
            return hop if is_address(hop) else UNREADABLE
    return peer if not hops else hops[0]


def address(peer: str, forwarded: str | None) -> str:
    """The caller as the rate limit keys it: :func:`group` of its :func:`client` address."""
    return group(client(peer, forwarded))


def exempt(who: str, forwarded: str | None) -> bool:
    """The box's own calls: an exempt caller ``who`` that no proxy forwarded."""
    return forwarded is None and who in _exempt()


def limited(who: str, forwarded: str | None) -> str | None:
    """The bucket key of caller ``who``, or None (the limit off, or ``who`` exempt)."""
    if not _limit_on() or exempt(who, forwarded):
        return None
    return who


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


# --- a request's META ------------------------------------------------------------------------


def seen(meta: Mapping[str, Any]) -> tuple[str, str | None]:
    """The socket's peer and the ``X-Forwarded-For`` header (None: absent) of a request's META."""
    forwarded = meta.get("HTTP_X_FORWARDED_FOR")
    return str(meta.get("REMOTE_ADDR") or ""), None if forwarded is None else str(forwarded)


def address_in(meta: Mapping[str, Any]) -> str:
    """:func:`address` of a request's ``META``.

    An environ the ASGI server made carries the caller its front worked out already
    (``ADDRESS_KEY``, ``tmsite.serve``): it is not worked out twice.
    """
    known = meta.get(ADDRESS_KEY)
    return known if isinstance(known, str) else address(*seen(meta))


def limited_in(meta: Mapping[str, Any]) -> str | None:
    """:func:`limited` of a request's ``META``, worked out once a request."""
    if not _limit_on():
        return None
    return limited(address_in(meta), seen(meta)[1])


#: This process's own secrets, for when the rate limit's store does not answer.
_own = buckets.MemoryStore()
_log = logging.getLogger(__name__)


def keyed(who: str, now: float) -> str:
    """Caller ``who`` as a row may keep it: 32 hex digits standing for it on ``now``'s UTC day.

    The digest is the rate limit's (``buckets.digest``) under the secret of the store
    ``TM_RATE_STORE`` names, so every worker (and, with Redis, every machine) gives one caller the
    same key; the next day's secret is new, and yesterday's keys link to nothing. A store that
    does not answer (Redis down) leaves this process's own secret for the day: the key is then
    the same only within the process.
    """
    try:
        secret = buckets.store().day_secret(now)
    except Exception as exc:
        _log.warning("the rate limit's store did not give the day's secret: %s", type(exc).__name__)
        secret = _own.day_secret(now)
    return buckets.digest(secret, who).hex()
