"""What the transports call: price, admit or refuse, answer, record — in that order.

The log knows no surface: each surface describes itself to it (its name, how it refuses, how
an answer reads in the log), so the MCP and REST wire tables stay with their surfaces.

* ``observe_answer(answer, …)`` wraps an HTTP endpoint, over plain values (the caller, its
  address, the trace headers): it runs the endpoint with the request's ``Exchange`` (which the
  endpoint hands down to each call and to what it runs: ``CallContext.exchange``), then writes
  one log row per request it answered (or one for the exchange when there was none: an
  envelope refusal, a notification), gives the caller's decision for the ``RateLimit-Policy``
  and ``RateLimit`` headers, and logs a JSON line per row.
* ``observe_call(call, exchange)`` runs one request a surface describes as a ``Call`` (its run
  and its refusal): over HTTP it spends the request's price from the caller's bucket first and
  answers the surface's refusal when the bucket is short; outside an HTTP exchange (stdio, the
  operator's own process) nothing is limited and the row is written at once.
* ``observe_routes(routes)`` makes the decorator for every route of a ``Routes`` surface
  (REST): each request is an exchange of one ``Call`` (the surface's refusal, with
  ``Retry-After`` when the bucket is short, its span named by the route).

One ``Exchange`` and one ``observe_call`` under all three: what varies by surface is data
(the ``Call``), not another copy of the order above.

**Internal failures.** A request that fails inside the server — in the limit code, in the
answer, wherever the surface cannot refuse it properly — is answered with the surface's own
internal-failure answer (``Call.fail``, ``Routes.fail``: a JSON-RPC ``-32603`` carrying the
request's id, a REST JSON body with ``reason: internal`` and a 5xx status) and recorded with the
real method, kind and target, ``outcome`` ``internal`` and the status sent; the failure goes to
``tmsite.oplog.failures`` (one log line per class of failure a minute, not a traceback per
request). ``record_failure`` writes the row of a request that failed outside every route (a
middleware), unless one was written for it already.

**Abandoned requests.** A request whose client went away stops at its next unit of work
(``tmsite.core.work.Abandoned``); its row says ``abandoned`` (never ``ok``), with what it spent
until then charged, and the surface's internal-failure answer stands in for an answer nobody
reads.

Both run the request under a work meter (``tmsite.core.work``): when what it did costs more
than its price (``costs.charged``), the difference is charged after the answer
(``buckets.charge``, into debt if need be), so the headers and the log line's ``cost`` give
the real charge and the caller's next requests are refused the sooner.

With traces on (``tmsite.core.tracing``), ``observe_call`` and ``observe_routes`` run each
request in its server span (continuing the trace of the request's ``_meta``, else of its HTTP
headers), with its database queries as child spans and its outcome on the span.

Headers follow draft-ietf-httpapi-ratelimit-headers (-08 onwards): ``RateLimit-Policy:
"tm";q=<burst>;w=<seconds to refill from empty>`` and ``RateLimit: "tm";r=<whole tokens
left>;t=<seconds>``, where ``t`` is the seconds until the bucket is full, or, on a refusal,
until the refused request would pass (the ``Retry-After`` value). A plain read costs one token,
so ``q`` and ``r`` count reads of files; ``tmsite.callers.costs`` prices the rest.

Spec: OP1, OP2, OBS2, ANY2.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Generic, TypeVar

from django.db import connections
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.utils import timezone

from tmsite.callers import buckets, caller, costs
from tmsite.callers.buckets import Decision
from tmsite.callers.costs import Priced
from tmsite.core import tracing, work
from tmsite.core.errors import RateLimited, Refusal
from tmsite.core.work import Unit
from tmsite.oplog import failures, metrics, process, recorder
from tmsite.oplog.recorder import Row

requests_log = logging.getLogger("tmsite.requests")
POLICY_NAME = "tm"
#: The outcome of a request that failed inside the server.
INTERNAL = failures.INTERNAL
#: The outcome of a request whose client went away before it was answered.
ABANDONED = "abandoned"
#: Set on a request (``request.META``) once its row is written.
LOGGED = "tm.logged"
#: What one request of a message surface answers (an MCP ``Answer``).
A = TypeVar("A")
#: What an exchange answers (a Django response, or the MCP endpoint's own answer).
T = TypeVar("T")


@dataclass
class Exchange:
    """One request in flight, as the log keeps it; the surface hands it down to what it runs.

    Over HTTP (:func:`observe_answer`) it has its caller and when it opened, and its calls'
    rows are written as it ends. Outside HTTP (stdio: ``Exchange()``, one per request) nothing
    is limited, and a call's row is written as the call ends (or held, :func:`hold`).
    """

    #: The rate limit's caller (None: not limited).
    caller: str | None = None
    #: The caller's address, held in memory only (a proposal keeps ``caller.keyed`` of it);
    #: None outside HTTP.
    address: str | None = None
    #: When it opened (None outside HTTP: each call's row has its own).
    at: datetime | None = None
    rows: list[tuple[Row, Priced]] = field(default_factory=list)
    decision: Decision | None = None
    #: What was asked (method and price), once the surface knows: for the row of an exchange
    #: that failed before any call was observed. Worked out only then.
    asked: Callable[[], tuple[str, Priced]] | None = None
    #: Set by :func:`hold`: the rows go to it, not to the log, when the exchange ends.
    held: Callable[[list[tuple[Row, Priced]]], None] | None = None
    #: The HTTP request's trace context headers (None: traces off).
    trace: Mapping[str, Any] | None = None


def micros(started: float) -> int:
    """Microseconds since ``started`` (``time.perf_counter``): a row's duration."""
    return max(0, int((time.perf_counter() - started) * 1_000_000))


# --- headers ----------------------------------------------------------------------------------


def rate_fields(decision: Decision) -> tuple[tuple[str, str], tuple[str, str]]:
    """The ``RateLimit-Policy`` and ``RateLimit`` fields for ``decision``, names and values."""
    rule = decision.policy
    window = math.ceil(rule.full_after)
    seconds = decision.reset if decision.allowed else decision.retry_after
    remaining = max(0, math.floor(decision.remaining + buckets.EPSILON))  # none while in debt
    return (
        ("RateLimit-Policy", f'"{POLICY_NAME}";q={math.floor(rule.burst)};w={window}'),
        ("RateLimit", f'"{POLICY_NAME}";r={remaining};t={seconds}'),
    )


def refusal(decision: Decision, uri: str | None) -> RateLimited:
    """The ``rate-limited`` refusal for a request the bucket turned away."""
    left = max(0, math.floor(decision.remaining + buckets.EPSILON))
    return RateLimited(
        uri,
        f"Too many requests from this caller: this one costs {decision.cost:g} and {left} "
        f"{'is' if left == 1 else 'are'} left; retry after {decision.retry_after} seconds.",
        retryAfter=decision.retry_after,
    )


# --- outcomes ---------------------------------------------------------------------------------


def reason_of_text(text: str) -> str | None:
    """The ``reason`` of a JSON refusal body (cut to the log's column), if ``text`` is one."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    reason = value.get("reason") if isinstance(value, dict) else None
    return reason[:32] if isinstance(reason, str) else None


def mark_internal(response: HttpResponseBase) -> HttpResponseBase:
    """Mark ``response`` as a surface's answer to an internal failure (its row says so)."""
    response._tm_internal = True  # type: ignore[attr-defined]
    # The failure was logged once by ``tmsite.oplog.failures``; Django need not log each one.
    response._has_been_logged = True  # type: ignore[attr-defined]
    return response


def _status_outcome(response: HttpResponseBase) -> str:
    if getattr(response, "_tm_internal", False):
        return INTERNAL
    content = response.content if isinstance(response, HttpResponse) else b""
    return outcome_of(response.status_code, response.get("Content-Type"), content)


def outcome_of(status: int, content_type: str | None, body: bytes) -> str:
    """How an HTTP answer reads in the log.

    ``accepted``, ``ok``, a JSON refusal's reason, a JSON-RPC error's ``rpc<code>``, else
    ``http-<status>``.
    """
    if status == 202:
        return "accepted"
    if status < 400:
        return "ok"
    if (content_type or "").startswith("application/json"):
        found = reason_of_text(body.decode("utf-8", "replace"))
        if found:
            return found
        try:
            code = json.loads(body).get("error", {}).get("code")
        except (ValueError, AttributeError):
            code = None
        if isinstance(code, int):
            return f"rpc{code}"
    return f"http-{status}"


def _body_size(response: HttpResponseBase) -> int:
    return len(response.content) if isinstance(response, HttpResponse) else 0


def _run_call(call: Call[A], decision: Decision | None) -> tuple[A, int, dict[Unit, int], str]:
    """Run ``call`` under a fresh work meter: its answer, bytes, units spent, and outcome.

    A caller with a bucket (``decision``) may spend its whole budget on heavy work
    (``work.heavy``), no more: past it the read refuses itself ``too-costly``. A call whose
    client went away is ``abandoned``: the surface's failure answer, with the units it spent
    until then.
    """
    allowance = decision.policy.burst if decision is not None else None
    try:
        with work.metered() as meter, work.allowing(allowance, costs.unit_prices()):
            answer = call.run()
    except work.Abandoned:
        return call.fail(), 0, meter.units(), ABANDONED
    sent = call.size(answer)
    meter.add("bytes", sent)
    return answer, sent, meter.units(), call.outcome(answer)


def _charge_rest(
    surface: str,
    who: str | None,
    decision: Decision | None,
    priced: Priced,
    units: Mapping[Unit, int],
) -> tuple[Priced, Decision | None]:
    """The request as charged, and the caller's decision once the rest of its cost is charged.

    A request that turns out to cost less than was spent up front (a proposal refused for its
    input, ``costs.as_answered``) is given the difference back. A bucket that cannot be charged
    keeps the answer already made.
    """
    charged = costs.charged(priced, units)
    if who is None or decision is None or not decision.allowed:
        return charged, decision
    extra = charged.cost - decision.cost
    if abs(extra) <= buckets.EPSILON:
        return charged, decision
    try:
        return charged, replace(buckets.charge(who, extra), cost=float(charged.cost))
    except Exception as exc:
        failures.report(f"{surface} rate limit", exc)
        return charged, decision


def _emit(row: Row, priced: Priced) -> None:
    recorder.record(row)
    if not requests_log.isEnabledFor(logging.INFO):
        return
    requests_log.handle(
        _RequestRecord(
            {
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
            }
        )
    )


class _RequestRecord(logging.LogRecord):
    """The record ``requests_log.info("request", extra=fields)`` would make, made for less.

    The same attributes, without the calling frame (the line has no place for it) and with
    this process's name worked out once; the handler formats it (on its own thread).
    """

    def __init__(self, fields: dict[str, Any]) -> None:  # LogRecord.__init__'s look-ups skipped
        now = time.time()
        attributes = self.__dict__
        attributes.update(_record_constants())
        attributes["created"] = now
        attributes["msecs"] = int((now - int(now)) * 1000) + 0.0
        attributes["relativeCreated"] = (now - _STARTED) * 1000
        attributes["thread"] = threading.get_ident()
        attributes["threadName"] = threading.current_thread().name
        attributes.update(fields)


_constants: dict[str, Any] = {}
#: When ``logging`` was loaded, which ``relativeCreated`` counts from.
_STARTED: float = getattr(logging, "_startTime", time.time())


def _record_constants() -> dict[str, Any]:
    """What every request record of this process holds alike (worked out again after a fork)."""
    pid = process.pid()
    if _constants.get("process") != pid:
        processes = sys.modules.get("multiprocessing")
        name = processes.current_process().name if processes is not None else "MainProcess"
        _constants.update(
            name=requests_log.name,
            msg="request",
            args=(),
            levelname="INFO",
            levelno=logging.INFO,
            pathname="(unknown file)",
            filename="(unknown file)",
            module="(unknown file)",
            exc_info=None,
            exc_text=None,
            stack_info=None,
            lineno=0,
            funcName=None,
            process=pid,
            processName=name,
        )
        if sys.version_info >= (3, 12):
            _constants["taskName"] = None  # the line is made outside any task's own record
    return _constants


# --- message surfaces (MCP) -----------------------------------------------------------------


@dataclass(frozen=True)
class Call(Generic[A]):
    """One request of a message surface, as the surface describes it to the log.

    Attributes:
        surface: The log's ``surface`` column (``mcp-http``, ``mcp-stdio``).
        method: What was asked (the JSON-RPC method).
        protocol: The protocol version the request speaks.
        priced: Its kind and cost (``tmsite.callers.costs``).
        uri: The URI it reads, named by a ``rate-limited`` refusal (None: no URI); asked for
            only when the bucket refuses, so an allowed call does not dig for it.
        run: Answer it.
        refuse: The surface's answer to a refusal before it ran: the bucket was short
            (``rate-limited``), or the caller is :data:`~tmsite.callers.caller.UNREADABLE`.
        fail: The surface's answer to an internal failure (the bucket or the run raised).
        outcome: How an answer reads in the log: ``ok``, a reason, ``rpc<code>``.
        size: The bytes of an answer.
        trace: The request's own trace context (MCP's ``params._meta``), asked for only when
            traces are on.
        span: The server span's name and attributes (None: the MCP method's, ``_mcp_span``).
        status: An answer's HTTP status, noted on the span (None: not noted).
    """

    surface: str
    method: str
    protocol: str
    priced: Priced
    uri: Callable[[], str | None]
    run: Callable[[], A]
    refuse: Callable[[Refusal], A]
    fail: Callable[[], A]
    outcome: Callable[[A], str]
    size: Callable[[A], int]
    trace: Callable[[], Mapping[str, Any] | None] = lambda: None
    span: Callable[[], tuple[str, Mapping[str, Any]]] | None = None
    status: Callable[[A], int] | None = None


def observe_answer(
    answer: Callable[[Exchange], T],
    *,
    surface: str,
    protocol: str,
    who: str | None,
    address: str,
    trace: Mapping[str, Any] | None,
    status: Callable[[T], int],
    size: Callable[[T], int],
    outcome: Callable[[T], str],
) -> tuple[T, Decision | None]:
    """Run ``answer(exchange)`` inside an observed exchange over plain values.

    ``who`` is the rate limit's caller (None: not limited), ``address`` the caller's address
    (held in memory only), ``trace`` the request's trace context headers. The exchange's rows
    are written with the answer's ``status`` (one for the exchange when it has none, reading as
    its ``outcome``); a single row gets the exchange's duration and the answer's ``size``.
    Returns the answer and the caller's decision, for its ``RateLimit`` fields.
    """
    at, started = timezone.now(), time.perf_counter()
    exchange = Exchange(who, address, at, trace=trace)
    answered = answer(exchange)
    sent_status, sent = status(answered), size(answered)
    total = micros(started)
    if not exchange.rows:
        found = outcome(answered)
        method, priced = "", Priced("protocol", 0)
        if exchange.asked is not None and found == INTERNAL:
            method, priced = exchange.asked()
        row = Row(
            at=at,
            surface=surface,
            method=method[:64],
            kind=priced.kind if method else "",
            target=priced.target if method else "",
            facet=priced.facet if method else "",
            protocol=protocol.strip()[:16],
            outcome=found,
        )
        exchange.rows.append((row, priced))
    single = len(exchange.rows) == 1
    for row, priced in exchange.rows:
        row.status = sent_status
        if single:
            row.bytes, row.duration_us = sent, total
        if exchange.held is None:
            _emit(row, priced)
    if exchange.held is not None:
        exchange.held(exchange.rows)
    return answered, exchange.decision


def hold(exchange: Exchange | None) -> Callable[[int, int, str], None] | None:
    """Keep ``exchange``'s row back: an answer that goes on after the exchange.

    Returns what writes it later, with the answer's whole duration (µs), its bytes and its
    outcome, once (later calls do nothing); None without an exchange. Over HTTP the exchange's
    status is the row's as the exchange ends; outside HTTP (stdio) it is the row of the call
    being run (:func:`observe_call`).
    """
    if exchange is None:
        return None
    waiting: list[tuple[Row, Priced]] = []
    exchange.held = waiting.extend

    def write(duration_us: int, sent: int, outcome: str) -> None:
        rows, waiting[:] = list(waiting), []
        for row, priced in rows:
            row.duration_us, row.bytes, row.outcome = duration_us, sent, outcome
            _emit(row, priced)

    return write


def observe_call(call: Call[A], exchange: Exchange | None) -> A:
    """Answer ``call`` behind the caller's bucket, with a log row for it (and a span).

    ``exchange`` is the request's (None: one of its own, outside HTTP).
    """
    if exchange is None:
        exchange = Exchange()
    if not tracing.enabled():
        return _observe_call(call, exchange)
    carriers = (call.trace(), exchange.trace)
    name, attributes = call.span() if call.span else _mcp_span(call)
    with (
        tracing.server(name, carriers, attributes),
        connections["default"].execute_wrapper(_database_span),
    ):
        answer = _observe_call(call, exchange)
        if call.status is not None:
            tracing.note(**{"http.response.status_code": call.status(answer)})
        return answer


def _mcp_span(call: Call[A]) -> tuple[str, dict[str, Any]]:
    """``{mcp.method.name} {target}`` (the tool's name for a tool the box offers), attributes."""
    method = call.method if call.method in metrics.MCP_METHODS else metrics.OTHER
    found: dict[str, Any] = {"mcp.method.name": method, "tm.surface": call.surface}
    if call.protocol:
        found["mcp.protocol.version"] = call.protocol[:16]
    tool = metrics.tool_name(method, call.priced.target)
    if tool:
        found["gen_ai.tool.name"] = tool
        found["gen_ai.operation.name"] = "execute_tool"
    elif call.priced.target and method in ("resources/read", "resources/subscribe"):
        found["mcp.resource.uri"] = call.priced.target  # as the log keeps it: no secret
    return (f"{method} {tool}" if tool and tool != metrics.OTHER else method), found


def _database_span(
    execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
) -> Any:
    """A query as a child span: its statement without its values, the database's kind."""
    operation = sql.lstrip().split(None, 1)[0].upper()[:16] if sql.strip() else "QUERY"
    vendor = context["connection"].vendor
    with tracing.span(
        f"{operation} {vendor}",
        {"db.system.name": vendor, "db.operation.name": operation, "db.query.text": sql[:2048]},
        client=True,
    ):
        return execute(sql, params, many, context)


def _observe_call(call: Call[A], exchange: Exchange) -> A:
    priced = call.priced
    started = time.perf_counter()
    at = exchange.at if exchange.at is not None else timezone.now()
    who = exchange.caller
    where = f"{call.surface} rate limit"
    answer: A
    try:
        unreadable = caller.unreadable(exchange.address)
        decision = None
        if unreadable is None and who is not None:
            decision = buckets.take(who, priced.cost)
            exchange.decision = decision  # its headers, whatever happens next
        refused: Refusal | None = unreadable
        if decision is not None and not decision.allowed:
            refused = refusal(decision, call.uri())
        if refused is not None:
            answer = call.refuse(refused)
            sent = call.size(answer)
            outcome = call.outcome(answer)
        else:
            where = f"{call.surface} request"
            answer, sent, units, outcome = _run_call(call, decision)
            priced = costs.as_answered(priced, outcome)
            priced, decision = _charge_rest(call.surface, who, decision, priced, units)
        if decision is not None:
            exchange.decision = decision
    except Exception as exc:
        failures.report(where, exc)
        answer, outcome = call.fail(), INTERNAL
        sent = call.size(answer)
    tracing.outcome(outcome)
    row = Row(
        at=at,
        surface=call.surface,
        method=call.method[:64],
        kind=priced.kind,
        target=priced.target,
        facet=priced.facet,
        protocol=call.protocol[:16],
        outcome=outcome,
        bytes=sent,
        duration_us=micros(started),
    )
    if exchange.at is not None:
        exchange.rows.append((row, priced))
    elif exchange.held is not None:
        exchange.held([(row, priced)])  # written by what held it, when its answer ends
    else:
        _emit(row, priced)
    return answer


# --- route surfaces (REST) --------------------------------------------------------------------


@dataclass(frozen=True)
class Routes:
    """An HTTP route surface, as it describes itself to the log.

    Attributes:
        surface: The log's ``surface`` column (``rest``).
        prefix: The path every route lives under (the route is what follows it).
        asked_uri: The URI a route reads (named by a ``rate-limited`` refusal), from the route
            and its query.
        refuse: The surface's response to a refusal before the route ran (its status table, its
            JSON fields): a short bucket, a caller whose proxy forwarded no address.
        fail: The surface's response to an internal failure (its JSON shape, a 5xx status).
    """

    surface: str
    prefix: str
    asked_uri: Callable[[str, Mapping[str, str]], str | None]
    refuse: Callable[[Refusal], HttpResponseBase]
    fail: Callable[[], HttpResponseBase]

    def route(self, request: HttpRequest) -> str:
        """The route ``request`` asks for: its path after ``prefix``."""
        path = request.path
        return path[len(self.prefix) :] if path.startswith(self.prefix) else ""

    def row(self, request: HttpRequest, at: datetime) -> tuple[Row, Priced]:
        """The row of a request to this surface, before its answer is known."""
        route = self.route(request)
        priced = costs.of_rest(route.strip("/"), request.GET)
        row = Row(
            at=at,
            surface=self.surface,
            method=f"{request.method} {route.split('/')[0]}"[:64],
            kind=priced.kind,
            target=priced.target,
            facet=priced.facet,
        )
        return row, priced


def observe_routes(
    routes: Routes,
) -> Callable[[Callable[..., HttpResponseBase]], Callable[..., HttpResponseBase]]:
    """The decorator for every route of ``routes``: each request an exchange of one ``Call``."""

    def observe(run: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
        @functools.wraps(run)
        def observed(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            row, priced = routes.row(request, timezone.now())
            route = routes.route(request)

            def refuse(refused: Refusal) -> HttpResponseBase:
                response = routes.refuse(refused)
                if isinstance(refused, RateLimited):
                    response["Retry-After"] = str(refused.helpers["retryAfter"])
                return response

            def span() -> tuple[str, Mapping[str, Any]]:
                name = f"{request.method} {routes.prefix}{route.split('/')[0]}"
                return name, {"http.request.method": str(request.method), "tm.surface": row.surface}

            call: Call[HttpResponseBase] = Call(
                surface=row.surface,
                method=row.method,
                protocol="",
                priced=priced,
                uri=lambda: routes.asked_uri(route, request.GET),
                run=lambda: run(request, *args, **kwargs),
                refuse=refuse,
                fail=routes.fail,
                outcome=_status_outcome,
                size=_body_size,
                span=span,
                status=lambda response: response.status_code,
            )
            meta = request.META
            response, decision = observe_answer(
                lambda exchange: observe_call(call, exchange),
                surface=row.surface,
                protocol="",
                who=caller.limited_in(meta),
                address=caller.address_in(meta),
                trace=tracing.http_carrier(meta),
                status=lambda response: response.status_code,
                size=_body_size,
                outcome=_status_outcome,
            )
            if decision is not None:
                for name, value in rate_fields(decision):
                    response[name] = value
            meta[LOGGED] = True
            return response

        return observed

    return observe


# --- failures outside every route -------------------------------------------------------------


def record_failure(
    request: HttpRequest, response: HttpResponseBase, row: Row, priced: Priced | None
) -> None:
    """The row of a request that failed outside the observed view (``handler500``).

    Nothing is written when the request's row was written already (the failure came after the
    view, in a middleware on the way out). ``row`` carries what the surface could tell of the
    request (its method, kind, target); the outcome and status are the response's.
    """
    if request.META.get(LOGGED):
        return
    row.outcome = _status_outcome(response)
    row.status = response.status_code
    row.bytes = _body_size(response)
    _emit(row, priced or Priced("protocol", 0))
    request.META[LOGGED] = True
