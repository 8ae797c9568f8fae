"""``resources/subscribe`` and ``resources/unsubscribe`` (2025-11-25, ``server/resources``).

The initialize era's subscriptions belong to a session: the client subscribes to one URI at a
time and is told ``notifications/resources/updated {uri}`` when it changes, on the session's own
channel, until it unsubscribes or the session ends. The methods are answered where a session is
held — the transport runs the request inside :func:`holding` with its :class:`Session` — and
refused with ``-32601`` elsewhere, saying where they are served. Over stdio the process is the
session (no header names it) and the channel its stdout.

A subscription is checked as a listen's URI is (:func:`tmsite.subscriptions.listen.check_uri`:
a ``tm://`` URI of this host naming a mount it serves); a refusal is the era's error for its
reason (``bad-uri`` -32602, ``not-found`` -32002, with the refusal's ``data``). The session's
URIs count against the caps on subscribed URIs, the caller's and the server's, as a listen's
do (a refusal names the cap). The matching rule is the bus's (:func:`changes.affects`): a
subscription to a collection is told each change beneath it, with the changed child's URI.
Subscribing twice to one URI holds it once; unsubscribing from a URI not subscribed to is
answered ``{}`` as well.

Spec: SUB2.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

from tmsite.mcp import methods
from tmsite.mcp.codes import rpc_error
from tmsite.mcp.protocol import INVALID_PARAMS, METHOD_NOT_FOUND, Era, RpcError
from tmsite.subscriptions import changes, fswatch, listen, sources
from tmsite.subscriptions.changes import Change

SUBSCRIBE = "resources/subscribe"
UNSUBSCRIBE = "resources/unsubscribe"
METHODS = frozenset({SUBSCRIBE, UNSUBSCRIBE})
NOT_HERE = (
    "resources/subscribe is answered where a session is held: over stdio, by "
    "`manage.py mcp_stdio`; over HTTP, listen with subscriptions/listen (2026-07-28)."
)

#: Tells the session's client one notification; must be quick (called on a change's thread).
Tell = Callable[[dict[str, Any]], None]


def start_sources() -> None:
    """The change sources follow what is listened to (idempotent): fs, git, records, peers."""
    fswatch.SOURCE.start()
    sources.install()


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
                start_sources()
            self._uris.append(uri)
        changes.interest(uri)

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
        if change.kind != "updated" or change.uri is None:
            return  # no list change is told in this era; a lost bus ends no session
        for subscribed in self.uris:
            told = changes.affects(subscribed, change.uri, exact=change.exact)
            if told is not None:
                self._tell(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/resources/updated",
                        "params": {"uri": told},
                    }
                )
                return


_session: ContextVar[Session | None] = ContextVar("tm_subscribe_session", default=None)


@contextlib.contextmanager
def holding(session: Session) -> Iterator[None]:
    """The requests answered in the block belong to ``session``."""
    token = _session.set(session)
    try:
        yield
    finally:
        _session.reset(token)


def _uri(params: dict[str, Any], method: str) -> str:
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise RpcError(INVALID_PARAMS, f"{method} needs params.uri, a string.")
    return uri


def subscribe(params: dict[str, Any], ctx: Any) -> dict[str, Any]:
    """``resources/subscribe {uri}``: the session is told when ``uri`` changes."""
    session = _session.get()
    if session is None:
        raise RpcError(METHOD_NOT_FOUND, NOT_HERE)
    uri = _uri(params, SUBSCRIBE)
    refusal = listen.check_uri(uri)
    if refusal is not None:
        raise rpc_error(refusal, ctx.era)
    session.subscribe(uri)
    return {}


def unsubscribe(params: dict[str, Any], ctx: Any) -> dict[str, Any]:
    """``resources/unsubscribe {uri}``: no more notifications of ``uri``."""
    session = _session.get()
    if session is None:
        raise RpcError(METHOD_NOT_FOUND, NOT_HERE.replace(SUBSCRIBE, UNSUBSCRIBE, 1))
    session.unsubscribe(_uri(params, UNSUBSCRIBE))
    return {}


def install() -> None:
    """Put the two methods in the method table (the initialize era only)."""
    era: frozenset[Era] = frozenset({"2025"})
    methods.METHODS.setdefault(SUBSCRIBE, methods.Method(subscribe, era))
    methods.METHODS.setdefault(UNSUBSCRIBE, methods.Method(unsubscribe, era))
