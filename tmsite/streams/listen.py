"""``subscriptions/listen`` (2026-07-28, ``basic/patterns/subscriptions``): the request's checks.

The method is answered by ``python -m tmsite.serve`` (:mod:`tmsite.streams.stream` holds
the stream in the event loop) and by ``manage.py mcp_stdio``
(:mod:`tmsite.streams.stdio_stream`, the stream as lines on stdout). Over HTTP the
request goes through the endpoint as every other one does — ``Origin`` and ``Host``, the
envelope's rules, the 2026-07-28 ``_meta`` and headers, the caller's rate-limit bucket (a
listen is priced ``listen``) — and reaches :func:`listen`, which checks what only a listen
has, in this order (over stdio, 2 has no header to check; the checks from 3 on are
:func:`plan`, shared by both transports):

1. it is served here: under a WSGI server (gunicorn, Django's live server) there is no stream
   to hold, and the answer is ``-32601`` saying so (404 in 2026-07-28, as any method not
   offered);
2. ``Accept`` lists ``text/event-stream`` (else ``-32600`` with the request's id, sent with HTTP
   406 as the transport's own ``Accept`` refusal is: the answer is a stream);
3. ``params.notifications`` is an object whose flags are booleans and whose
   ``resourceSubscriptions`` is a list (else ``-32602``);
4. the list's length, before any URI is looked at: more entries than the caller may hold
   (``Limits.uris_per_caller``) is the cap's refusal at once, so a long list costs no work;
5. each URI is checked on its own: one that is not a ``tm://`` URI of this host, names no
   mount, or has a form its mount's read refuses (``Mount.admits``: a path leaving its root, a
   denied name) is refused by itself — left out of the acknowledged subset and listed, with its
   refusal's reason and sentence, in the acknowledgement's ``_meta["tinymachines.ai/refused"]``
   (each echoed URI cut to :data:`ECHO_CHARS` characters) — and the listen goes on with the
   others (duplicates are counted once);
6. the caps (:class:`Limits`): open streams per caller and in all, subscribed URIs per caller
   and in all (over stdio the process is the caller, and its 2025-11-25 subscriptions count
   among its URIs). A refusal is ``-32000`` whose ``data`` names the cap (``reason``
   ``too-many-streams`` or ``too-many-subscriptions``, ``cap``, ``limit``), with ``retryAfter``
   when the cap is the server's (waiting helps); a caller's own cap is freed by closing one of
   its streams.

Then the listen answers with its plan (what is honoured, its slot), a stream result the
transport starts the stream from, and the request log's row is held back until the stream ends
(its whole duration, the bytes sent, how it ended); it names no caller, as no row does.
The caps are kept in memory, per process.

Spec: SUB1.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from tmsite.bus import changes, env
from tmsite.bus.changes import Change, ListKind
from tmsite.core import uri as tmuri
from tmsite.core.errors import BadUri, NotFound, Refusal
from tmsite.mcp import methods
from tmsite.mcp.protocol import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    CallContext,
    RpcError,
    StreamResult,
)
from tmsite.mounts import registry
from tmsite.oplog import hooks
from tmsite.subscriptions import sessions

METHOD = "subscriptions/listen"
SUBSCRIPTION_ID_META = "io.modelcontextprotocol/subscriptionId"
REFUSED_META = "tinymachines.ai/refused"
#: The filter's flags and the list each asks to be told of.
FLAGS: dict[str, ListKind] = {
    "toolsListChanged": "tools",
    "promptsListChanged": "prompts",
    "resourcesListChanged": "resources",
}
SUBSCRIPTIONS_KEY = "resourceSubscriptions"
#: The JSON-RPC code of a cap's refusal (implementation-defined, as the rate limit's).
CAP_REFUSED = -32000
#: Seconds a refusal by a server-wide cap suggests waiting.
CAP_RETRY_SECONDS = 30
#: The most characters of a refused URI the acknowledgement echoes.
ECHO_CHARS = 200
NOT_HERE = (
    "subscriptions/listen is not answered by this server process: it answers one request at a "
    "time on a thread and holds no streams. Streams are served by `python -m tmsite.serve` "
    "and by `manage.py mcp_stdio`."
)


@dataclass(frozen=True)
class Limits:
    """The caps and clocks of listen streams, read from the environment when asked."""

    streams: int = 1000
    streams_per_caller: int = 8
    uris: int = 20_000
    uris_per_caller: int = 256
    idle_seconds: float = 1800.0
    keepalive_seconds: float = 15.0
    #: Events a stream may be behind its client before it is ended (gracefully).
    behind: int = 1024

    @classmethod
    def current(cls) -> Limits:
        """The environment's ``TM_LISTEN_*`` over the defaults.

        ``TM_LISTEN_STREAMS``, ``TM_LISTEN_STREAMS_PER_CALLER``, ``TM_LISTEN_URIS``,
        ``TM_LISTEN_URIS_PER_CALLER``, ``TM_LISTEN_IDLE``, ``TM_LISTEN_KEEPALIVE``.
        """
        d = cls()
        return cls(
            streams=int(env.positive("TM_LISTEN_STREAMS", d.streams)),
            streams_per_caller=int(
                env.positive("TM_LISTEN_STREAMS_PER_CALLER", d.streams_per_caller)
            ),
            uris=int(env.positive("TM_LISTEN_URIS", d.uris)),
            uris_per_caller=int(env.positive("TM_LISTEN_URIS_PER_CALLER", d.uris_per_caller)),
            idle_seconds=env.positive("TM_LISTEN_IDLE", d.idle_seconds),
            keepalive_seconds=env.positive("TM_LISTEN_KEEPALIVE", d.keepalive_seconds),
        )


# --- the caps ----------------------------------------------------------------------------------


class Slot:
    """One open stream's share of the caps; :meth:`free` gives it back (once)."""

    def __init__(self, slots: Slots, caller: str, uris: int, streams: int = 1) -> None:
        self._slots, self.caller, self.uris, self.streams = slots, caller, uris, streams
        self._freed = False

    def resize(self, uris: int, limits: Limits) -> None:
        """Hold ``uris`` subscribed URIs from now on (a session subscribes one at a time).

        Raises:
            RpcError: more would pass a cap on URIs (the caller's, or the server's).
        """
        slots = self._slots
        with slots.lock:
            if self._freed:
                return
            mine = slots.per_caller[self.caller]
            more = uris - self.uris
            if more > 0:
                slots.check_uris(mine, more, limits)
            mine[1] += more
            slots.uris += more
            self.uris = uris

    def free(self) -> None:
        """Give the stream's share back (later calls do nothing)."""
        slots = self._slots
        with slots.lock:
            if self._freed:
                return
            self._freed = True
            slots.streams -= self.streams
            slots.uris -= self.uris
            mine = slots.per_caller.get(self.caller)
            if mine is not None:
                mine[0] -= self.streams
                mine[1] -= self.uris
                mine[2] -= 1
                if mine[2] <= 0:
                    del slots.per_caller[self.caller]


class Slots:
    """Open streams and subscribed URIs of this process, in all and per caller."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.streams = 0
        self.uris = 0
        self.per_caller: dict[str, list[int]] = {}

    def take(self, caller: str, uris: int, limits: Limits, streams: int = 1) -> Slot:
        """A slot for a stream of ``caller`` subscribed to ``uris`` URIs.

        ``streams=0``: a 2025-11-25 session's subscriptions, which hold no stream of their own
        (over stdio they are told on the process's stdout).

        Raises:
            RpcError: a cap is reached (see the module's text).
        """
        with self.lock:
            mine = self.per_caller.get(caller, [0, 0, 0])
            if mine[0] + streams > limits.streams_per_caller:
                raise cap_refusal(
                    "too-many-streams", "streams-per-caller", limits.streams_per_caller
                )
            self.check_uris(mine, uris, limits, "uris-per-caller")
            if self.streams + streams > limits.streams:
                raise cap_refusal("too-many-streams", "streams", limits.streams, CAP_RETRY_SECONDS)
            self.check_uris(mine, uris, limits, "uris")
            self.per_caller[caller] = [mine[0] + streams, mine[1] + uris, mine[2] + 1]
            self.streams += streams
            self.uris += uris
            return Slot(self, caller, uris, streams)

    def check_uris(self, mine: list[int], more: int, limits: Limits, *caps: str) -> None:
        """Refuse ``more`` URIs past ``caps`` (default both) for a caller holding ``mine``."""
        caps = caps or ("uris-per-caller", "uris")
        if "uris-per-caller" in caps and mine[1] + more > limits.uris_per_caller:
            raise cap_refusal("too-many-subscriptions", "uris-per-caller", limits.uris_per_caller)
        if "uris" in caps and self.uris + more > limits.uris:
            raise cap_refusal("too-many-subscriptions", "uris", limits.uris, CAP_RETRY_SECONDS)

    def status(self) -> dict[str, int]:
        """Open streams, subscribed URIs and callers with a stream (no caller is named)."""
        with self.lock:
            return {"streams": self.streams, "uris": self.uris, "callers": len(self.per_caller)}


SLOTS = Slots()

_CAP_SENTENCES = {
    "streams-per-caller": "This caller has {limit} listen streams open, the most one may hold; "
    "close one to open another.",
    "uris-per-caller": "This listen would take this caller past {limit} subscribed URIs across "
    "its streams; subscribe to a collection instead of its children, or close a stream.",
    "uris-per-listen": "A listen names at most {limit} URIs in resourceSubscriptions; subscribe "
    "to a collection instead of its children.",
    "streams": "The server holds {limit} listen streams, the most it holds; try again later.",
    "uris": "The server's listen streams hold {limit} subscribed URIs, the most it holds; try "
    "again later.",
    "uris-per-session": "This session is subscribed to {limit} URIs, the most one may be; "
    "subscribe to a collection instead of its children, or unsubscribe from one.",
    "uri-bytes-per-session": "This session's subscribed URIs would pass {limit} characters in "
    "all; subscribe to a collection instead of its children, or unsubscribe from one.",
    "sessions-per-caller": "This caller holds subscriptions in {limit} sessions, the most one "
    "may; end one (DELETE) or subscribe in one of them.",
}


def cap_refusal(reason: str, cap: str, limit: int, retry: int | None = None) -> RpcError:
    """The refusal of cap ``cap`` (see the module's text)."""
    data: dict[str, Any] = {"reason": reason, "cap": cap, "limit": limit}
    if retry is not None:
        data["retryAfter"] = retry
    return RpcError(CAP_REFUSED, _CAP_SENTENCES[cap].format(limit=limit), data)


# --- the request -------------------------------------------------------------------------------


@dataclass
class Plan(StreamResult):
    """What one accepted listen delivers, and what it holds until it ends: its stream result."""

    rid: Any
    honoured: dict[str, Any]
    uris: list[str]
    lists: frozenset[ListKind]
    refused: list[dict[str, str]]
    slot: Slot
    #: Writes the request log's row held back for the stream (duration µs, bytes, outcome).
    log: Callable[[int, int, str], None] | None = None

    def let_go(self) -> None:
        """The stream ended: its URIs' interest, its lists and its slot are given back."""
        for uri in self.uris:
            changes.release(uri)
        changes.listen_lists(self.lists, present=False)
        self.slot.free()

    def ack(self) -> dict[str, Any]:
        """The first message: ``notifications/subscriptions/acknowledged``."""
        meta: dict[str, Any] = {SUBSCRIPTION_ID_META: self.rid}
        if self.refused:
            meta[REFUSED_META] = self.refused
        return {
            "jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged",
            "params": {"notifications": self.honoured, "_meta": meta},
        }

    def complete(self) -> dict[str, Any]:
        """The graceful end: the listen's own response."""
        return {
            "jsonrpc": "2.0",
            "id": self.rid,
            "result": {"resultType": "complete", "_meta": {SUBSCRIPTION_ID_META: self.rid}},
        }

    def notification(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """A notification of this stream, tagged with its subscription id."""
        body: dict[str, Any] = dict(params or {})
        body["_meta"] = {SUBSCRIPTION_ID_META: self.rid}
        return {"jsonrpc": "2.0", "method": f"notifications/{method}", "params": body}

    def notification_of(self, change: Change) -> dict[str, Any] | None:
        """This stream's notification of ``change`` (a bus change), or None: not asked for.

        A ``lost`` change is not a message: it ends the stream (each transport says how).
        """
        if change.kind == "list_changed" and change.list_kind in self.lists:
            return self.notification(f"{change.list_kind}/list_changed")
        updated = changes.told(self.uris, change)
        return None if updated is None else self.notification("resources/updated", {"uri": updated})


def check_uri(text: Any) -> Refusal | None:
    """Why ``text`` cannot be subscribed to here, or None."""
    host: str = settings.TM_HOST
    try:
        if not isinstance(text, str):
            raise BadUri(None, "a subscribed URI must be a string")
        parsed = tmuri.parse(text)
        if parsed.is_hosts:
            return None
        if parsed.host != host:
            raise NotFound(text, f"this server answers for tm://{host}/ only", [f"tm://{host}/"])
        if parsed.mount is not None:
            mounts = registry.namespace().mounts
            mount = mounts.get(parsed.mount)
            if mount is None:
                nearest = [f"tm://{host}/{name}/" for name in mounts][:5]
                raise NotFound(text, f"no mount {parsed.mount!r} is served here", nearest)
            mount.admits(parsed)
    except Refusal as refusal:
        return refusal
    return None


def _filter(params: dict[str, Any]) -> dict[str, Any]:
    wanted = params.get("notifications")
    if not isinstance(wanted, dict):
        raise RpcError(INVALID_PARAMS, "params.notifications must be an object.")
    for flag in FLAGS:
        if flag in wanted and not isinstance(wanted[flag], bool):
            raise RpcError(INVALID_PARAMS, f"notifications.{flag} must be a boolean.")
    uris = wanted.get(SUBSCRIPTIONS_KEY)
    if uris is not None and not isinstance(uris, list):
        raise RpcError(INVALID_PARAMS, f"notifications.{SUBSCRIPTIONS_KEY} must be a list.")
    return wanted


def listen(params: dict[str, Any], ctx: CallContext) -> Plan:
    """The method table's handler: check the listen; its plan is the stream to hold."""
    offer = ctx.stream
    if offer is None:
        raise RpcError(METHOD_NOT_FOUND, NOT_HERE)
    if offer.accept is not None and not sessions.accepts_stream(offer.accept):
        raise RpcError(
            INVALID_REQUEST,
            "subscriptions/listen answers with an event stream: Accept must list "
            "text/event-stream.",
            status=406,
        )
    return plan(offer.rid, params, ctx.exchange)


def _echo(text: str) -> str:
    return text if len(text) <= ECHO_CHARS else text[: ECHO_CHARS - 1] + "…"


def plan(rid: Any, params: dict[str, Any], exchange: hooks.Exchange | None) -> Plan:
    """The checks of a listen from its filter on (3 to 5 above), on any transport: its plan.

    ``exchange`` is the request's: its caller's slots, its row held back for the stream.

    Raises:
        RpcError: the filter is malformed (-32602) or a cap is reached (-32000).
    """
    wanted = _filter(params)
    limits = Limits.current()
    asked: list[Any] = wanted.get(SUBSCRIPTIONS_KEY) or []
    if len(asked) > limits.uris_per_caller:  # before any URI costs a parse
        raise cap_refusal("too-many-subscriptions", "uris-per-listen", limits.uris_per_caller)
    honoured: dict[str, Any] = {flag: True for flag in FLAGS if wanted.get(flag) is True}
    uris: dict[str, None] = {}  # a set that keeps the order asked
    refused: list[dict[str, str]] = []
    for text in asked:
        refusal = check_uri(text)
        if refusal is not None:
            refused.append(
                {
                    "uri": _echo(str(text)),
                    "reason": refusal.reason,
                    "message": _echo(refusal.message),
                }
            )
        else:
            uris[text] = None
    if uris:
        honoured[SUBSCRIPTIONS_KEY] = list(uris)
    caller = exchange.caller if exchange is not None else None
    slot = SLOTS.take(caller or "", len(uris), limits)
    return Plan(
        rid=rid,
        honoured=honoured,
        uris=list(uris),
        lists=frozenset(FLAGS[flag] for flag in FLAGS if flag in honoured),
        refused=refused,
        slot=slot,
        log=hooks.hold(exchange),
    )


def install() -> None:
    """Put ``subscriptions/listen`` in the method table (2026-07-28 only)."""
    methods.METHODS.setdefault(METHOD, methods.Method(listen, frozenset({"2026"})))
