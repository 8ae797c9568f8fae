"""The 2025-11-25 session's GET stream, held in the event loop of ``python -m tmsite.serve``.

``GET /api/mcp`` with ``Accept: text/event-stream`` and a valid ``Mcp-Session-Id`` runs the
endpoint on a pool thread like any request (``Origin``, ``Host``, the session's check:
:mod:`tmsite.mcp.endpoint` rule 3a); when it says the stream may open, the stream is a coroutine
(:class:`tmsite.streams.stream.Held`, the listen stream's pieces): ``200``,
``text/event-stream``, ``X-Accel-Buffering: no``, a keep-alive comment every
``TM_LISTEN_KEEPALIVE`` seconds, the end (the body closes) after ``TM_LISTEN_IDLE`` seconds
without an event. Each event is ``notifications/resources/updated {uri}`` for a change that
reaches one of the session's subscribed URIs (:func:`tmsite.bus.changes.affects`),
with an ``id:``: the session's own increasing event number. The first event primes the
client to resume (``basic/transports``): an ``id`` and empty ``data``, the position the stream
starts at (:func:`priming`).

Subscriptions may be made on another process or machine than the one holding the stream, so the
process's :class:`Hub` learns each open session's URIs from the database — one poll for all its
sessions every ``TM_SESSION_POLL`` seconds (0.5), at once when the subscribe was answered in this
process — and holds the bus's interest in them, so the change sources watch them.

* **One live stream per session**: a stream that opens records itself as the session's
  (:class:`~tmsite.subscriptions.models.SessionStream`); an older stream of the session, here or
  on another machine, ends when its process sees that (at once here, by the next poll there).
* **No event lost to a takeover**: from a new stream's claim until it is attached, what changes
  for the session waits for it (the older stream's id keeps nothing once the claim is made);
  it is then numbered after the claimed position, kept and sent after the replay.
* **Resumable within a window**: every event is kept (the session's last
  :data:`KEPT_EVENTS`, and none older than ``TM_SESSION_REPLAY`` seconds, 300). A GET with
  ``Last-Event-ID`` — on any machine — is first sent the kept events after that id, then what
  comes. After a stream is cut its process goes on watching the session's URIs and keeping
  their events for the replay window, unless a newer stream of the session opened anywhere.
* **Caps**: each open stream takes a slot of the listen streams' caps
  (:data:`tmsite.streams.listen.SLOTS`: per caller and in all); over one, the GET is
  answered 429 with the cap's refusal.

Spec: SUB2.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import functools
import json
import logging
import secrets
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from django.db import OperationalError, close_old_connections, transaction

from tmsite.bus import changes, env
from tmsite.bus.changes import Change
from tmsite.mcp.envelope import error_response
from tmsite.mcp.protocol import RpcError
from tmsite.oplog import hooks
from tmsite.streams import listen
from tmsite.streams.stream import Held, Receive, RunEndpoint, Send, event, soon, whole
from tmsite.subscriptions import sessions, sources
from tmsite.subscriptions.models import SessionEvent, SessionStream, SessionSubscription

log = logging.getLogger("tmsite.subscriptions")
T = TypeVar("T")

#: The most events kept for one session's reconnect.
KEPT_EVENTS = 256
STORE_ATTEMPTS = 5


def replay_seconds() -> float:
    """How long events are kept for a reconnect (``TM_SESSION_REPLAY``, 300 s unless set)."""
    return env.positive("TM_SESSION_REPLAY", 300.0)


def poll_seconds() -> float:
    """How often a process reads its sessions' subscriptions (``TM_SESSION_POLL``, 0.5 s)."""
    return env.positive("TM_SESSION_POLL", 0.5)


def updated(uri: str) -> dict[str, Any]:
    """The notification a session's stream sends for ``uri``."""
    return {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}}


def priming(seq: int, after: int | None) -> bytes:
    """The stream's first event: an ``id`` and empty ``data``, a position to resume from.

    The id is the session's last event number (``seq``), or the ``Last-Event-ID`` asked for
    when that is older (what is replayed after it follows): a reconnect naming it is sent what
    came after it, as for any event's id.
    """
    position = seq if after is None else min(after, seq)
    return b"id: " + str(position).encode() + b"\ndata:\n\n"


def _now() -> dt.datetime:
    return dt.datetime.now(tz=dt.UTC)


# --- the database side (on the hub's one thread) --------------------------------------------


def retried(write: Callable[[], T]) -> T:
    """``write()``, tried again a few times while the database is busy for a moment.

    SQLite refuses at once a write that another connection's read or write holds back; the
    last attempt's failure is raised.
    """
    for attempt in range(STORE_ATTEMPTS - 1):
        try:
            return write()
        except OperationalError:
            time.sleep(0.05 * (attempt + 1))
    return write()


def _claim(
    session: sessions.Session, stream: str, last_event_id: str | None
) -> tuple[set[str], list[tuple[int, str]], int]:
    """Record ``stream`` as the session's live one; its URIs, the events to replay, last id.

    A database busy for a moment is tried again (:func:`retried`).
    """

    def once() -> tuple[set[str], list[tuple[int, str]], int]:
        close_old_connections()
        with transaction.atomic():
            row, created = SessionStream.objects.select_for_update().get_or_create(
                session=session.key,
                defaults={"stream": stream, "seq": 0, "expires": session.expires_at},
            )
            if not created:
                row.stream = stream
                row.save(update_fields=["stream"])
        mine = SessionSubscription.objects.filter(session=session.key)
        uris = set(mine.values_list("uri", flat=True))
        replay: list[tuple[int, str]] = []
        after = _event_number(last_event_id)
        if after is not None:
            kept = SessionEvent.objects.filter(
                session=session.key,
                seq__gt=after,
                at__gt=_now() - dt.timedelta(seconds=replay_seconds()),
            )
            replay = [(int(n), str(u)) for n, u in kept.order_by("seq").values_list("seq", "uri")]
        return uris, replay[-KEPT_EVENTS:], int(row.seq)

    return retried(once)


def _event_number(text: str | None) -> int | None:
    if text is None:
        return None
    text = text.strip()
    return int(text) if text.isdigit() and len(text) < 19 else None


def _store(key: str, stream: str, seq: int, uri: str) -> None:
    """Keep one event of the session, if ``stream`` is still its live one; prune the old.

    A database busy for a moment (SQLite's lock) is tried again, a few times.
    """

    def once() -> None:
        close_old_connections()
        now = _now()
        with transaction.atomic():
            if not SessionStream.objects.filter(session=key, stream=stream).update(seq=seq):
                return  # a newer stream of the session took over: it numbers the events
            SessionEvent.objects.create(session=key, seq=seq, uri=uri, at=now)
        SessionEvent.objects.filter(session=key, seq__lte=seq - KEPT_EVENTS).delete()
        SessionEvent.objects.filter(at__lt=now - dt.timedelta(seconds=replay_seconds())).delete()

    try:
        retried(once)
    except Exception:
        log.exception("a session's event could not be kept")


def _look(keys: list[str]) -> dict[str, tuple[str | None, set[str]]]:
    """For each session: its live stream's id (None: ended or gone) and its subscribed URIs."""
    close_old_connections()
    found: dict[str, tuple[str | None, set[str]]] = {key: (None, set()) for key in keys}
    for key, stream in SessionStream.objects.filter(session__in=keys).values_list(
        "session", "stream"
    ):
        found[key] = (str(stream), set())
    for key, uri in SessionSubscription.objects.filter(session__in=keys).values_list(
        "session", "uri"
    ):
        found[key][1].add(str(uri))
    return found


# --- the process's sessions ----------------------------------------------------------------


class _Watch:
    """One session this process watches: its live stream here (if any) and its URIs."""

    def __init__(self, session: sessions.Session) -> None:
        self.session = session
        self.stream_id = ""
        self.stream: SessionStreamHeld | None = None
        self.uris: set[str] = set()
        self.seq = 0
        #: When the watch ends with no stream (monotonic seconds), or None while one is open.
        self.until: float | None = None
        #: While a new stream claims the session: the URIs changed meanwhile, numbered and kept
        #: once it is attached (the old stream's id no longer keeps anything); else None.
        self.pending: list[str] | None = None


class Hub:
    """The sessions one process watches: their URIs polled, their changes numbered and kept."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.watches: dict[str, _Watch] = {}
        #: (key, URIs) of each watch, replaced whole: read by the bus's threads.
        self._matching: tuple[tuple[str, frozenset[str]], ...] = ()
        self.db = ThreadPoolExecutor(1, thread_name_prefix="tm-sessions")
        self.poke = asyncio.Event()
        #: Who waits for the next poll to be applied (:meth:`polled`).
        self._waiting: list[asyncio.Future[None]] = []
        self._remove = changes.add_listener(self._hear)
        self._task = loop.create_task(self._polling())

    def close(self) -> None:
        """Stop watching (the loop is going)."""
        self._remove()
        self._task.cancel()
        for key in list(self.watches):
            self._drop(key, "closed")
        self.db.shutdown(wait=False)

    # the bus's side (any thread)

    def _hear(self, change: Change) -> None:
        if change.kind == "lost":
            soon(self.loop, self._lost)
            return
        if change.kind != "updated":
            return
        for key, uris in self._matching:
            told = changes.told(uris, change)
            if told is not None:
                soon(self.loop, functools.partial(self._record, key, told))

    # the loop's side

    def _lost(self) -> None:
        for watch in self.watches.values():
            if watch.stream is not None:
                watch.stream.end("lost")

    def _record(self, key: str, uri: str) -> None:
        watch = self.watches.get(key)
        if watch is not None and watch.pending is not None:
            watch.pending.append(uri)  # a stream is claiming the session: it is told these
            return
        if watch is None or not watch.stream_id:
            return
        watch.seq += 1
        if watch.stream is not None:
            watch.stream.put(event(updated(uri), str(watch.seq)))
        self.loop.run_in_executor(self.db, _store, key, watch.stream_id, watch.seq, uri)

    def _rematch(self) -> None:
        self._matching = tuple(
            (key, frozenset(watch.uris)) for key, watch in self.watches.items() if watch.uris
        )

    def _set_uris(self, watch: _Watch, uris: set[str]) -> None:
        for uri in uris - watch.uris:
            changes.interest(uri)
        for uri in watch.uris - uris:
            changes.release(uri)
        watch.uris = set(uris)
        self._rematch()

    def _drop(self, key: str, reason: str) -> None:
        watch = self.watches.pop(key, None)
        if watch is None:
            return
        if watch.stream is not None:
            watch.stream.end(reason)
        self._set_uris(watch, set())

    def _watch(self, session: sessions.Session) -> _Watch:
        watch = self.watches.get(session.key)
        if watch is None:
            watch = self.watches[session.key] = _Watch(session)
        return watch

    def claiming(self, session: sessions.Session) -> None:
        """A stream of ``session`` is about to claim it: hold what changes until it attaches.

        What changes meanwhile waits for it (:meth:`attach`), neither told to an older stream
        nor lost.
        """
        watch = self._watch(session)
        if watch.pending is None:
            watch.pending = []

    def unclaimed(self, session: sessions.Session) -> None:
        """The claim failed: nothing waits for a stream any more."""
        watch = self.watches.get(session.key)
        if watch is None:
            return
        watch.pending = None
        if watch.stream is None and watch.until is None:  # watched for this claim alone
            self._drop(session.key, "closed")

    def attach(self, stream: SessionStreamHeld, stream_id: str, uris: set[str], seq: int) -> None:
        """``stream`` is the session's live one from now on (an older one here ends).

        What changed since the claim began is numbered after ``seq``, kept and queued for it.
        """
        session = stream.session
        watch = self._watch(session)
        if watch.stream is not None and watch.stream is not stream:
            watch.stream.end("taken")
        watch.stream, watch.stream_id, watch.seq, watch.until = stream, stream_id, seq, None
        pending, watch.pending = watch.pending or [], None
        self._set_uris(watch, uris)
        for uri in pending:
            self._record(session.key, uri)

    def detach(self, stream: SessionStreamHeld) -> None:
        """``stream`` ended: its session is watched on for the replay window."""
        watch = self.watches.get(stream.session.key)
        if watch is None or watch.stream is not stream:
            return
        watch.stream = None
        watch.until = time.monotonic() + replay_seconds()
        self.poke.set()

    async def polled(self) -> None:
        """Return once a poll begun after this call was applied (the interest taken)."""
        done: asyncio.Future[None] = self.loop.create_future()
        self._waiting.append(done)
        self.poke.set()
        await done

    async def _polling(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.poke.wait(), poll_seconds())
            self.poke.clear()
            due, self._waiting = self._waiting, []
            try:
                await self._poll()
            finally:
                for done in due:
                    if not done.done():
                        done.set_result(None)

    async def _poll(self) -> None:
        if not self.watches:
            return
        asked = {key: watch.stream_id for key, watch in self.watches.items()}
        try:
            found = await self.loop.run_in_executor(self.db, _look, list(asked))
        except Exception:
            log.exception("the sessions' subscriptions could not be read")
            return
        self._apply(asked, found)

    def _apply(self, asked: dict[str, str], found: dict[str, tuple[str | None, set[str]]]) -> None:
        now, wall = time.monotonic(), time.time()
        for key, watch in list(self.watches.items()):
            if key not in asked or asked[key] != watch.stream_id or watch.pending is not None:
                continue  # a stream opened or is claiming meanwhile: the next poll reads it
            stream_id, uris = found.get(key, (None, set()))
            if stream_id != watch.stream_id:
                self._drop(key, "taken")  # ended, or a newer stream opened elsewhere
            elif watch.session.expires <= wall:
                self._drop(key, "expired")
            elif watch.stream is None and watch.until is not None and now >= watch.until:
                self._drop(key, "over")
            else:
                self._set_uris(watch, uris)


_hub: Hub | None = None


def hub() -> Hub:
    """This process's hub, in the running loop (made on the first stream)."""
    global _hub
    loop = asyncio.get_running_loop()
    if _hub is None or _hub.loop is not loop:
        if _hub is not None:
            with contextlib.suppress(Exception):
                _hub.close()
        _hub = Hub(loop)
    return _hub


def forget() -> None:
    """Stop watching every session here: its streams end (``closed``), nothing is polled.

    The next stream makes a new hub. A test's sessions end with it, so no poll of an earlier
    test's sessions reads a later test's database.
    """
    global _hub
    current, _hub = _hub, None
    if current is not None:
        soon(current.loop, current.close)


def wake() -> None:
    """A session's subscriptions changed in this process (any thread): read them now."""
    current = _hub
    if current is not None:
        soon(current.loop, current.poke.set)


def caught_up(session: sessions.Session, seconds: float = changes.ARM_SECONDS) -> None:
    """A subscription of ``session`` was just written (any thread but the loop's).

    When this process holds the session's stream, its hub reads the session's subscriptions
    now and the change sources arm (:func:`tmsite.bus.changes.arm`), so that the
    subscribe's answer means "from now on you are told". Elsewhere the stream's process reads
    them within ``TM_SESSION_POLL`` seconds.
    """
    current = _hub
    if current is None or session.key not in current.watches:
        wake()
        return
    try:
        asyncio.run_coroutine_threadsafe(current.polled(), current.loop).result(seconds)
    except (TimeoutError, RuntimeError):  # the loop is slow or gone: the poll reads it later
        return
    changes.arm(seconds)


def watched() -> dict[str, set[str]]:
    """The sessions watched here (by key) and their URIs (health, tests)."""
    current = _hub
    return {} if current is None else {k: set(w.uris) for k, w in current.watches.items()}


# --- the request -----------------------------------------------------------------------------


def offer_of(asked: Mapping[str, str]) -> sessions.StreamOffer:
    """The stream a ``GET /api/mcp`` with these headers (by name) may open."""
    return sessions.StreamOffer(
        accept=asked.get("accept", ""), last_event_id=asked.get("last-event-id")
    )


async def serve(
    receive: Receive, send: Send, offer: sessions.StreamOffer, run: RunEndpoint
) -> None:
    """Answer one ``GET /api/mcp`` (the module's text); its endpoint ``run`` fills ``offer``."""
    started = time.perf_counter()
    status, headers, body = await run()
    session = offer.session
    if session is None or status != 200:
        await whole(send, status, headers, body)
        return
    try:
        slot = listen.SLOTS.take(offer.caller, 0, listen.Limits.current())
    except RpcError as refused:
        text = json.dumps(error_response(None, refused.code, refused.message, refused.data))
        if offer.log is not None:
            offer.log(hooks.micros(started), len(text), str((refused.data or {}).get("reason", "")))
        retry = str((refused.data or {}).get("retryAfter", 1)).encode()
        kept = [(k, v) for k, v in headers if k.lower() not in (b"content-type", b"content-length")]
        kept += [(b"content-type", b"application/json"), (b"retry-after", retry)]
        await whole(send, 429, kept, text.encode())
        return
    await SessionStreamHeld(session, offer, slot, receive, send, headers, started).run()


class SessionStreamHeld(Held):
    """One session's GET stream."""

    KIND = "session"

    def __init__(
        self,
        session: sessions.Session,
        offer: sessions.StreamOffer,
        slot: listen.Slot,
        receive: Receive,
        send: Send,
        headers: list[tuple[bytes, bytes]],
        started: float,
    ) -> None:
        super().__init__(receive, send, headers, started)
        self.session, self.offer, self.slot = session, offer, slot

    async def run(self) -> None:
        """Claim the session, replay what was kept after ``Last-Event-ID``, then go live."""
        self.opened()
        here = hub()
        outcome = "gone"
        watcher: asyncio.Future[None] | None = None
        attached = False
        try:
            await self.loop.run_in_executor(None, sources.start)
            stream_id = secrets.token_hex(8)
            here.claiming(self.session)
            try:
                uris, replay, seq = await self.loop.run_in_executor(
                    here.db, _claim, self.session, stream_id, self.offer.last_event_id
                )
            except Exception:  # the database is out: no stream, the client tries again
                here.unclaimed(self.session)
                log.exception("a session's stream could not be claimed")
                outcome = "internal"
                text = json.dumps(error_response(None, -32603, "Internal error.")).encode()
                headers = [(b"content-type", b"application/json"), (b"retry-after", b"1")]
                await whole(send=self.send, status=503, headers=headers, body=text)
                return
            here.attach(self, stream_id, uris, seq)
            attached = True
            watcher = asyncio.ensure_future(self._gone())
            first = [priming(seq, _event_number(self.offer.last_event_id))]
            first += [event(updated(uri), str(number)) for number, uri in replay]
            outcome = await self._held(first, b"")
        except (OSError, RuntimeError, asyncio.CancelledError):
            outcome = "gone"  # the connection went while we wrote
        finally:
            if attached:
                here.detach(self)
            self.closed()
            if watcher is not None:
                watcher.cancel()
            self.slot.free()
            if self.offer.log is not None:
                self.offer.log(hooks.micros(self.started), self.sent, outcome)
