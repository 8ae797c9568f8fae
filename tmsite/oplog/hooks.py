"""What the transports call: price, admit or refuse, answer, record — in that order.

* ``observe_mcp(request, answer)`` wraps the HTTP MCP endpoint: it finds the caller, runs the
  endpoint, then writes one log row per JSON-RPC request it answered (or one for the exchange
  when there was none: an envelope refusal, a notification), adds the ``RateLimit-Policy`` and
  ``RateLimit`` headers, and logs a JSON line per row.
* ``run_request(message, ctx)`` stands in for ``envelope.run_request`` on both MCP transports:
  over HTTP it spends the request's cost from the caller's bucket first and answers
  ``rate-limited`` (-32000, HTTP 200, ``data.retryAfter``) when the bucket is short; over
  stdio (the operator's own process) nothing is limited and the row is written at once.
* ``observe_rest`` decorates every REST route: the same bucket, a 429 with ``Retry-After`` and
  the refusal's JSON fields when it is short.

Headers follow draft-ietf-httpapi-ratelimit-headers (-08 onwards): ``RateLimit-Policy:
"tm";q=<burst>;w=<seconds to refill from empty>`` and ``RateLimit: "tm";r=<whole tokens
left>;t=<seconds>``, where ``t`` is the seconds until the bucket is full, or, on a refusal,
until the refused request would pass (the ``Retry-After`` value). A plain read costs one token,
so ``q`` and ``r`` count reads of files; ``tmsite.oplog.costs`` prices the rest.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.utils import timezone

from tmsite.mcp import envelope
from tmsite.mcp.codes import rpc_error
from tmsite.mcp.envelope import Answer, Message
from tmsite.mcp.protocol import CallContext
from tmsite.mounts.errors import RateLimited
from tmsite.oplog import buckets, caller, costs, recorder
from tmsite.oplog.buckets import Decision
from tmsite.oplog.costs import Priced
from tmsite.oplog.recorder import Row

requests_log = logging.getLogger("tmsite.requests")
POLICY_NAME = "tm"


@dataclass
class Exchange:
    """One HTTP request in flight: its caller (``None`` when not limited) and its rows."""

    surface: str
    caller: str | None
    at: datetime
    started: float
    protocol: str = ""
    rows: list[tuple[Row, Priced]] = field(default_factory=list)
    decision: Decision | None = None


_current: ContextVar[Exchange | None] = ContextVar("tm_oplog_exchange", default=None)


def _limited_caller(request: HttpRequest) -> str | None:
    if not settings.TM_RATE_LIMIT:
        return None
    who = caller.address(request)
    return None if caller.exempt(request, who) else who


def _micros(started: float) -> int:
    return max(0, int((time.perf_counter() - started) * 1_000_000))


# --- headers ----------------------------------------------------------------------------------


def rate_headers(response: HttpResponseBase, decision: Decision) -> None:
    """Add the ``RateLimit-Policy`` and ``RateLimit`` fields for ``decision``."""
    rule = decision.policy
    window = math.ceil(rule.full_after)
    response["RateLimit-Policy"] = f'"{POLICY_NAME}";q={math.floor(rule.burst)};w={window}'
    seconds = decision.reset if decision.allowed else decision.retry_after
    remaining = math.floor(decision.remaining + buckets.EPSILON)
    response["RateLimit"] = f'"{POLICY_NAME}";r={remaining};t={seconds}'


def _asked_uri(message: Message) -> str | None:
    """The URI a read asks for (resources/read, or the resolve tool), for its refusal."""
    params = message.params if isinstance(message.params, dict) else {}
    if message.method == "tools/call" and params.get("name") == "resolve":
        arguments = params.get("arguments")
        params = arguments if isinstance(arguments, dict) else {}
    elif message.method != "resources/read":
        return None
    uri = params.get("uri")
    return uri if isinstance(uri, str) else None


def refusal(decision: Decision, uri: str | None) -> RateLimited:
    """The ``rate-limited`` refusal for a request the bucket turned away."""
    left = math.floor(decision.remaining + buckets.EPSILON)
    return RateLimited(
        uri,
        f"Too many requests from this caller: this one costs {decision.cost:g} and {left} "
        f"{'is' if left == 1 else 'are'} left; retry after {decision.retry_after} seconds.",
        retryAfter=decision.retry_after,
    )


# --- outcomes ---------------------------------------------------------------------------------


def _reason_of_text(text: str) -> str | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    reason = value.get("reason") if isinstance(value, dict) else None
    return reason[:32] if isinstance(reason, str) else None


def answer_outcome(answer: Answer) -> str:
    """``ok``, a refusal's reason (protocol or tool error), or ``rpc<code>``."""
    if answer.error_code is None:
        result = answer.result or {}
        if result.get("isError"):
            content = result.get("content") or [{}]
            text = content[0].get("text", "") if isinstance(content[0], dict) else ""
            reason = _reason_of_text(text) if isinstance(text, str) else None
            return reason or "tool-error"
        return "ok"
    try:
        error = json.loads(answer.text).get("error", {})
    except ValueError:
        error = {}
    data = error.get("data") if isinstance(error, dict) else None
    reason = data.get("reason") if isinstance(data, dict) else None
    if isinstance(reason, str):
        return reason[:32]
    return f"rpc{answer.error_code}"


def _status_outcome(response: HttpResponseBase) -> str:
    status = response.status_code
    if status == 202:
        return "accepted"
    if status < 400:
        return "ok"
    if isinstance(response, HttpResponse) and response.get("Content-Type", "").startswith(
        "application/json"
    ):
        found = _reason_of_text(response.content.decode("utf-8", "replace"))
        if found:
            return found
        try:
            code = json.loads(response.content).get("error", {}).get("code")
        except (ValueError, AttributeError):
            code = None
        if isinstance(code, int):
            return f"rpc{code}"
    return f"http-{status}"


def _body_size(response: HttpResponseBase) -> int:
    return len(response.content) if isinstance(response, HttpResponse) else 0


def _emit(row: Row, priced: Priced) -> None:
    recorder.record(row)
    requests_log.info(
        "request",
        extra={
            "event": "request",
            "surface": row.surface,
            "method": row.method,
            "kind": row.kind,
            "target": row.target,
            "facet": row.facet,
            "protocol": row.protocol,
            "outcome": row.outcome,
            "status": row.status,
            "bytes": row.bytes,
            "duration_ms": round(row.duration_us / 1000, 3),
            "cost": priced.cost,
        },
    )


# --- MCP --------------------------------------------------------------------------------------


def observe_mcp(
    request: HttpRequest, answer: Callable[[HttpRequest], HttpResponse]
) -> HttpResponse:
    """Run the MCP endpoint's ``answer`` for ``request`` inside an observed exchange."""
    header = request.headers.get("MCP-Protocol-Version") or ""
    exchange = Exchange(
        "mcp-http",
        _limited_caller(request),
        timezone.now(),
        time.perf_counter(),
        protocol=header.strip()[:16],
    )
    token = _current.set(exchange)
    try:
        response = answer(request)
    finally:
        _current.reset(token)
    _finish(exchange, response)
    return response


def _finish(exchange: Exchange, response: HttpResponseBase) -> None:
    if exchange.decision is not None:
        rate_headers(response, exchange.decision)
    total = _micros(exchange.started)
    if not exchange.rows:
        priced = Priced("protocol", 0)
        row = Row(
            at=exchange.at,
            surface=exchange.surface,
            protocol=exchange.protocol,
            outcome=_status_outcome(response),
        )
        exchange.rows.append((row, priced))
    single = len(exchange.rows) == 1
    for row, priced in exchange.rows:
        row.status = response.status_code
        if single:
            row.bytes = _body_size(response)
            row.duration_us = total
        _emit(row, priced)


def run_request(message: Message, ctx: CallContext) -> Answer:
    """``envelope.run_request`` behind the caller's bucket, with a log row for the request."""
    exchange = _current.get()
    priced = costs.of_message(message.method, message.params)
    started = time.perf_counter()
    at = exchange.at if exchange is not None else timezone.now()
    answer: Answer | None = None
    if exchange is not None and exchange.caller is not None:
        decision = buckets.take(exchange.caller, priced.cost)
        exchange.decision = decision
        if not decision.allowed:
            error = rpc_error(refusal(decision, _asked_uri(message)), ctx.era)
            body = envelope.error_response(message.id, error.code, error.message, error.data)
            answer = Answer(envelope.dumps(body), error_code=error.code)
    if answer is None:
        answer = envelope.run_request(message, ctx)
    row = Row(
        at=at,
        surface=f"mcp-{ctx.transport}",
        method=message.method[:64],
        kind=priced.kind,
        target=priced.target,
        facet=priced.facet,
        protocol=ctx.version[:16],
        outcome=answer_outcome(answer),
        bytes=len(answer.text.encode("utf-8")),
        duration_us=_micros(started),
    )
    if exchange is not None:
        exchange.rows.append((row, priced))
    else:
        _emit(row, priced)
    return answer


# --- REST -------------------------------------------------------------------------------------

REST_PREFIX = "/api/v1/"


def observe_rest(run: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """Decorate a REST route's ``run``: the caller's bucket, then a log row."""

    @functools.wraps(run)
    def observed(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        at, started = timezone.now(), time.perf_counter()
        route = request.path[len(REST_PREFIX) :] if request.path.startswith(REST_PREFIX) else ""
        priced = costs.of_rest(route.strip("/"), request.GET)
        who = _limited_caller(request)
        decision = buckets.take(who, priced.cost) if who is not None else None
        if decision is not None and not decision.allowed:
            from tmsite.rest import HTTP_STATUS

            uri = request.GET.get("uri") if route.startswith("resolve") else None
            refused = refusal(decision, uri)
            response: HttpResponseBase = JsonResponse(
                {"error": refused.message, **refused.data}, status=HTTP_STATUS[refused.reason]
            )
            response["Retry-After"] = str(decision.retry_after)
        else:
            response = run(request, *args, **kwargs)
        if decision is not None:
            rate_headers(response, decision)
        row = Row(
            at=at,
            surface="rest",
            method=f"{request.method} {route.split('/')[0]}"[:64],
            kind=priced.kind,
            target=priced.target,
            facet=priced.facet,
            outcome=_status_outcome(response),
            status=response.status_code,
            bytes=_body_size(response),
            duration_us=_micros(started),
        )
        _emit(row, priced)
        return response

    return observed
