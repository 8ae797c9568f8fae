"""The Streamable HTTP endpoint: ``POST /api/mcp``, stateless, JSON only.

Hand-written on a django-ninja route that takes no parameters, so ninja never validates (or
answers for) the JSON-RPC envelope: the view reads the body itself. The HTTP-level rules, in the
order they are applied (the JSON-RPC rules are in ``envelope.py``, with their sources):

1. ``Origin`` present and not allowed → 403 (2025-11-25 and 2026-07-28 transports: "If the
   Origin header is present and invalid, servers MUST respond with HTTP 403"). Allowed: the
   configured ``TM_ALLOWED_ORIGINS`` and loopback origins (http/https on 127.0.0.1, localhost,
   [::1], any port). ``Host`` is checked by Django against ``ALLOWED_HOSTS``.
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
import logging
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views import defaults
from ninja import Router

from tmsite.bus import delivery
from tmsite.callers import costs
from tmsite.core.errors import RateLimited, Refusal
from tmsite.mcp import observed
from tmsite.mcp.codes import rpc_error
from tmsite.mcp.envelope import (
    HEADER_MISMATCH,
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

logger = logging.getLogger("tmsite.mcp")

router = Router(tags=["mcp"])

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
#: The environ key the ASGI server sets on a request it can hold open as a stream (a listen).
STREAM_KEY = "tm.stream"
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
#: The endpoint's path.
MCP_PATH = "/api/mcp"
_ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE"]
_READ_CHUNK = 64 * 1024


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


def _json(
    body: Any,
    status: int = 200,
    origin: str | None = None,
    text: str | None = None,
    data: bytes | None = None,
) -> HttpResponse:
    response = HttpResponse(
        data if data is not None else text if text is not None else dumps(body),
        status=status,
        content_type="application/json",
    )
    _finish(response, origin)
    return response


def _finish(response: HttpResponse, origin: str | None) -> None:
    response["Cache-Control"] = "no-store"
    if origin is not None:
        response["Access-Control-Allow-Origin"] = origin
        response["Vary"] = "Origin"


class StreamResponse(HttpResponse):
    """A request the ASGI server holds open as a stream: ``result`` says what it delivers.

    Its headers are the endpoint's (CORS, ``RateLimit``); the server sends the stream's own
    body in place of this empty one.
    """

    def __init__(self, result: StreamResult, origin: str | None) -> None:
        super().__init__(status=200, content_type="text/event-stream")
        self.result = result
        _finish(self, origin)


def _refuse(status: int, code: int, message: str, origin: str | None = None) -> HttpResponse:
    return _json(error_response(None, code, message), status, origin)


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


def _content_type_ok(request: HttpRequest) -> bool:
    if (request.content_type or "").lower() != "application/json":
        return False
    charset = request.content_params.get("charset") if request.content_params else None
    return charset is None or charset.strip('"').lower() in ("utf-8", "utf8")


def _read_body(request: HttpRequest) -> bytes | None:
    """Read at most ``MAX_BODY_BYTES``; ``None`` when the body is longer (the rest is drained)."""
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


# --- the view -------------------------------------------------------------------------------


@router.api_operation(_ALL_METHODS, "/mcp", auth=None, include_in_schema=False)
def mcp_endpoint(request: HttpRequest) -> HttpResponse:
    """The MCP endpoint: rate limit, request log and timing (``tmsite.oplog``) around it."""
    return observed.observe_exchange(request, _answer)


def _answer(request: HttpRequest) -> HttpResponse:
    """Never raises: every failure is a JSON body with a 4xx, a 200 or (no id known) a 500."""
    read: list[Any] = []
    try:
        return _serve(request, read)
    except Exception as exc:
        failures.report("mcp-http endpoint", exc)
        return internal_error(read[0] if read else None, request.headers.get("Origin"))


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


def internal_error(value: Any, origin: str | None = None) -> HttpResponse:
    """-32603 for each request ``value`` (the parsed body, or None) holds, or id-less in a 500."""
    allowed = origin if origin is not None and origin_allowed(origin) else None
    ids = _ids(value)
    if not ids:
        response = _json(error_response(None, INTERNAL_ERROR, "Internal error."), 500, allowed)
    else:
        errors = [error_response(rid, INTERNAL_ERROR, "Internal error.") for rid in ids]
        response = _json(errors if isinstance(value, list) else errors[0], 200, allowed)
    hooks.mark_internal(response)
    return response


def _serve(request: HttpRequest, read: list[Any]) -> HttpResponse:
    """Apply the module's rules in order; the first that refuses answers."""
    origin = request.headers.get("Origin")
    refused = _refuse_caller(request, origin)
    if refused is not None:
        return refused
    method = request.method or ""
    if method == "OPTIONS":
        return _preflight(request, origin)
    if method in ("GET", "DELETE") and delivery.here():
        answered = _session_request(request, method, origin)
        if answered is not None:
            return answered
    if method != "POST":
        response = _refuse(405, INVALID_REQUEST, _not_allowed_sentence(method), origin)
        response["Allow"] = "POST"
        return response
    try:
        value = _parse_body(_checked_body(request))
        read.append(value)
        return _dispatch(value, request, origin, _session_of(request, value))
    except EnvelopeRefusal as refusal:
        return _json(refusal.body(), refusal.status, origin)


def _not_allowed_sentence(method: str) -> str:
    """Why a method other than POST is refused: a session's GET or DELETE lacks its header."""
    if method in ("GET", "DELETE") and delivery.here():
        return SESSION_HEADER_SENTENCE
    return METHOD_NOT_ALLOWED_SENTENCE


def _session_of(request: HttpRequest, value: Any) -> sessions.Session | None:
    """Rule 3a for a POST: its valid session, or None when it carries none (or none is kept).

    Raises:
        EnvelopeRefusal: 404 for a session id that is not valid, with the request's id.
    """
    token = request.headers.get(sessions.HEADER)
    version = (request.headers.get("MCP-Protocol-Version") or "").strip(" \t")
    if token is None or not delivery.here() or version == STATELESS_VERSION:
        return None
    session = sessions.valid(token)
    if session is None:
        rid = value.get("id") if isinstance(value, dict) else None
        raise EnvelopeRefusal(
            404, INVALID_REQUEST, sessions.GONE_SENTENCE, rid if valid_id(rid) else None
        )
    return session


def _session_request(request: HttpRequest, method: str, origin: str | None) -> HttpResponse | None:
    """Rule 3a for a GET or DELETE; None when it carries no session (405 as any other)."""
    token = request.headers.get(sessions.HEADER)
    if token is None:
        return None
    session = sessions.valid(token)
    if session is None:
        return _refuse(404, INVALID_REQUEST, sessions.GONE_SENTENCE, origin)
    if method == "DELETE":
        sessions.end(session)
        response = HttpResponse(status=204)
        _finish(response, origin)
        del response["Content-Type"]
        return response
    offer = sessions.stream_offer()
    if offer is None:  # answered on a thread of its own: no stream can be held here
        return None

    def opened() -> HttpResponse:
        if not sessions.accepts_stream(offer.accept):
            return _refuse(
                406,
                INVALID_REQUEST,
                "The session's GET stream is an event stream: Accept must list text/event-stream.",
                origin,
            )
        offer.session, offer.caller = session, hooks.current_caller() or ""
        offer.log = hooks.hold()
        return _accepted(origin, 200)

    def refuse(refused: Refusal) -> HttpResponse:  # a listen's refusal: 429, or 400 (a caller)
        error = rpc_error(refused, "2025")
        limited = isinstance(refused, RateLimited)
        body = error_response(None, error.code, error.message, error.data)
        response = _json(body, 429 if limited else 400, origin)
        if limited:
            response["Retry-After"] = str((error.data or {}).get("retryAfter", 1))
        return response

    def fail() -> HttpResponse:
        return _json(error_response(None, INTERNAL_ERROR, "Internal error."), 500, origin)

    # priced as a listen, its row named session-stream
    return observed.session_stream(request, opened, refuse, fail)


def _refuse_caller(request: HttpRequest, origin: str | None) -> HttpResponse | None:
    """Rule 1: the 403 for a foreign ``Origin``, the 400 for a ``Host`` not served, else None.

    Neither refusal echoes the origin: the caller is not one this endpoint answers.
    """
    if origin is not None and not origin_allowed(origin):
        return _refuse(403, INVALID_REQUEST, "This Origin may not call this endpoint.")
    try:
        request.get_host()
    except DisallowedHost:
        return _refuse(400, INVALID_REQUEST, "This Host is not served here.")
    return None


def _checked_body(request: HttpRequest) -> bytes:
    """Rules 4–6: the body of a POST whose length, ``Content-Type`` and ``Accept`` pass.

    Raises:
        EnvelopeRefusal: 400 for a ``Content-Length`` that is not a number, 413 for a body over
            4 MiB (announced or found while reading; the rest is drained), 415, 406.
    """
    length = request.META.get("CONTENT_LENGTH") or "0"
    try:
        announced = int(length)
    except ValueError:
        raise EnvelopeRefusal(
            400, INVALID_REQUEST, "The Content-Length header is not a number."
        ) from None
    if announced > MAX_BODY_BYTES:
        _drain(request)
        raise EnvelopeRefusal(413, INVALID_REQUEST, "The body is larger than 4 MiB.")
    if not _content_type_ok(request):
        raise EnvelopeRefusal(
            415, INVALID_REQUEST, "The body must be sent as Content-Type: application/json."
        )
    if not accepts_json(request.headers.get("Accept", "")):
        raise EnvelopeRefusal(
            406, INVALID_REQUEST, "The Accept header must allow application/json."
        )
    raw = _read_body(request)
    if raw is None:
        raise EnvelopeRefusal(413, INVALID_REQUEST, "The body is larger than 4 MiB.")
    return raw


def _parse_body(raw: bytes) -> Any:
    """The body as strict JSON; a parse failure is an id-less -32700 in a 400."""
    try:
        return loads_strict(raw)
    except ParseFailure as exc:
        raise EnvelopeRefusal(400, PARSE_ERROR, f"Parse error: {exc}") from None


def _dispatch(
    value: Any, request: HttpRequest, origin: str | None, session: sessions.Session | None
) -> HttpResponse:
    """Rules 7–8: check the version header, then answer one message or a batch.

    Raises:
        EnvelopeRefusal: -32022 for a ``MCP-Protocol-Version`` not served (echoing the body's id
            when it is a valid one), and every envelope refusal of ``_single`` and ``_batch``.
    """
    headers = {k.lower(): v for k, v in request.headers.items()}
    header_version = headers.get("mcp-protocol-version")
    if header_version is not None:
        header_version = header_version.strip(" \t")
    version = header_version or DEFAULT_HEADERLESS_VERSION
    if header_version is not None and header_version not in SUPPORTED_VERSIONS:
        rid = value.get("id") if isinstance(value, dict) else None
        raise unsupported_version(header_version, rid if valid_id(rid) else None)
    if isinstance(value, list):
        return _batch(value, version, origin, session)
    held = request.META.get(STREAM_KEY) is True
    return _single(classify(value), version, headers, origin, held, session)


def _preflight(request: HttpRequest, origin: str | None) -> HttpResponse:
    response = HttpResponse(status=204)
    _finish(response, origin)
    asked = request.headers.get("Access-Control-Request-Headers", "")
    allowed = list(CORS_ALLOWED_HEADERS)
    for name in (h.strip().lower() for h in asked.split(",")):
        if name.startswith("mcp-param-") and name not in allowed and name.isascii():
            allowed.append(name)
    # a session's GET stream and DELETE exist only where streams are delivered (rule 3a)
    methods = "GET, POST, DELETE, OPTIONS" if delivery.here() else "POST, OPTIONS"
    response["Access-Control-Allow-Methods"] = methods
    response["Access-Control-Allow-Headers"] = ", ".join(allowed)
    response["Access-Control-Max-Age"] = "600"
    return response


def _single(
    message: Message,
    version: str,
    headers: dict[str, str],
    origin: str | None,
    held: bool = False,
    session: sessions.Session | None = None,
) -> HttpResponse:
    modern = version == STATELESS_VERSION
    if message.kind == "response":
        if modern:
            raise EnvelopeRefusal(
                400, INVALID_REQUEST, "Clients must not send JSON-RPC responses in 2026-07-28."
            )
        return _accepted(origin)
    if message.kind == "notification":
        return _accepted(origin)
    observed.asked(message)
    if modern:
        ctx = check_modern(message, headers)
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
        ctx = CallContext(version=version, transport="http", session=session)
    if held:
        ctx = dataclasses.replace(ctx, stream=StreamOffer(message.id, headers.get("accept", "")))
    answer = observed.run_request(message, ctx)  # the caller's bucket, a log row
    if answer.stream is not None:
        return StreamResponse(answer.stream, origin)
    status = answer.status or (404 if modern and answer.error_code == METHOD_NOT_FOUND else 200)
    response = _json(None, status, origin, data=answer.encoded())
    if message.method == "initialize" and answer.error_code is None and delivery.here():
        response[sessions.HEADER] = sessions.issue()  # rule 3a: for subscriptions alone
        if origin is not None:
            response["Access-Control-Expose-Headers"] = sessions.HEADER
    return response


def _batch(
    items: list[Any], version: str, origin: str | None, session: sessions.Session | None
) -> HttpResponse:
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
        answer: Answer = observed.run_request(
            message, CallContext(version=version, transport="http", session=session)
        )
        parts.append(answer.text)
    if not parts:
        return _accepted(origin)
    return _json(None, 200, origin, text="[" + ",".join(parts) + "]")


def _accepted(origin: str | None, status: int = 202) -> HttpResponse:
    response = HttpResponse(status=status)
    _finish(response, origin)
    del response["Content-Type"]
    return response


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """``handler400``: a JSON-RPC refusal on the MCP path, Django's page elsewhere.

    Django raises ``DisallowedHost`` in middleware, before the endpoint runs, for a ``Host`` not
    in ``ALLOWED_HOSTS``; this keeps that refusal in the endpoint's shape.
    """
    if request.path.startswith(MCP_PATH):
        if isinstance(exception, DisallowedHost):
            return _refuse(400, INVALID_REQUEST, "This Host is not served here.")
        return _refuse(400, INVALID_REQUEST, "Bad request.")
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
    response = internal_error(value, request.headers.get("Origin"))
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
