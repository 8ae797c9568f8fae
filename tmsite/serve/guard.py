"""Slow and greedy clients meet their limits in the event loop, before they cost a thread.

What ``tmsite.serve.app`` asks of it, for every HTTP request:

* :func:`enter` and :func:`leave` — a cap on the requests one caller has in flight in this worker
  (``TM_CALLER_MAX_REQUESTS``, 16; 0 turns it off). The caller is the one the rate limit keys
  (``tmsite.callers.caller.address``: the socket's peer, or the forwarded address from a trusted
  proxy; the box's own loopback calls are exempt), held only as the HMAC of that address under
  this process's secret for the UTC day, and only while it has a request in flight. One past the
  cap is refused at once, before its body is read: 429 with ``Retry-After`` and the surface's
  JSON refusal (``rate-limited``), and a request-log row.
* :func:`read_body` — the whole body against two deadlines: all of it within
  ``TM_BODY_TIMEOUT`` seconds (20), and, after ``TM_BODY_RATE_GRACE`` seconds (3), at least
  ``TM_BODY_MIN_RATE`` bytes a second on average (4096; 0 turns it off), so a body trickled
  slower than that is cut as soon as it falls behind, not at the whole-body deadline.
  :func:`refuse_late` answers either 408 with the connection closed, and writes the row.
* :func:`refuse_framing` — a request whose framing is refused before its body is read: both
  ``Content-Length`` and ``Transfer-Encoding`` (400), ``chunked`` twice (400), a transfer
  coding not served (501); :func:`refuse_unreadable` — a body that broke off before its end
  (400). Each with the connection closed, and its row.

A refused or cut request's row has the surface (``mcp-http``, ``rest``), the outcome
(``rate-limited``, ``http-408``, ``http-400``, ``http-501``), the status and the bytes sent; its
method is empty (its body was never read) and nothing about the caller is in it. Requests for
the site's pages have no row, as they have none when answered.

Spec: OP1, OP2, OP5.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Literal

from django.utils import timezone

from tmsite.callers import buckets, caller
from tmsite.core.settled import settled
from tmsite.mcp.codes import RATE_LIMITED
from tmsite.mcp.endpoint import MCP_PATH
from tmsite.mcp.protocol import INVALID_REQUEST
from tmsite.oplog import recorder
from tmsite.rest.codes import REST_PREFIX

logger = logging.getLogger("tmsite.serve")
requests_log = logging.getLogger("tmsite.requests")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

#: Seconds a caller refused for having too many requests in flight is told to wait.
BUSY_RETRY_AFTER = 1


#: The limits this module reads from the environment, and their defaults.
LIMITS: dict[str, float] = {
    "TM_BODY_TIMEOUT": 20,
    "TM_BODY_MIN_RATE": 4096,
    "TM_BODY_RATE_GRACE": 3,
    "TM_CALLER_MAX_REQUESTS": 16,
}


def _number(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, "") or default)
    except ValueError:
        return default
    return value if value >= 0 else default


@settled
def _limits() -> dict[str, float]:
    """``LIMITS`` as this process's environment sets them, read once (a worker's is fixed)."""
    return {name: _number(name, default) for name, default in LIMITS.items()}


def caller_cap() -> int:
    """Requests one caller may have in flight in this worker (``TM_CALLER_MAX_REQUESTS``)."""
    return int(_limits()["TM_CALLER_MAX_REQUESTS"])


def surface_of(path: str) -> str | None:
    """The request log's surface of a path, or None for the site's pages (they have no row)."""
    if path == MCP_PATH:
        return "mcp-http"
    if path.startswith(REST_PREFIX):
        return "rest"
    return None


# --- the caller -------------------------------------------------------------------------------

#: This process's own secret for the day: the keys below never leave the process.
_secrets = buckets.MemoryStore()
#: Requests in flight in this worker, by caller key (a key is dropped when its count is 0).
_in_flight: dict[bytes, int] = {}


def _forwarded(scope: Scope) -> str | None:
    """The request's ``X-Forwarded-For`` header (its fields joined), None when it has none."""
    found = [
        value.decode("latin-1")
        for name, value in scope["headers"]
        if name.lower() == b"x-forwarded-for"
    ]
    return ",".join(found) if found else None


def caller_key(scope: Scope) -> bytes | None:
    """The caller's key for the day, as the rate limit derives it; None when it is exempt.

    The address is kept on the scope (``caller.ADDRESS_KEY``) for the request's environ, so the
    rate limit does not work it out again.
    """
    peer, forwarded = str((scope.get("client") or ("", 0))[0]), _forwarded(scope)
    who = caller.address(peer, forwarded)
    scope[caller.ADDRESS_KEY] = who
    if caller.exempt(who, forwarded):
        return None
    return buckets.digest(_secrets.day_secret(time.time()), who)


def enter(scope: Scope) -> tuple[bool, bytes | None]:
    """Count this request against its caller's cap: whether it may go on, and its caller's key.

    False: the caller is at its cap; the request is refused with :func:`refuse_busy` and never
    counted. Otherwise the key (None: an exempt caller, or no cap) is given back to
    :func:`leave` when the request ends, however it ends.
    """
    cap = caller_cap()
    key = caller_key(scope) if cap > 0 else None
    if key is None:
        return True, None
    held = _in_flight.get(key, 0)
    if held >= cap:
        return False, None
    _in_flight[key] = held + 1
    return True, key


def leave(key: bytes | None) -> None:
    """The request :func:`enter` counted under ``key`` has ended."""
    if key is None:
        return
    left = _in_flight.get(key, 1) - 1
    if left > 0:
        _in_flight[key] = left
    else:
        _in_flight.pop(key, None)


async def refuse_busy(scope: Scope, send: Send) -> None:
    """Answer a request its caller has no room for: 429, ``Retry-After``, and its row."""
    started = time.perf_counter()
    cap = caller_cap()
    message = (
        f"Too many requests at once from this caller: at most {cap} may be in flight; "
        f"retry after {BUSY_RETRY_AFTER} seconds."
    )
    refusal = {"reason": "rate-limited", "retryAfter": BUSY_RETRY_AFTER}
    body: dict[str, Any]
    if scope["path"] == MCP_PATH:
        body = {"jsonrpc": "2.0", "error": {"code": RATE_LIMITED, "message": message}}
        body["error"]["data"] = refusal
    else:
        body = {"error": message, **refusal}
    payload = json.dumps(body, separators=(",", ":")).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"cache-control", b"no-store"),
        (b"retry-after", str(BUSY_RETRY_AFTER).encode()),
        (b"content-length", str(len(payload)).encode()),
    ]
    await send_whole(send, 429, headers, payload)
    record(scope, "rate-limited", 429, len(payload), started)


# --- the body ---------------------------------------------------------------------------------


class Late(Exception):
    """The whole body did not arrive within its deadline."""


class Slow(Late):
    """The body arrived slower than the minimum rate, past the grace."""


async def read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole body, or at most ``limit + 1`` bytes of it; None when the client went away.

    Its deadline, minimum rate and grace are ``TM_BODY_TIMEOUT``, ``TM_BODY_MIN_RATE`` and
    ``TM_BODY_RATE_GRACE`` (module text).

    Raises:
        Late: the whole body did not arrive within its deadline.
        Slow: past the grace, fewer bytes a second than the minimum rate had arrived.
    """
    limits = _limits()
    deadline = limits["TM_BODY_TIMEOUT"]
    rate = limits["TM_BODY_MIN_RATE"]
    grace = limits["TM_BODY_RATE_GRACE"]
    loop = asyncio.get_running_loop()
    start = loop.time()
    end = start + deadline
    chunks: list[bytes] = []
    size = 0

    def on_time_until() -> tuple[float, bool]:
        # the latest moment the body is still on time: its whole deadline, and the moment the
        # bytes so far would fall below the rate (never before the grace); and whether it is
        # the rate's moment
        behind = start + max(grace, size / rate) if rate > 0 else end
        return min(end, behind), behind < end

    due, slow = on_time_until()
    try:
        # one timer for the whole body (a body comes in two messages at least), moved only
        # when the bytes so far move the moment it is due
        async with asyncio.timeout_at(due) as timer:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return None
                chunk = message.get("body", b"")
                if chunk:
                    chunks.append(chunk)
                    size += len(chunk)
                if size > limit or not message.get("more_body", False):
                    return b"".join(chunks)
                moved, slow = on_time_until()
                if moved != due:
                    due = moved
                    if due <= loop.time():
                        raise TimeoutError
                    timer.reschedule(due)
    except TimeoutError:
        raise (Slow if slow else Late) from None


async def refuse_late(send: Send, scope: Scope, late: Late, started: float) -> None:
    """Answer a body that came too late or too slowly: 408, the connection closed; its row."""
    await _refuse_unread(send, scope, "slow" if isinstance(late, Slow) else "late", started)


#: What is wrong with a request's framing (``tmsite.serve.app``): both ``Content-Length`` and
#: ``Transfer-Encoding``; ``chunked`` applied more than once; a transfer coding not served.
Misframed = Literal["both", "repeated", "unknown-coding"]

#: Each refusal of a request's framing or body (unread, broken, late): its status and what
#: it says.
_UNREAD: dict[str, tuple[int, str]] = {
    "both": (400, "The request has both Content-Length and Transfer-Encoding."),
    "repeated": (400, "The request applies the chunked transfer coding more than once."),
    "unknown-coding": (501, "The only transfer coding served is chunked."),
    "broken": (400, "The request body could not be read to its end."),
    "late": (408, "The request body did not arrive in time."),
    "slow": (408, "The request body arrived too slowly."),
}


async def refuse_framing(send: Send, scope: Scope, misframed: Misframed) -> None:
    """Answer a request whose framing is refused, before its body is read; its row.

    400 for two framings (``Content-Length`` and ``Transfer-Encoding``: which one the body
    follows is what request smuggling plays on) or ``chunked`` twice, 501 for a transfer coding
    not served; the connection is closed. granian never passes two framings on as they came (it
    drops the ``Content-Length``, reads the body by its chunks and closes the connection after
    the answer); another server might.
    """
    await _refuse_unread(send, scope, misframed, time.perf_counter())


async def refuse_unreadable(send: Send, scope: Scope, started: float) -> None:
    """Answer a body that broke off before its end: 400, the connection closed; its row.

    The server says so with ``http.disconnect`` whether the client went away or its chunked
    framing was broken (a chunk size that is not one): the client may still be there, and is
    answered rather than left to the server's bare 500.
    """
    await _refuse_unread(send, scope, "broken", started)


async def _refuse_unread(send: Send, scope: Scope, why: str, started: float) -> None:
    status, message = _UNREAD[why]
    headers = [(b"connection", b"close"), (b"cache-control", b"no-store")]
    if scope["path"] == MCP_PATH:
        headers.append((b"content-type", b"application/json"))
        error = {"code": INVALID_REQUEST, "message": message}
        body = json.dumps({"jsonrpc": "2.0", "error": error}, separators=(",", ":")).encode()
    else:
        headers.append((b"content-type", b"text/plain"))
        body = message.encode() + b"\n"
    await send_whole(send, status, headers, body)
    record(scope, f"http-{status}", status, len(body), started)


# --- the answer and its row -------------------------------------------------------------------


async def send_whole(
    send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes
) -> None:
    """Send one whole answer; a client that went away meanwhile is no failure."""
    if not any(name == b"content-length" for name, _ in headers):
        headers = [*headers, (b"content-length", str(len(body)).encode())]
    try:
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": False})
    except Exception as exc:  # the connection is gone: nothing to answer
        logger.debug("a refusal could not be sent: %s", type(exc).__name__)


def record(scope: Scope, outcome: str, status: int, size: int, started: float) -> None:
    """The request-log row (and JSON line) of a request refused here; the site's have none."""
    surface = surface_of(scope["path"])
    if surface is None:
        return
    row = recorder.Row(
        at=timezone.now(),
        surface=surface,
        outcome=outcome,
        status=status,
        bytes=size,
        duration_us=max(0, round((time.perf_counter() - started) * 1_000_000)),
    )
    try:
        recorder.record(row)  # in the event loop: only queued, never written here
    except Exception as exc:
        logger.warning("a refusal's request-log row was not kept: %s", type(exc).__name__)
    if requests_log.isEnabledFor(logging.INFO):
        requests_log.info(
            "request",
            extra={
                "event": "request",
                "surface": surface,
                "method": "",
                "kind": "",
                "target": "",
                "facet": "",
                "protocol": "",
                "outcome": outcome,
                "status": status,
                "bytes": size,
                "duration_ms": round(row.duration_us / 1000, 3),
                "cost": 0,
            },
        )
