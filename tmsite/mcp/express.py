"""The endpoint's answer to a request a prepared answer serves, worked out from its environ alone.

For ``ping``, ``tools/list``, ``initialize``, a kept plain read and the rest of
``tmsite.mcp.prepared``, building Django's request and running its middleware and the endpoint's
view costs several times what the answer does. :func:`answer` gives such a request the response
the endpoint's chain (``tmsite.wsgi.ENDPOINT_MIDDLEWARE`` around ``endpoint.mcp_endpoint``)
gives it — the same status, headers and body, the same rate-limit charge and request-log row —
by making the chain's checks, in the chain's order, on the WSGI environ: the ``Host``
(``ALLOWED_HOSTS``), the ``Origin``, the body's length, ``Content-Type`` and ``Accept``, the
strict parse, the protocol version and the era's envelope, then the caller's bucket, the answer
and its row (``hooks.observe_bare``, with the same ``hooks.Call`` the endpoint observes).

It takes only what it can answer exactly so. Everything else is None, for the chain to answer:
a request any check would refuse, a notification, a batch, a body the strict parser refuses, a
request with no current prepared answer, a session this process has not found live within the
memo's window (``sessions.known_live``), and settings under which the chain could answer
otherwise (TLS, ``SECURE_SSL_REDIRECT``, ``PREPEND_WWW``,
``DISALLOWED_USER_AGENTS``). ``tests/serve/test_express.py`` compares both answers, field by
field, over the methods, eras, callers and headers.

Spec: T1, T7.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http.request import split_domain_port, validate_host
from django.utils.http import parse_header_parameters

from tmsite.bus import delivery
from tmsite.callers import caller
from tmsite.core import tracing
from tmsite.core.settled import settled
from tmsite.mcp import endpoint, observed, prepared
from tmsite.mcp.envelope import (
    EnvelopeRefusal,
    Message,
    ParseFailure,
    check_modern,
    classify,
    loads_strict,
    modern_meta,
)
from tmsite.mcp.protocol import (
    DEFAULT_HEADERLESS_VERSION,
    STATELESS_VERSION,
    SUPPORTED_VERSIONS,
    CallContext,
)
from tmsite.oplog import hooks
from tmsite.subscriptions import sessions

Parts = tuple[int, list[tuple[bytes, bytes]], bytes]

#: The ``Host`` values judged so far, and whether each is served (emptied past
#: ``MAX_REMEMBERED``).
_hosts: dict[str, bool] = {}
#: The most values of one header remembered with their verdict.
MAX_REMEMBERED = 256
#: ``Content-Type`` values the endpoint takes, as the chain reads them (rule 5).
_JSON_CHARSETS = frozenset({None, "utf-8", "utf8"})


def answer(environ: dict[str, Any], body: bytes) -> Parts | None:
    """The chain's answer to this ``POST /api/mcp``, or None when the chain must give it."""
    if not _plain(environ):
        return None
    token = environ.get("HTTP_MCP_SESSION_ID")
    if token is not None and not sessions.known_live(str(token)):  # the chain asks the database
        return None
    origin = environ.get("HTTP_ORIGIN")
    if origin is not None and not endpoint.origin_allowed(origin):
        return None
    if not _host_allowed(environ) or not _body_checks(environ, body):
        return None
    asked = _request(environ, body)
    if asked is None:
        return None
    message, ctx, key, entry = asked
    with prepared.answering(key, entry):
        answered, decision = hooks.observe_bare(
            observed.call(message, ctx),
            surface="mcp-http",
            protocol=str(environ.get("HTTP_MCP_PROTOCOL_VERSION") or "").strip()[:16],
            who=caller.limited_in(environ),
            address=caller.address_in(environ),
            status=200,
            trace=tracing.http_carrier(environ),
        )
    fields: list[tuple[str, str]] = []
    if origin is not None:
        fields += [("Access-Control-Allow-Origin", origin), ("Vary", "Origin")]
    if message.method == "initialize" and answered.error_code is None and delivery.here():
        fields.append((sessions.HEADER, sessions.issue()))  # rule 3a: for subscriptions alone
        if origin is not None:
            fields.append(("Access-Control-Expose-Headers", sessions.HEADER))
    if decision is not None:
        fields += hooks.rate_fields(decision)
    content = answered.encoded()
    headers = [
        *_JSON_FIELDS,
        *((name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in fields),
        *_security_headers(),
        (b"content-length", str(len(content)).encode("ascii")),
    ]
    return 200, headers, content


#: The fields every answer starts with, as they are sent.
_JSON_FIELDS = ((b"content-type", b"application/json"), (b"cache-control", b"no-store"))


def _request(
    environ: dict[str, Any], body: bytes
) -> tuple[Message, CallContext, prepared.Key, prepared.Prepared] | None:
    """Rules 7–8 and the era's envelope: the request and its current prepared answer, or None."""
    try:
        message = classify(loads_strict(body))
    except (ParseFailure, EnvelopeRefusal, RecursionError):
        return None
    params = message.params if message.params is not None else {}
    if message.kind != "request" or message.id is None or not isinstance(params, dict):
        return None
    header = environ.get("HTTP_MCP_PROTOCOL_VERSION")
    version = header.strip(" \t") if header is not None else DEFAULT_HEADERLESS_VERSION
    if version not in SUPPORTED_VERSIONS:
        return None
    try:
        if version == STATELESS_VERSION:
            ctx = check_modern(message, _headers(environ))
        elif modern_meta(message) is not None:
            return None
        else:
            ctx = CallContext(version=version, transport="http")
        key = prepared.variant(message.method, params, ctx)
        entry = prepared.current(key) if key is not None else None
    except Exception:  # a refusal for the chain to give, or an answer for it to build
        return None
    return None if key is None or entry is None else (message, ctx, key, entry)


def _plain(environ: dict[str, Any]) -> bool:
    """Whether the chain's middleware can only add the fields of :func:`_security_fields`.

    Not so under TLS (HSTS, the redirect), for a request Django would take for a secure one,
    or where the chain may redirect or refuse by user agent.
    """
    proxy_header = _plain_settings()
    if proxy_header is None or environ.get("wsgi.url_scheme") != "http":
        return False
    return not proxy_header or proxy_header not in environ


@settled
def _plain_settings() -> str | None:
    """None when a setting can make the chain redirect or refuse; else the proxy's TLS header."""
    if (
        getattr(settings, "TM_TLS", False)
        or settings.SECURE_SSL_REDIRECT
        or settings.PREPEND_WWW
        or settings.DISALLOWED_USER_AGENTS
    ):
        return None
    proxy = settings.SECURE_PROXY_SSL_HEADER
    return str(proxy[0]) if proxy is not None else ""


def _host_allowed(environ: dict[str, Any]) -> bool:
    """``HttpRequest.get_host`` without raising: the host is one ``ALLOWED_HOSTS`` serves."""
    forwarded, allowed = _host_settings()
    if forwarded and "HTTP_X_FORWARDED_HOST" in environ:
        host = str(environ["HTTP_X_FORWARDED_HOST"])
    elif "HTTP_HOST" in environ:
        host = str(environ["HTTP_HOST"])
    else:
        return False  # the server's name and port: the chain works it out
    known = _hosts.get(host)
    if known is None:
        domain, _port = split_domain_port(host)
        known = _remember(_hosts, host, bool(domain) and validate_host(domain, allowed))
    return known


@settled
def _host_settings() -> tuple[bool, list[str]]:
    """``USE_X_FORWARDED_HOST``, and the hosts served as ``get_host`` takes them."""
    allowed = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    _hosts.clear()
    return bool(settings.USE_X_FORWARDED_HOST), allowed


def _body_checks(environ: dict[str, Any], body: bytes) -> bool:
    """Rules 4–6: the whole body as announced, JSON in UTF-8, an ``Accept`` that allows JSON."""
    length = str(environ.get("CONTENT_LENGTH") or "")
    if not length.isdigit() or int(length) != len(body):
        return False
    content_type = str(environ.get("CONTENT_TYPE") or "")
    takes_json = _content_types.get(content_type)
    if takes_json is None:
        takes_json = _remember(_content_types, content_type, _json_content_type(content_type))
    if not takes_json:
        return False
    accept = str(environ.get("HTTP_ACCEPT") or "")
    allows_json = _accepts.get(accept)
    if allows_json is None:
        allows_json = _remember(_accepts, accept, endpoint.accepts_json(accept))
    return allows_json


def _json_content_type(value: str) -> bool:
    """Whether a ``Content-Type`` is JSON in UTF-8, as the chain reads it (rule 5)."""
    media, params = parse_header_parameters(value)
    charset = params.get("charset")
    if media.lower() != "application/json":
        return False
    return (charset.strip('"').lower() if charset is not None else None) in _JSON_CHARSETS


#: ``Content-Type`` and ``Accept`` values judged so far (each emptied past ``MAX_REMEMBERED``):
#: a client sends the same ones on every request.
_content_types: dict[str, bool] = {}
_accepts: dict[str, bool] = {}


def _remember(judged: dict[str, bool], value: str, verdict: bool) -> bool:
    if len(judged) >= MAX_REMEMBERED:
        judged.clear()
    judged[value] = verdict
    return verdict


def _headers(environ: dict[str, Any]) -> dict[str, str]:
    """The request's headers by lower-cased name, as ``request.headers`` gives them."""
    found = {
        name[5:].replace("_", "-").lower(): str(value)
        for name, value in environ.items()
        if name.startswith("HTTP_")
    }
    for name in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        if name in environ:
            found[name.replace("_", "-").lower()] = str(environ[name])
    return found


@settled
def _security_headers() -> tuple[tuple[bytes, bytes], ...]:
    """:func:`_security_fields` as they are sent."""
    return tuple(
        (name.lower().encode("latin-1"), value.encode("latin-1"))
        for name, value in _security_fields()
    )


@settled
def _security_fields() -> list[tuple[str, str]]:
    """What Django's ``SecurityMiddleware`` adds to an answer over plain http."""
    fields: list[tuple[str, str]] = []
    if settings.SECURE_CONTENT_TYPE_NOSNIFF:
        fields.append(("X-Content-Type-Options", "nosniff"))
    policy = settings.SECURE_REFERRER_POLICY
    if policy:  # a comma-separated string or a list of values, as the middleware joins them
        values = [v.strip() for v in policy.split(",")] if isinstance(policy, str) else policy
        fields.append(("Referrer-Policy", ",".join(values)))
    opener = settings.SECURE_CROSS_ORIGIN_OPENER_POLICY
    if opener:
        fields.append(("Cross-Origin-Opener-Policy", opener))
    return fields
