"""The Streamable HTTP endpoint: ``POST /api/mcp``, stateless, JSON only.

One function over plain values, :func:`serve`: the request's method, headers and body in
(``Asked``), its status, headers and body or stream out (``Answered``); no Django request is
built. The ASGI application (``tmsite.serve.app``) calls it directly, in its event loop or on a
thread; under WSGI, gunicorn and the test client the django-ninja route below (the endpoint of
record in the API schema) hands it the request's values. The route takes no parameters, so
ninja never validates (or answers for) the JSON-RPC envelope. The HTTP-level rules, in the
order they are applied (the JSON-RPC rules are in ``envelope.py``, with their sources):

1. ``Origin`` present and not allowed → 403 (2025-11-25 and 2026-07-28 transports: "If the
   Origin header is present and invalid, servers MUST respond with HTTP 403"). Allowed: the
   configured ``TM_ALLOWED_ORIGINS`` and loopback origins (http/https on 127.0.0.1, localhost,
   [::1], any port). A ``Host`` that ``ALLOWED_HOSTS`` does not serve → 400, as Django's
   ``get_host`` judges it, before the request is logged.
2. ``OPTIONS`` answers the CORS preflight; the origin is echoed only when allowed.
3. Anything but POST → 405 with ``Allow: POST`` (every revision: GET MUST open a stream or be
   answered 405). Where streams are delivered (``python -m tmsite.serve``), a ``GET`` or
   ``DELETE`` carrying a 2025-11-25 ``Mcp-Session-Id`` is the session's (rule 3a).
3a. Sessions (:mod:`tmsite.subscriptions.sessions`, SUB2), where streams are delivered only: a
   request whose ``Mcp-Session-Id`` is not valid (forged, expired, ended) → 404 with -32600
   (and the request's id when readable), so the client initializes again; ``DELETE`` with a
   valid one ends it (204); ``GET`` with one opens its stream (``Accept`` must list
   ``text/event-stream``, else 406), priced as a listen from the caller's bucket (short: 429
   with the listen's ``rate-limited`` refusal and ``Retry-After``), its log row's method
   ``session-stream``; ``GET`` or ``DELETE`` without one → 405. A 2025-era
   ``initialize`` answered there carries a new ``Mcp-Session-Id``.
4. ``Content-Length`` over 4 MiB → 413 without reading the body; a body that turns out longer
   than announced is also 413.
5. ``Content-Type`` other than ``application/json`` (a ``charset`` of utf-8 is fine) → 415.
6. ``Accept`` that excludes JSON → 406 (absent, ``*/*``, ``application/*`` and
   ``application/json`` with q > 0 are fine).
7. ``MCP-Protocol-Version`` naming a version not served → 400 with -32022 (2025-06-18 onwards:
   "invalid or unsupported → MUST 400"; the 2026-07-28 error shape is used for both eras).
8. The body is parsed strictly, classified, and answered per ``envelope.py``: envelope failures in
   4xx, errors inside a well-formed request in 200 (-32601 in 404 for 2026-07-28).

A failure inside the server is -32603 carrying the request's id whenever the body was read far
enough to know it (in 200, as every error inside a well-formed request; for a batch, one error
per request in it); only when no id could be read is it an id-less -32603 in 500. That holds
outside the endpoint too (``failure_outside``, for Django's ``handler500`` on this path: a
middleware that failed), and the request log row names the method and says ``internal``.

Responses are ``application/json`` with ``Cache-Control: no-store``; the only session id is the
one ``initialize`` issues where streams are delivered (rule 3a), the only event streams those
``tmsite.serve`` holds.

Spec: T1, T2, T3, T4, T5, T6, T8, T12, SUB2.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse
from django.http.request import split_domain_port, validate_host
from django.utils import timezone
from django.utils.http import parse_header_parameters
from django.views import defaults
from ninja import Router

from tmsite.callers import caller, costs
from tmsite.core import tracing
from tmsite.core.errors import RateLimited, Refusal
from tmsite.core.settled import settled
from tmsite.mcp import observed
from tmsite.mcp.codes import rpc_error
from tmsite.mcp.envelope import (
    MAX_BODY_BYTES,
    Answer,
    EnvelopeRefusal,
    Message,
    ParseFailure,
    check_modern,
    classify,
    dumps,
    error_response,
    loads_strict,
    modern_meta,
    unsupported_version,
    valid_id,
)
from tmsite.mcp.protocol import (
    BATCH_VERSIONS,
    DEFAULT_HEADERLESS_VERSION,
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    STATELESS_VERSION,
    SUPPORTED_VERSIONS,
    CallContext,
    StreamOffer,
    StreamResult,
)
from tmsite.oplog import failures, hooks, recorder
from tmsite.subscriptions import sessions

if TYPE_CHECKING:
    from tmsite.mcp import prepared

router = Router(tags=["mcp"])
_host_log = logging.getLogger("django.security.DisallowedHost")

#: Request headers a browser may send cross-origin (the preflight's allow list).
CORS_ALLOWED_HEADERS = (
    "content-type",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "last-event-id",
    "mcp-session-id",
)
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
#: The 405's message where no stream is delivered (no session is kept: rule 3a)…
METHOD_NOT_ALLOWED_SENTENCE = (
    "This MCP endpoint takes JSON-RPC messages by POST only: this server keeps no session and "
    "opens no stream, so a GET has nothing to open and a DELETE nothing to end."
)
#: … and where it is: a GET or DELETE lacking the session's header.
SESSION_HEADER_SENTENCE = (
    "This MCP endpoint takes JSON-RPC messages by POST. A GET opens a 2025-11-25 session's "
    "stream and a DELETE ends that session, each with the Mcp-Session-Id header that "
    "initialize answered."
)
HOST_SENTENCE = "This Host is not served here."
#: The endpoint's path.
MCP_PATH = "/api/mcp"
_ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE"]
_READ_CHUNK = 64 * 1024
#: ``Asked.value`` of a body not parsed yet.
UNPARSED: Any = object()
#: The most values of one header remembered with their verdict (a client sends the same ones).
MAX_REMEMBERED = 256


@dataclasses.dataclass(slots=True)
class Asked:
    """One request to the endpoint, as plain values.

    Attributes:
        method: The HTTP method.
        headers: The request's headers by lower-cased name (repeated ones joined by commas).
        body: The body; None when it was longer than ``MAX_BODY_BYTES`` (the rest unread).
        peer: The socket's peer address.
        server: The server's own name and port: the host of a request that names none.
        address: The caller's address when the server worked it out already (``caller``).
        value: The body parsed already (``loads_strict``), else ``UNPARSED``.
        held: Whether the server can hold the answer open as a stream (a listen).
        offer: A session's GET stream the server can hold, which the endpoint fills in when it
            opens one; None where no stream can be held.
        chosen: The prepared answer the server chose for the request in its event loop
            (``prepared.current``): the request is answered with it.
        delivers: Whether the server holds streams and sessions' subscriptions (``python -m
            tmsite.serve``; not a WSGI server): a session's GET and DELETE, ``Mcp-Session-Id``
            and the capabilities that say so exist only there.
    """

    method: str
    headers: Mapping[str, str]
    body: bytes | None = b""
    peer: str = ""
    server: str = ""
    address: str | None = None
    value: Any = UNPARSED
    held: bool = False
    offer: sessions.StreamOffer | None = None
    chosen: prepared.Chosen | None = None
    delivers: bool = False


@dataclasses.dataclass(slots=True)
class Answered:
    """The endpoint's answer: a status, header fields, a body, or a stream to hold.

    ``internal`` marks the answer to a failure inside the server (its log row says so).
    """

    status: int
    headers: list[tuple[str, str]]
    body: bytes = b""
    stream: StreamResult | None = None
    internal: bool = False

    def header(self, name: str) -> str | None:
        """The value of field ``name`` (any case), or None."""
        lowered = name.lower()
        return next((v for k, v in self.headers if k.lower() == lowered), None)


# --- helpers --------------------------------------------------------------------------------


def origin_allowed(origin: str) -> bool:
    """A configured site origin, or http(s) on a loopback host with any port."""
    configured = {o.rstrip("/").lower() for o in settings.TM_ALLOWED_ORIGINS}
    if origin.rstrip("/").lower() in configured:
        return True
    try:
        parts = urlsplit(origin)
        parts.port  # noqa: B018  (raises ValueError on a malformed port)
    except ValueError:
        return False
    return (
        parts.scheme in ("http", "https")
        and (parts.hostname or "") in LOOPBACK_HOSTS
        and parts.username is None
        and parts.path in ("", "/")
        and not parts.query
        and not parts.fragment
    )


def _fields(
    origin: str | None, content_type: str | None = "application/json"
) -> list[tuple[str, str]]:
    fields = [("Content-Type", content_type)] if content_type is not None else []
    fields.append(("Cache-Control", "no-store"))
    if origin is not None:
        fields += [("Access-Control-Allow-Origin", origin), ("Vary", "Origin")]
    return fields


def _json(
    body: Any, status: int = 200, origin: str | None = None, data: bytes | None = None
) -> Answered:
    content = data if data is not None else dumps(body).encode()
    return Answered(status, _fields(origin), content)


def _refuse(status: int, code: int, message: str, origin: str | None = None) -> Answered:
    return _json(error_response(None, code, message), status, origin)


def _accepted(origin: str | None, status: int = 202) -> Answered:
    return Answered(status, _fields(origin, None))


def accepts_json(accept: str) -> bool:
    """Rule 6: whether an ``Accept`` value allows JSON (absent and wildcards do)."""
    if not accept.strip():
        return True
    for item in accept.split(","):
        media, *params = (p.strip() for p in item.split(";"))
        if media.lower() not in ("application/json", "application/*", "*/*"):
            continue
        quality = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if quality > 0:
            return True
    return False


def _json_content_type(value: str) -> bool:
    """Rule 5: whether a ``Content-Type`` is JSON (in UTF-8, when a charset is named)."""
    media, params = parse_header_parameters(value)
    if media.lower() != "application/json":
        return False
    charset = params.get("charset")
    return charset is None or charset.strip('"').lower() in ("utf-8", "utf8")


#: ``Host``, ``Content-Type`` and ``Accept`` values judged so far (each emptied past
#: ``MAX_REMEMBERED``).
_hosts: dict[str, bool] = {}
_content_types: dict[str, bool] = {}
_accepts: dict[str, bool] = {}


def _judged(judged: dict[str, bool], value: str, judge: Any) -> bool:
    verdict = judged.get(value)
    if verdict is None:
        if len(judged) >= MAX_REMEMBERED:
            judged.clear()
        verdict = judged[value] = bool(judge(value))
    return verdict


def host_allowed(headers: Mapping[str, str], server: str) -> bool:
    """Whether ``ALLOWED_HOSTS`` serves the request's host, as Django's ``get_host`` judges it.

    A refusal is logged as Django logs it (``django.security.DisallowedHost``).
    """
    forwarded, allowed = _host_settings()
    if forwarded and "x-forwarded-host" in headers:
        host = headers["x-forwarded-host"]
    else:
        host = headers.get("host") or server
    if _judged(_hosts, host, lambda value: _served(value, allowed)):
        return True
    domain, _port = split_domain_port(host)
    why = (
        f" You may need to add {domain!r} to ALLOWED_HOSTS."
        if domain
        else " The domain name provided is not valid according to RFC 1034/1035."
    )
    _host_log.error(f"Invalid HTTP_HOST header: {host!r}.{why}", extra={"status_code": 400})
    return False


def _served(host: str, allowed: list[str]) -> bool:
    domain, _port = split_domain_port(host)
    return bool(domain) and validate_host(domain, allowed)


@settled
def _host_settings() -> tuple[bool, list[str]]:
    """``USE_X_FORWARDED_HOST``, and the hosts served as ``get_host`` takes them."""
    allowed = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    _hosts.clear()
    return bool(settings.USE_X_FORWARDED_HOST), allowed


def version_header(headers: Mapping[str, str]) -> str | None:
    """The ``MCP-Protocol-Version`` a request names (None: none)."""
    header = headers.get("mcp-protocol-version")
    return header.strip(" \t") if header is not None else None


# --- the endpoint ---------------------------------------------------------------------------


def serve(asked: Asked) -> Answered:
    """The endpoint's answer to ``asked``: rate limit, request log and timing around the rules.

    Never raises: every failure is a JSON body with a 4xx, a 200 or (no id known) a 500.
    """
    headers = asked.headers
    if not host_allowed(headers, asked.server):  # refused before the request is logged
        return _refuse(400, INVALID_REQUEST, HOST_SENTENCE)
    forwarded = headers.get("x-forwarded-for")
    address = asked.address if asked.address is not None else caller.address(asked.peer, forwarded)
    answered, decision = hooks.observe_answer(
        lambda exchange: _answer(asked, exchange),
        surface="mcp-http",
        protocol=headers.get("mcp-protocol-version") or "",
        who=caller.limited(address, forwarded),
        address=address,
        trace=tracing.header_carrier(headers),
        status=lambda answered: answered.status,
        size=lambda answered: len(answered.body),
        outcome=_outcome,
    )
    if decision is not None:
        answered.headers.extend(hooks.rate_fields(decision))
    return answered


def _outcome(answered: Answered) -> str:
    if answered.internal:
        return hooks.INTERNAL
    return hooks.outcome_of(answered.status, answered.header("Content-Type"), answered.body)


def _answer(asked: Asked, exchange: hooks.Exchange) -> Answered:
    read: list[Any] = []
    try:
        return _serve(asked, read, exchange)
    except Exception as exc:
        failures.report("mcp-http endpoint", exc)
        return internal_error(read[0] if read else None, asked.headers.get("origin"))


def _ids(value: Any) -> list[Any]:
    """The ids of the requests a parsed body holds (one message or a batch)."""
    items = value if isinstance(value, list) else [value]
    return [
        item["id"]
        for item in items
        if isinstance(item, dict)
        and isinstance(item.get("method"), str)
        and valid_id(item.get("id"))
    ]


def internal_error(value: Any, origin: str | None = None) -> Answered:
    """-32603 for each request ``value`` (the parsed body, or None) holds, or id-less in a 500."""
    allowed = origin if origin is not None and origin_allowed(origin) else None
    ids = _ids(value)
    if not ids:
        answered = _json(error_response(None, INTERNAL_ERROR, "Internal error."), 500, allowed)
    else:
        errors = [error_response(rid, INTERNAL_ERROR, "Internal error.") for rid in ids]
        answered = _json(errors if isinstance(value, list) else errors[0], 200, allowed)
    answered.internal = True
    return answered


def _serve(asked: Asked, read: list[Any], exchange: hooks.Exchange) -> Answered:
    """Apply the module's rules in order; the first that refuses answers."""
    headers = asked.headers
    origin = headers.get("origin")
    if origin is not None and not origin_allowed(origin):
        # not echoed: the caller is not one this endpoint answers
        return _refuse(403, INVALID_REQUEST, "This Origin may not call this endpoint.")
    method = asked.method
    if method == "OPTIONS":
        return _preflight(headers, origin, asked.delivers)
    if method in ("GET", "DELETE") and asked.delivers:
        answered = _session_request(headers, method, origin, asked.offer, exchange)
        if answered is not None:
            return answered
    if method != "POST":
        # a session's GET or DELETE that lacks its header, or any other method
        session_method = method in ("GET", "DELETE") and asked.delivers
        sentence = SESSION_HEADER_SENTENCE if session_method else METHOD_NOT_ALLOWED_SENTENCE
        answered = _refuse(405, INVALID_REQUEST, sentence, origin)
        answered.headers.append(("Allow", "POST"))
        return answered
    try:
        raw = _checked_body(asked)
        value = asked.value if asked.value is not UNPARSED else _parse_body(raw)
        read.append(value)
        session = _session_of(headers, value, asked.delivers)
        return _dispatch(value, asked, origin, session, exchange)
    except EnvelopeRefusal as refusal:
        return _json(refusal.body(), refusal.status, origin)


def _session_of(headers: Mapping[str, str], value: Any, delivers: bool) -> sessions.Session | None:
    """Rule 3a for a POST: its valid session, or None when it carries none (or none is kept).

    Raises:
        EnvelopeRefusal: 404 for a session id that is not valid, with the request's id.
    """
    token = headers.get("mcp-session-id")
    if token is None or not delivers or version_header(headers) == STATELESS_VERSION:
        return None
    session = sessions.valid(token)
    if session is None:
        rid = value.get("id") if isinstance(value, dict) else None
        raise EnvelopeRefusal(
            404, INVALID_REQUEST, sessions.GONE_SENTENCE, rid if valid_id(rid) else None
        )
    return session


def _session_request(
    headers: Mapping[str, str],
    method: str,
    origin: str | None,
    offer: sessions.StreamOffer | None,
    exchange: hooks.Exchange,
) -> Answered | None:
    """Rule 3a for a GET or DELETE; None when it carries no session (405 as any other)."""
    token = headers.get("mcp-session-id")
    if token is None:
        return None
    session = sessions.valid(token)
    if session is None:
        return _refuse(404, INVALID_REQUEST, sessions.GONE_SENTENCE, origin)
    if method == "DELETE":
        sessions.end(session)
        return _accepted(origin, 204)
    if offer is None:  # no stream can be held here
        return None

    def opened() -> Answered:
        if not sessions.accepts_stream(offer.accept):
            return _refuse(
                406,
                INVALID_REQUEST,
                "The session's GET stream is an event stream: Accept must list text/event-stream.",
                origin,
            )
        offer.session, offer.caller = session, exchange.caller or ""
        offer.log = hooks.hold(exchange)
        return _accepted(origin, 200)

    def refuse(refused: Refusal) -> Answered:  # a listen's refusal: 429, or 400 (a caller)
        error = rpc_error(refused, "2025")
        limited = isinstance(refused, RateLimited)
        body = error_response(None, error.code, error.message, error.data)
        answered = _json(body, 429 if limited else 400, origin)
        if limited:
            answered.headers.append(("Retry-After", str((error.data or {}).get("retryAfter", 1))))
        return answered

    def fail() -> Answered:
        return _json(error_response(None, INTERNAL_ERROR, "Internal error."), 500, origin)

    # priced as a listen, its row named session-stream
    return observed.session_stream(
        version_header(headers) or "",
        opened,
        refuse,
        fail,
        outcome=_stream_outcome,
        size=lambda answered: len(answered.body),
        exchange=exchange,
    )


def _stream_outcome(answered: Answered) -> str:
    """``ok``, the JSON-RPC error's reason, its ``rpc<code>``, else ``http-<status>``."""
    if answered.status < 400:
        return "ok"
    try:
        error = json.loads(answered.body).get("error", {})
    except (ValueError, AttributeError):
        error = {}
    data = error.get("data") if isinstance(error, dict) else None
    reason = data.get("reason") if isinstance(data, dict) else None
    if isinstance(reason, str):
        return reason[:32]
    code = error.get("code") if isinstance(error, dict) else None
    return f"rpc{code}" if isinstance(code, int) else f"http-{answered.status}"


def _checked_body(asked: Asked) -> bytes:
    """Rules 4–6: the body of a POST whose length, ``Content-Type`` and ``Accept`` pass.

    Raises:
        EnvelopeRefusal: 400 for a ``Content-Length`` that is not a number, 413 for a body over
            4 MiB (announced or found while reading), 415, 406.
    """
    headers = asked.headers
    try:
        announced = int(headers.get("content-length") or "0")
    except ValueError:
        raise EnvelopeRefusal(
            400, INVALID_REQUEST, "The Content-Length header is not a number."
        ) from None
    if announced > MAX_BODY_BYTES:
        raise EnvelopeRefusal(413, INVALID_REQUEST, "The body is larger than 4 MiB.")
    if not _judged(_content_types, headers.get("content-type", ""), _json_content_type):
        raise EnvelopeRefusal(
            415, INVALID_REQUEST, "The body must be sent as Content-Type: application/json."
        )
    if not _judged(_accepts, headers.get("accept", ""), accepts_json):
        raise EnvelopeRefusal(
            406, INVALID_REQUEST, "The Accept header must allow application/json."
        )
    if asked.body is None or len(asked.body) > MAX_BODY_BYTES:
        raise EnvelopeRefusal(413, INVALID_REQUEST, "The body is larger than 4 MiB.")
    return asked.body


def _parse_body(raw: bytes) -> Any:
    """The body as strict JSON; a parse failure is an id-less -32700 in a 400."""
    try:
        return loads_strict(raw)
    except ParseFailure as exc:
        raise EnvelopeRefusal(400, PARSE_ERROR, f"Parse error: {exc}") from None


def _dispatch(
    value: Any,
    asked: Asked,
    origin: str | None,
    session: sessions.Session | None,
    exchange: hooks.Exchange,
) -> Answered:
    """Rules 7–8: check the version header, then answer one message or a batch.

    Raises:
        EnvelopeRefusal: -32022 for a ``MCP-Protocol-Version`` not served (echoing the body's id
            when it is a valid one), and every envelope refusal of ``_single`` and ``_batch``.
    """
    header_version = version_header(asked.headers)
    version = header_version or DEFAULT_HEADERLESS_VERSION
    if header_version is not None and header_version not in SUPPORTED_VERSIONS:
        rid = value.get("id") if isinstance(value, dict) else None
        raise unsupported_version(header_version, rid if valid_id(rid) else None)
    if isinstance(value, list):
        return _batch(value, version, origin, session, asked.delivers, exchange)
    return _single(classify(value), version, asked, origin, session, exchange)


def _preflight(headers: Mapping[str, str], origin: str | None, delivers: bool) -> Answered:
    asked = headers.get("access-control-request-headers", "")
    allowed = list(CORS_ALLOWED_HEADERS)
    for name in (h.strip().lower() for h in asked.split(",")):
        if name.startswith("mcp-param-") and name not in allowed and name.isascii():
            allowed.append(name)
    # a session's GET stream and DELETE exist only where streams are delivered (rule 3a)
    methods = "GET, POST, DELETE, OPTIONS" if delivers else "POST, OPTIONS"
    answered = _accepted(origin, 204)
    answered.headers += [
        ("Access-Control-Allow-Methods", methods),
        ("Access-Control-Allow-Headers", ", ".join(allowed)),
        ("Access-Control-Max-Age", "600"),
    ]
    return answered


def _context(
    message: Message,
    version: str,
    asked: Asked,
    session: sessions.Session | None,
    exchange: hooks.Exchange,
) -> CallContext:
    """What the method handler is told of a request: its version, session, stream offer."""
    if version == STATELESS_VERSION:
        ctx = check_modern(message, asked.headers, delivers=asked.delivers, exchange=exchange)
    else:
        meta = modern_meta(message)
        if meta is not None:
            raise EnvelopeRefusal(
                400,
                HEADER_MISMATCH,
                "The request carries the 2026-07-28 _meta envelope but the "
                "MCP-Protocol-Version header is missing or names another version.",
                message.id,
            )
        ctx = CallContext(
            version=version,
            transport="http",
            session=session,
            delivers=asked.delivers,
            exchange=exchange,
        )
    if asked.held:
        offer = StreamOffer(message.id, asked.headers.get("accept", ""))
        ctx = dataclasses.replace(ctx, stream=offer)
    if asked.chosen is not None:
        ctx = dataclasses.replace(ctx, chosen=asked.chosen)
    return ctx


def _single(
    message: Message,
    version: str,
    asked: Asked,
    origin: str | None,
    session: sessions.Session | None,
    exchange: hooks.Exchange,
) -> Answered:
    modern = version == STATELESS_VERSION
    if message.kind == "response":
        if modern:
            raise EnvelopeRefusal(
                400, INVALID_REQUEST, "Clients must not send JSON-RPC responses in 2026-07-28."
            )
        return _accepted(origin)
    if message.kind == "notification":
        return _accepted(origin)
    observed.asked(message, exchange)
    ctx = _context(message, version, asked, session, exchange)
    answer = observed.run_request(message, ctx)  # the caller's bucket, a log row
    if answer.stream is not None:
        return Answered(200, _fields(origin, "text/event-stream"), stream=answer.stream)
    status = answer.status or (404 if modern and answer.error_code == METHOD_NOT_FOUND else 200)
    answered = _json(None, status, origin, data=answer.encoded())
    if message.method == "initialize" and answer.error_code is None and asked.delivers:
        answered.headers.append((sessions.HEADER, sessions.issue()))  # rule 3a
        if origin is not None:
            answered.headers.append(("Access-Control-Expose-Headers", sessions.HEADER))
    return answered


def _batch(
    items: list[Any],
    version: str,
    origin: str | None,
    session: sessions.Session | None,
    delivers: bool,
    exchange: hooks.Exchange,
) -> Answered:
    if not items:
        raise EnvelopeRefusal(400, INVALID_REQUEST, "An empty batch is not a JSON-RPC message.")
    if version not in BATCH_VERSIONS:
        raise EnvelopeRefusal(
            400,
            INVALID_REQUEST,
            f"JSON-RPC batches are not accepted under protocol {version}; send one message per "
            "request.",
        )
    parts: list[str] = []
    for item in items:
        try:
            message = classify(item)
        except EnvelopeRefusal as refusal:
            parts.append(dumps(refusal.body()))
            continue
        if message.kind != "request":
            continue
        ctx = CallContext(
            version=version,
            transport="http",
            session=session,
            delivers=delivers,
            exchange=exchange,
        )
        answer: Answer = observed.run_request(message, ctx)
        parts.append(answer.text)
    if not parts:
        return _accepted(origin)
    return _json(None, 200, origin, data=("[" + ",".join(parts) + "]").encode())


# --- under Django (WSGI, gunicorn, the test client) -----------------------------------------


@router.api_operation(_ALL_METHODS, "/mcp", auth=None, include_in_schema=False)
def mcp_endpoint(request: HttpRequest) -> HttpResponse:
    """The endpoint of record: :func:`serve` over the request's values."""
    meta = request.META
    body = _read_body(request) if request.method == "POST" else b""
    headers = {name.lower(): value for name, value in request.headers.items()}
    server = f"{meta.get('SERVER_NAME', '')}:{meta.get('SERVER_PORT', '')}"
    asked = Asked(request.method or "", headers, body, str(meta.get("REMOTE_ADDR") or ""), server)
    response = response_of(serve(asked))
    meta[hooks.LOGGED] = True
    return response


def response_of(answered: Answered) -> HttpResponse:
    """``answered`` as Django's response."""
    response = HttpResponse(answered.body, status=answered.status)
    if answered.header("Content-Type") is None:
        del response["Content-Type"]
    for name, value in answered.headers:
        response[name] = value
    if answered.internal:
        hooks.mark_internal(response)
    return response


def _read_body(request: HttpRequest) -> bytes | None:
    """At most ``MAX_BODY_BYTES`` of the body; None when it is longer (the rest is drained).

    Nothing is read when the announced length is past the limit or is not a number.
    """
    try:
        announced = int(request.META.get("CONTENT_LENGTH") or "0")
    except ValueError:
        return b""
    if announced > MAX_BODY_BYTES:
        _drain(request)
        return b""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = request.read(_READ_CHUNK)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            _drain(request)
            return None
        chunks.append(chunk)


def _drain(request: HttpRequest) -> None:
    """Discard what is left of an oversized body (bounded), so the client reads our answer."""
    left = 4 * MAX_BODY_BYTES
    while left > 0:
        chunk = request.read(min(_READ_CHUNK, left))
        if not chunk:
            return
        left -= len(chunk)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """``handler400``: a JSON-RPC refusal on the MCP path, Django's page elsewhere.

    Django raises ``DisallowedHost`` in middleware, before the endpoint runs, for a ``Host`` not
    in ``ALLOWED_HOSTS``; this keeps that refusal in the endpoint's shape.
    """
    if request.path.startswith(MCP_PATH):
        if isinstance(exception, DisallowedHost):
            return response_of(_refuse(400, INVALID_REQUEST, HOST_SENTENCE))
        return response_of(_refuse(400, INVALID_REQUEST, "Bad request."))
    return defaults.bad_request(request, exception)


def failure_outside(
    request: HttpRequest,
) -> tuple[HttpResponse, recorder.Row | None, costs.Priced | None]:
    """The answer to a failure outside the endpoint (a middleware), and its log row.

    For ``tmsite.api.server_error``. The body is read for the request's id when nothing has read
    it yet; the answer is ``internal_error``'s, the row names the method and kind when the body
    said.
    """
    value: Any = None
    try:
        if request.method == "POST" and not getattr(request, "_read_started", False):
            raw = _read_body(request)
            value = loads_strict(raw) if raw else None
    except Exception:  # an unreadable body: answered without an id
        value = None
    response = response_of(internal_error(value, request.headers.get("Origin")))
    row = recorder.Row(
        at=timezone.now(),
        surface="mcp-http",
        protocol=(request.headers.get("MCP-Protocol-Version") or "").strip()[:16],
    )
    priced = None
    if isinstance(value, dict) and isinstance(value.get("method"), str):
        row.method = value["method"][:64]
        try:
            priced = costs.of_message(value["method"], value.get("params"))
            row.kind, row.target, row.facet = priced.kind, priced.target, priced.facet
        except Exception:  # the row keeps the method alone
            priced = None
    return response, row, priced
