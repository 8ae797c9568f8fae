"""The ``subscriptions/listen`` stream, held in the event loop of ``python -m tmsite.serve``.

The ASGI application hands a POST whose body is a ``subscriptions/listen`` request to
:func:`serve`. The request runs the endpoint on a pool thread like any other (its checks, its
rate-limit bucket, :mod:`tmsite.streams.listen`); an answer that is not a stream (a
refusal) is sent as it is. One whose stream result is the listen's plan is an event stream held
by a coroutine once the thread is done — no thread per stream:

* headers: ``200``, ``Content-Type: text/event-stream``, ``Cache-Control: no-store``,
  ``X-Accel-Buffering: no`` (nginx passes each event on at once), and the endpoint's own
  (``RateLimit``, CORS);
* the first event is the acknowledgement; each later one a notification the filter asked for,
  tagged with the subscription id (:mod:`tmsite.bus.changes` says which change reaches
  which URI); an SSE comment (``: keep-alive``) every ``TM_LISTEN_KEEPALIVE`` seconds (15);
* the server ends a stream gracefully — the listen's own response ``{"resultType":"complete"}``,
  then the end of the body — when nothing but keep-alives was sent for ``TM_LISTEN_IDLE``
  seconds (``idle``), when it falls ``Limits.behind`` (1,024) events behind its client
  (``behind``), when the bus cannot promise delivery (``lost``) or the worker stops
  (``closed``); a client ends it by closing the connection (``gone``).

Whatever ends it, the stream's slot is freed, its URIs' interest released and the request log's
row written with the stream's whole duration, the bytes sent and how it ended.

Spec: SUB1.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from tmsite.bus import changes
from tmsite.bus.changes import Change
from tmsite.mcp.protocol import StreamResult
from tmsite.oplog import hooks, metrics
from tmsite.streams import listen
from tmsite.subscriptions import sources

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
#: Runs the endpoint on a pool thread in a context; returns (status, headers, body).
RunEndpoint = Callable[[], Awaitable[tuple[int, list[tuple[bytes, bytes]], bytes]]]
#: Runs the endpoint on a pool thread; returns (status, headers, body) and the answer's stream
#: result (None: the answer is whole).
RunHeld = Callable[[], Awaitable[tuple[int, list[tuple[bytes, bytes]], bytes, StreamResult | None]]]

KEEPALIVE = b": keep-alive\n\n"
#: The streams open in this process, each with what ends it gracefully.
_open: dict[int, tuple[asyncio.AbstractEventLoop, Callable[[str], None]]] = {}


def is_listen(value: Any) -> bool:
    """Whether a parsed body is one ``subscriptions/listen`` request (with an id)."""
    return isinstance(value, dict) and value.get("method") == listen.METHOD and "id" in value


def open_streams() -> int:
    """How many streams this process holds open."""
    return len(_open)


def loops() -> set[asyncio.AbstractEventLoop]:
    """The event loops that hold open streams now."""
    return {loop for loop, _ in _open.values()}


def close_all(reason: str = "closed") -> None:
    """End every open stream gracefully (the worker stops); call in the event loop."""
    for _, end in list(_open.values()):
        end(reason)


def soon(loop: asyncio.AbstractEventLoop, call: Callable[[], object]) -> None:
    """Run ``call`` in ``loop`` (from any thread), unless the loop is closed: it is over."""
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(call)


def event(message: dict[str, Any], event_id: str | None = None) -> bytes:
    """One SSE event carrying ``message``, with an ``id:`` line when it has one."""
    data = json.dumps(message, separators=(",", ":")).encode()
    head = b"id: " + event_id.encode() + b"\n" if event_id is not None else b""
    return head + b"event: message\ndata: " + data + b"\n\n"


async def serve(receive: Receive, send: Send, run: RunHeld) -> None:
    """Answer one ``subscriptions/listen`` POST (see the module's text)."""
    started = time.perf_counter()
    status, headers, body, held = await run()
    if not isinstance(held, listen.Plan):
        await whole(send, status, headers, body)
        return
    await _Stream(held, receive, send, headers, started).run()


async def whole(send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    """Send one whole answer that is not a stream (a refusal), with its length."""
    if not any(k.lower() == b"content-length" for k, _ in headers):
        headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


class Held:
    """An event stream held in the event loop: its headers, queue, keep-alives and ends.

    What the listen stream and the 2025-11-25 session's GET stream
    (:mod:`tmsite.streams.sessionstream`) share: events are queued as bytes (from the
    loop, :meth:`put`) and written by :meth:`pump` until the stream ends (:meth:`end`, from the
    loop), with a keep-alive comment when nothing was sent for a while and the idle end.
    """

    #: What ``tmsite_<kind>_streams`` counts it (``tmsite.oplog.metrics``).
    KIND = "listen"

    def __init__(
        self,
        receive: Receive,
        send: Send,
        headers: list[tuple[bytes, bytes]],
        started: float,
    ) -> None:
        self.receive, self.send, self.started = receive, send, started
        self.limits = listen.Limits.current()
        skip = {b"content-type", b"content-length"}
        self.headers = [(k, v) for k, v in headers if k.lower() not in skip] + [
            (b"content-type", b"text/event-stream"),
            (b"x-accel-buffering", b"no"),
        ]
        if not any(k.lower() == b"cache-control" for k, _ in self.headers):
            self.headers.append((b"cache-control", b"no-store"))
        self.queue: asyncio.Queue[bytes] = asyncio.Queue()
        self.ended: asyncio.Future[str] | None = None
        self.sent = 0

    def opened(self) -> None:
        """The stream starts in the running loop: it is counted, and ended when the worker stops."""
        self.loop = asyncio.get_running_loop()
        self.ended = self.loop.create_future()
        _open[id(self)] = (self.loop, self.end)
        metrics.stream_opened(self.KIND)

    def closed(self) -> None:
        """The stream is over: no longer counted."""
        if _open.pop(id(self), None) is not None:
            metrics.stream_closed(self.KIND)

    def put(self, data: bytes) -> None:
        """Queue one event (in the loop); past ``Limits.behind`` queued, the stream ends."""
        if self.ended is not None and self.ended.done():
            return
        if self.queue.qsize() >= self.limits.behind:
            self.end("behind")
            return
        self.queue.put_nowait(data)

    def end(self, reason: str) -> None:
        """End the stream (in the loop): ``reason`` is how the request log tells it."""
        if self.ended is not None and not self.ended.done():
            self.ended.set_result(reason)

    async def _write(self, data: bytes) -> None:
        await self.send({"type": "http.response.body", "body": data, "more_body": True})
        self.sent += len(data)

    async def _gone(self) -> None:
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                self.end("gone")
                return

    async def _drained(self, reason: str) -> str:
        """A graceful end sends what was queued before it; a client gone is sent nothing."""
        while reason != "gone" and not self.queue.empty():
            await self._write(self.queue.get_nowait())
        return reason

    async def _held(self, first: list[bytes], last: bytes) -> str:
        """The head, ``first``, what comes, and ``last`` at a graceful end; why it ended."""
        await self.send({"type": "http.response.start", "status": 200, "headers": self.headers})
        for data in first:
            await self._write(data)
        outcome = await self._pump()
        if outcome != "gone":
            await self.send({"type": "http.response.body", "body": last, "more_body": False})
        return outcome

    async def _pump(self) -> str:
        """Send what comes until the stream ends; returns why it ended."""
        assert self.ended is not None
        last_event = time.monotonic()
        while True:
            if self.ended.done():
                return await self._drained(self.ended.result())
            idle_left = self.limits.idle_seconds - (time.monotonic() - last_event)
            if idle_left <= 0:
                return "idle"
            getting: asyncio.Future[Any] = asyncio.ensure_future(self.queue.get())
            waits: set[asyncio.Future[Any]] = {getting, self.ended}
            done, _ = await asyncio.wait(
                waits,
                timeout=min(self.limits.keepalive_seconds, idle_left),
                return_when=asyncio.FIRST_COMPLETED,
            )
            if getting in done:
                await self._write(getting.result())
                last_event = time.monotonic()
                continue
            getting.cancel()
            if self.ended.done():
                return await self._drained(self.ended.result())
            if time.monotonic() - last_event >= self.limits.idle_seconds:
                return "idle"
            await self._write(KEEPALIVE)  # a keep-alive is not an event: the idle clock runs on


class _Stream(Held):
    def __init__(
        self,
        plan: listen.Plan,
        receive: Receive,
        send: Send,
        headers: list[tuple[bytes, bytes]],
        started: float,
    ) -> None:
        super().__init__(receive, send, headers, started)
        self.plan = plan

    def _hear(self, change: Change) -> None:
        """A change on the bus (any thread): what this stream is told of it, if anything."""
        if change.kind == "lost":
            soon(self.loop, lambda: self.end("lost"))
            return
        message = self.plan.notification_of(change)
        if message is not None:
            data = event(message)
            soon(self.loop, lambda: self.put(data))

    async def run(self) -> None:
        self.opened()
        remove = changes.add_listener(self._hear)
        watcher = asyncio.ensure_future(self._gone())
        outcome = "gone"
        try:
            await self.loop.run_in_executor(None, sources.listened, self.plan.uris, self.plan.lists)
            outcome = await self._held([event(self.plan.ack())], event(self.plan.complete()))
        except (OSError, RuntimeError, asyncio.CancelledError):
            outcome = "gone"  # the connection went while we wrote
        finally:
            remove()
            self.closed()
            watcher.cancel()
            self.plan.let_go()
            if self.plan.log is not None:
                self.plan.log(hooks.micros(self.started), self.sent, outcome)
