"""``resources/subscribe`` and ``resources/unsubscribe`` (2025-11-25, ``server/resources``).

The initialize era's subscriptions belong to a session: the client subscribes to one URI at a
time and is told ``notifications/resources/updated {uri}`` when it changes, on the session's own
channel, until it unsubscribes or the session ends. Two transports hold sessions:

* **stdio** (``manage.py mcp_stdio``): the process is the session (no header names it) and the
  channel its stdout. The transport hands each request its :class:`Session`
  (``CallContext.subscriber``), kept in memory; its URIs count against the caps on subscribed
  URIs, the caller's and the server's, as a listen's do (a refusal names the cap).
* **HTTP**, where streams are delivered (``python -m tmsite.serve``), for a request carrying a
  valid ``Mcp-Session-Id`` (:mod:`tmsite.subscriptions.sessions`): each subscription is a row
  keyed by the session's hash, the changes are told on the session's GET stream
  (:mod:`tmsite.streams.sessionstream`) wherever it is held, and the stream's worker
  learns the rows from the database (at once, when it is this process). The session's cap is
  ``Limits.uris_per_caller`` (``TM_LISTEN_URIS_PER_CALLER``, 256) URIs of at most
  ``TM_SESSION_URI_BYTES`` (65,536) characters in all; a caller may hold subscriptions in at
  most ``TM_SESSIONS_PER_CALLER`` (16) sessions at once. A refusal is ``-32000`` with ``data``
  ``{"reason", "cap", "limit"}``: ``too-many-subscriptions`` for ``uris-per-session`` and
  ``uri-bytes-per-session``, ``too-many-sessions`` for ``sessions-per-caller``. The caller is
  kept on the rows only as the rate limit's key for the UTC day
  (:func:`tmsite.callers.caller.keyed`); the box's own loopback calls are not capped so.

Over HTTP, in this order: under a WSGI server (gunicorn, Django's live server) there is no stream
to tell of changes: ``-32601`` saying where streams are served; without a session, ``-32600``
(``data.reason`` ``no-session``) saying to initialize first and send its ``Mcp-Session-Id`` (a
session id that is not valid never gets here: the endpoint answers it 404).

Everywhere: a request without ``params.uri`` is ``-32602``; the URI is checked as a listen
checks each of its own (:func:`tmsite.streams.listen.check_uri`: a ``tm://`` URI of this
host naming a mount it serves), a refusal being the era's error for its reason (``bad-uri``
-32602, ``not-found`` -32002, with the refusal's ``data``). The matching rule is the bus's
(:func:`changes.affects`): a subscription to a collection is told each change beneath it, with
the changed child's URI. Both methods are idempotent and answer ``{}``: subscribing twice keeps
one subscription, unsubscribing from a URI never subscribed to is fine.

Spec: SUB2.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Count, QuerySet, Sum
from django.db.models.functions import Length
from django.utils import timezone

from tmsite.bus import changes, env
from tmsite.bus.changes import Change
from tmsite.callers import caller
from tmsite.core.errors import BadUri
from tmsite.mcp import methods
from tmsite.mcp.codes import rpc_error
from tmsite.mcp.protocol import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    CallContext,
    Era,
    RpcError,
)
from tmsite.streams import listen, sessionstream
from tmsite.subscriptions import sessions, sources
from tmsite.subscriptions.models import URI_MAX, SessionSubscription

SUBSCRIBE = "resources/subscribe"
UNSUBSCRIBE = "resources/unsubscribe"
METHODS = frozenset({SUBSCRIBE, UNSUBSCRIBE})
NOT_HERE = (
    "{method} is not answered by this server process: it answers one request at a time on a "
    "thread and holds no streams, so there is no session stream to tell of changes. Streams "
    "are served by `python -m tmsite.serve` (and, over stdio, by `manage.py mcp_stdio`)."
)
NO_SESSION = (
    "{method} needs a session: send initialize first, then send the Mcp-Session-Id header it "
    "answered with this request; the changes are told on the session's GET stream."
)

#: Tells the session's client one notification; must be quick (called on a change's thread).
Tell = Callable[[dict[str, Any]], None]


class Session:
    """The 2025-11-25 subscriptions of one session, told through ``tell``."""

    def __init__(self, tell: Tell, caller: str = "") -> None:
        self._tell, self.caller = tell, caller
        self._lock = threading.Lock()
        self._uris: list[str] = []
        self._slot: listen.Slot | None = None
        self._remove: Callable[[], None] | None = None

    @property
    def uris(self) -> list[str]:
        """The URIs subscribed to now, in the order they were."""
        with self._lock:
            return list(self._uris)

    def subscribe(self, uri: str) -> None:
        """Hold ``uri`` (checked) until :meth:`unsubscribe` or :meth:`close`.

        Raises:
            RpcError: a cap on subscribed URIs is reached.
        """
        with self._lock:
            if uri in self._uris:
                return
            limits = listen.Limits.current()
            if self._slot is None:
                self._slot = listen.SLOTS.take(self.caller, 1, limits, streams=0)
            else:
                self._slot.resize(len(self._uris) + 1, limits)
            if self._remove is None:
                self._remove = changes.add_listener(self._hear)
            self._uris.append(uri)
        sources.listened([uri])  # the answer means "from now on you are told"

    def unsubscribe(self, uri: str) -> None:
        """Stop telling of ``uri`` (a URI not held is ignored)."""
        with self._lock:
            if uri not in self._uris:
                return
            self._uris.remove(uri)
            if self._slot is not None:
                self._slot.resize(len(self._uris), listen.Limits.current())
        changes.release(uri)

    def close(self) -> None:
        """End the session: every subscription released, its share of the caps freed."""
        with self._lock:
            held, self._uris = self._uris, []
            remove, self._remove = self._remove, None
            slot, self._slot = self._slot, None
        if remove is not None:
            remove()
        for uri in held:
            changes.release(uri)
        if slot is not None:
            slot.free()

    def _hear(self, change: Change) -> None:
        # no list change is told in this era; a lost bus ends no session
        told = changes.told(self.uris, change)
        if told is not None:
            self._tell(sessionstream.updated(told))


def _uri(params: dict[str, Any], method: str, ctx: CallContext) -> str:
    if "uri" not in params:
        raise RpcError(INVALID_PARAMS, f"{method} needs params.uri, a string.")
    uri = params.get("uri")
    refusal = listen.check_uri(uri)
    if refusal is None and isinstance(uri, str) and len(uri) > URI_MAX:
        refusal = BadUri(uri[:200], f"a subscribed URI may be at most {URI_MAX} characters")
    if refusal is not None:
        raise rpc_error(refusal, ctx.era)
    assert isinstance(uri, str)
    return uri


def _http_session(method: str, ctx: CallContext) -> sessions.Session:
    if ctx.transport != "http" or not ctx.delivers:
        raise RpcError(METHOD_NOT_FOUND, NOT_HERE.format(method=method))
    session = ctx.session
    if session is None:
        raise RpcError(INVALID_REQUEST, NO_SESSION.format(method=method), {"reason": "no-session"})
    return session


def _check_caps(mine: QuerySet[SessionSubscription], holder: str, more: int) -> None:
    """Refuse one more URI of ``more`` characters for the session whose rows are ``mine``.

    Raises:
        RpcError: a cap would be passed (see the module's text).
    """
    uris = listen.Limits.current().uris_per_caller
    uri_bytes = int(env.positive("TM_SESSION_URI_BYTES", 65_536))
    held = mine.aggregate(n=Count("id"), chars=Sum(Length("uri")))
    if held["n"] >= uris:
        raise listen.cap_refusal("too-many-subscriptions", "uris-per-session", uris)
    if (held["chars"] or 0) + more > uri_bytes:
        raise listen.cap_refusal("too-many-subscriptions", "uri-bytes-per-session", uri_bytes)
    if held["n"] == 0 and holder:
        most = int(env.positive("TM_SESSIONS_PER_CALLER", 16))
        others = (
            SessionSubscription.objects.filter(holder=holder, expires__gt=timezone.now())
            .values("session")
            .distinct()
            .count()
        )
        if others >= most:
            raise listen.cap_refusal("too-many-sessions", "sessions-per-caller", most)


def subscribe(params: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
    """``resources/subscribe {uri}``: the session is told when ``uri`` changes."""
    held = ctx.subscriber
    if held is not None:
        held.subscribe(_uri(params, SUBSCRIBE, ctx))
        return {}
    session = _http_session(SUBSCRIBE, ctx)
    uri = _uri(params, SUBSCRIBE, ctx)
    who = ctx.exchange.caller if ctx.exchange is not None else None
    holder = caller.keyed(who, time.time()) if who else ""

    def write() -> None:
        with transaction.atomic():
            mine = SessionSubscription.objects.filter(session=session.key)
            if not mine.filter(uri=uri).exists():
                _check_caps(mine, holder, len(uri))
                try:
                    with transaction.atomic():
                        SessionSubscription.objects.create(
                            session=session.key,
                            uri=uri,
                            expires=session.expires_at,
                            holder=holder,
                        )
                except IntegrityError:  # the same subscription, made at the same moment
                    pass

    sessionstream.retried(write)
    sessionstream.caught_up(session)  # the answer means "from now on you are told"
    return {}


def unsubscribe(params: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
    """``resources/unsubscribe {uri}``: no more notifications of ``uri``."""
    held = ctx.subscriber
    if held is not None:
        held.unsubscribe(_uri(params, UNSUBSCRIBE, ctx))
        return {}
    session = _http_session(UNSUBSCRIBE, ctx)
    uri = _uri(params, UNSUBSCRIBE, ctx)
    sessionstream.retried(SessionSubscription.objects.filter(session=session.key, uri=uri).delete)
    sessionstream.wake()
    return {}


def install() -> None:
    """Put the two methods in the method table (the initialize era only)."""
    era: frozenset[Era] = frozenset({"2025"})
    methods.METHODS.setdefault(SUBSCRIBE, methods.Method(subscribe, era))
    methods.METHODS.setdefault(UNSUBSCRIBE, methods.Method(unsubscribe, era))
