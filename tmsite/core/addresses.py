"""Which addresses the box may connect to: the one place an address is judged.

The ``http`` mount only ever connects to a front door on loopback (:func:`is_loopback_host`);
the MCP client connects to the peers the operator configured, and only to public addresses
unless the operator allows a host (:class:`DialPolicy`). Both judge an address here, so a
shape refused in one place is refused for the same reason in the other:

* :func:`not_public` — why an address is not a public one (``loopback``, ``private``,
  ``link-local``, ``shared`` (carrier-grade NAT), ``unspecified``, ``multicast``,
  ``reserved``), or None. An IPv4 address mapped or embedded in IPv6 is judged as the IPv4
  address it carries.
* :meth:`DialPolicy.check_url` — a URL's shape before anything is resolved: ``https`` (plain
  ``http`` only to an allowed host, and only to loopback: a name's every address is judged
  when it is resolved), no credentials, a literal address judged as is.
* :meth:`DialPolicy.resolve` — the addresses a host resolves to, every one judged; the caller
  dials exactly the address it was handed, so a name that resolves once to a public address and
  then to a private one (DNS rebinding) is judged on the address actually dialled.

Spec: MCP, HTTP.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_SHARED = ipaddress.ip_network("100.64.0.0/10")


class AddressRefused(ValueError):
    """A URL or an address the policy refuses to connect to.

    Attributes:
        what: ``scheme``, ``credentials``, ``address`` or ``resolve``.
        host: The host as the URL names it.
        address: The address judged (a literal or a resolved one), or ``""``.
        reason: Why the address is refused (see :func:`not_public`), or ``""``.
    """

    def __init__(self, what: str, host: str, detail: str, address: str = "", reason: str = ""):
        super().__init__(detail)
        self.what = what
        self.host = host
        self.address = address
        self.reason = reason


def literal(host: str) -> IPAddress | None:
    """The address a host names literally (``[…]`` stripped), or None for a name."""
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


def _carried(address: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, NAT64-free forms), else itself."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address.sixtofour is not None:
            return address.sixtofour
    return address


def not_public(address: IPAddress) -> str | None:
    """Why ``address`` is not a public address, or None when it is one."""
    address = _carried(address)
    checks = (
        ("unspecified", address.is_unspecified),
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("shared", isinstance(address, ipaddress.IPv4Address) and address in _SHARED),
        ("reserved", address.is_reserved),
        ("private", address.is_private or not address.is_global),
    )
    return next((reason for reason, hit in checks if hit), None)


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` is ``localhost`` or a literal loopback address."""
    if host.lower() == "localhost":
        return True
    address = literal(host)
    return address is not None and _carried(address).is_loopback


@dataclass(frozen=True)
class DialPolicy:
    """Where a client may connect: public addresses over https, and the hosts the operator allows.

    Attributes:
        allowed_hosts: ``host`` or ``host:port`` entries (lowercase; IPv6 in brackets) the
            operator allows to resolve to addresses that are not public. Plain ``http`` is
            allowed only to such a host, and only while every address it has is on loopback.
    """

    allowed_hosts: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def of(cls, hosts: Iterable[str]) -> DialPolicy:
        """A policy allowing ``hosts`` (spaces and case ignored)."""
        return cls(frozenset(h.strip().lower() for h in hosts if h.strip()))

    def allows(self, host: str, port: int) -> bool:
        """Whether the operator allows ``host`` (at ``port``) to be other than public."""
        name = host.lower().strip("[]")
        shown = f"[{name}]" if ":" in name else name
        return bool({name, shown, f"{shown}:{port}"} & self.allowed_hosts)

    def check_url(self, url: str) -> tuple[str, str, int]:
        """(scheme, host, port) of a URL the policy takes, judged before anything is resolved.

        Raises:
            AddressRefused: not http(s), credentials in it, plain http where it is not allowed,
                or a literal address that is not public and not allowed.
        """
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        if parts.scheme not in {"http", "https"} or not host:
            raise AddressRefused("scheme", host, f"not an http(s) URL: {url[:200]!r}")
        if parts.username or parts.password:
            raise AddressRefused("credentials", host, "credentials belong in a token setting")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise AddressRefused("scheme", host, f"not a port: {url[:200]!r}") from None
        allowed = self.allows(host, port)
        address = literal(host)
        if address is not None and not allowed and (reason := not_public(address)):
            raise AddressRefused(
                "address", host, _refused(host, str(address), reason), str(address), reason
            )
        on_loopback = is_loopback_host(host) or address is None  # a name: judged once resolved
        if parts.scheme == "http" and not (allowed and on_loopback):
            raise AddressRefused(
                "scheme",
                host,
                f"plain http to {host} refused: https, or http to a loopback host the "
                "operator allows",
            )
        return parts.scheme, host, port

    def resolve(self, host: str, port: int, scheme: str = "https") -> list[str]:
        """Every address ``host`` resolves to, each judged; the caller dials one of these.

        Raises:
            AddressRefused: it resolves to nothing, or to an address the policy refuses (one
                such address refuses the host: the answer must not depend on which is dialled).
        """
        try:
            found = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            raise AddressRefused("resolve", host, f"{host} does not resolve: {exc}") from None
        addresses = list(dict.fromkeys(str(info[4][0]) for info in found))
        if not addresses:
            raise AddressRefused("resolve", host, f"{host} resolves to no address")
        allowed = self.allows(host, port)
        for text in addresses:
            address = ipaddress.ip_address(text.split("%", 1)[0])
            reason = not_public(address)
            if reason and not allowed:
                raise AddressRefused("address", host, _refused(host, text, reason), text, reason)
            if scheme == "http" and not _carried(address).is_loopback:
                raise AddressRefused(
                    "address", host, f"plain http to {host} dials {text}, not loopback", text, ""
                )
        return addresses


def _refused(host: str, address: str, reason: str) -> str:
    via = "" if literal(host) is not None else f" ({host} resolves to it)"
    return (
        f"{address} is a {reason} address{via}: the box connects only to public addresses "
        "and to the hosts its operator allows"
    )
