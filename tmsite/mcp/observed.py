"""MCP requests as the request log sees them (``tmsite.oplog.hooks``): priced, admitted, logged.

``run_request`` stands in for ``envelope.run_request`` on both transports: it describes the
request to the log as a ``Call`` — its cost, the URI a ``rate-limited`` refusal names, the
JSON-RPC error that refusal is in the client's era (-32000, HTTP 200, ``data.retryAfter``), the
answer to an internal failure (-32603 with the request's id), and how an answer reads in the log
(an internal failure is ``internal``).

Spec: OP1, OP2.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from tmsite.callers import costs
from tmsite.core.errors import Refusal
from tmsite.mcp import envelope, lifecycle
from tmsite.mcp.codes import rpc_error
from tmsite.mcp.envelope import Answer, Message
from tmsite.mcp.protocol import INTERNAL_ERROR, CallContext
from tmsite.oplog import hooks

#: What a session stream's request is answered with (the endpoint's answer).
A = TypeVar("A")


def asked(message: Message, exchange: hooks.Exchange) -> None:
    """Tell ``exchange`` what ``message`` asks, for a row written without a call."""
    exchange.asked = lambda: (message.method, costs.of_message(message.method, message.params))


def internal_error(rid: envelope.RequestId | None) -> Answer:
    """The answer to a request the server failed to answer: -32603, with its id when known."""
    body = envelope.error_response(rid, INTERNAL_ERROR, "Internal error.")
    return Answer(envelope.dumps(body), error_code=INTERNAL_ERROR)


def asked_uri(message: Message) -> str | None:
    """The URI a read asks for (resources/read, or the resolve tool), for its refusal."""
    params = message.params if isinstance(message.params, dict) else {}
    if message.method == "tools/call" and params.get("name") == "resolve":
        arguments = params.get("arguments")
        params = arguments if isinstance(arguments, dict) else {}
    elif message.method != "resources/read":
        return None
    uri = params.get("uri")
    return uri if isinstance(uri, str) else None


def answer_outcome(answer: Answer) -> str:
    """``ok``, a refusal's reason (protocol or tool error), ``internal``, or ``rpc<code>``."""
    if answer.error_code is None:
        result = answer.result or {}
        if result.get("isError"):
            content = result.get("content") or [{}]
            text = content[0].get("text", "") if isinstance(content[0], dict) else ""
            reason = hooks.reason_of_text(text) if isinstance(text, str) else None
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
    if answer.error_code == INTERNAL_ERROR:
        return hooks.INTERNAL
    return f"rpc{answer.error_code}"


def session_stream(
    protocol: str,
    run: Callable[[], A],
    refuse: Callable[[Refusal], A],
    fail: Callable[[], A],
    *,
    outcome: Callable[[A], str],
    size: Callable[[A], int],
    exchange: hooks.Exchange,
) -> A:
    """A 2025-11-25 session's GET stream behind the caller's bucket, priced as a listen.

    Its row's method is ``session-stream`` (``costs.SESSION_STREAM``); a stream that opens
    holds the row back until it ends (``hooks.hold``, called by ``run``).
    """
    return hooks.observe_call(
        hooks.Call(
            surface="mcp-http",
            method=costs.SESSION_STREAM,
            protocol=protocol,
            priced=costs.of_message(costs.SESSION_STREAM, None),
            uri=lambda: None,
            run=run,
            refuse=refuse,
            fail=fail,
            outcome=outcome,
            size=size,
        ),
        exchange,
    )


def run_request(message: Message, ctx: CallContext) -> Answer:
    """``envelope.run_request`` behind the caller's bucket, with a log row for the request."""
    return hooks.observe_call(call(message, ctx), ctx.exchange)


def call(message: Message, ctx: CallContext) -> hooks.Call[Answer]:
    """One request as the log sees it (``hooks.Call``): its price, run, refusal and outcome."""

    def refuse(refused: Refusal) -> Answer:
        error = rpc_error(refused, ctx.era)
        body = envelope.error_response(message.id, error.code, error.message, error.data)
        return Answer(envelope.dumps(body), error_code=error.code)

    return hooks.Call(
        surface=f"mcp-{ctx.transport}",
        method=message.method,
        # A handshake is recorded in the version it negotiates, not the one it arrived under.
        protocol=(
            lifecycle.negotiated_version(message.params)
            if message.method == "initialize"
            else ctx.version
        ),
        priced=costs.of_message(message.method, message.params),
        uri=lambda: asked_uri(message),
        run=lambda: envelope.run_request(message, ctx),
        refuse=refuse,
        fail=lambda: internal_error(message.id),
        outcome=answer_outcome,
        size=lambda answer: len(answer.encoded()),
        trace=lambda: trace_meta(message),
    )


def trace_meta(message: Message) -> dict[str, Any] | None:
    """The request's ``params._meta``, where SEP-414 carries its trace context."""
    params = message.params if isinstance(message.params, dict) else {}
    meta = params.get("_meta")
    return meta if isinstance(meta, dict) else None
