"""Subscriptions over stdio (``manage.py mcp_stdio``): both eras, told as lines on stdout.

What :func:`tmsite.mcp.stdio.serve` is given to hold (:class:`StdioSubscriptions`):

* **2026-07-28 ``subscriptions/listen``** runs as every request does (the envelope, the method
  table, the request log), a stream offered in its context (``CallContext.stream``), so its
  checks are HTTP's (:func:`tmsite.streams.listen.plan`: the filter, each URI refused on
  its own in the acknowledgement's ``_meta``, the caps — the process is the caller). The request
  stays open: the acknowledgement is written first, then each notification the filter asked
  for, tagged with the subscription id (the listen's request id). Several listens may be open
  at once, each with its own id; a second listen with the id of one open is refused
  (``-32600``). The client ends one with ``notifications/cancelled {requestId}`` naming it —
  nothing more is written for it, no response either (a cancelled request is not answered).
  The server ends one gracefully — the listen's own response ``{"resultType":"complete"}`` —
  when nothing was told for ``TM_LISTEN_IDLE`` seconds (``idle``), when it falls
  ``Limits.behind`` (1,024) lines behind what stdout takes (``behind``), or when the bus cannot
  promise delivery (``lost``). There are no keep-alives: a pipe needs none. The request log's
  row of a listen is written when it ends, as over HTTP: its whole duration, the bytes written
  for it (the acknowledgement, what it was told, its end) and how it ended.
* **2025-11-25 ``resources/subscribe`` / ``resources/unsubscribe``**: the process is the session
  (:class:`~tmsite.streams.subscribe.Session`); ``notifications/resources/updated {uri}``
  lines for the URIs subscribed to.
* stdin closing ends every listen (nothing more is written) and the session.

Lines are written by one thread per listen, and one for the session, so a change source never
waits on stdout; each line is written whole under the writer's lock, never inside an answer.
The change sources are installed and the fs watcher started on the first subscription, as the
HTTP stream does.

Spec: SUB1, SUB2.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from tmsite.bus import changes
from tmsite.bus.changes import Change
from tmsite.mcp.envelope import Answer, Message, dumps, error_response
from tmsite.mcp.protocol import INVALID_REQUEST, CallContext, StreamOffer
from tmsite.mcp.stdio import Writer
from tmsite.oplog import failures, hooks
from tmsite.streams import listen, subscribe
from tmsite.subscriptions import sources

log = logging.getLogger("tmsite.subscriptions")

#: Ends after which nothing more is written for a listen.
SILENT = frozenset({"cancelled", "gone"})


class Outbox(threading.Thread):
    """Lines waiting for stdout, written in order by this thread.

    ``behind``: how many may wait; one more ends the outbox (``behind``) when ``end_when_full``,
    else it is dropped. ``idle``: seconds without a line after which it ends (``idle``), or
    None. ``finish(reason)`` runs on the thread once it has ended.
    """

    def __init__(
        self,
        writer: Writer,
        name: str,
        *,
        behind: int,
        idle: float | None,
        end_when_full: bool,
        finish: Callable[[str], None],
    ) -> None:
        super().__init__(name=name, daemon=True)
        self.writer, self.behind, self.idle = writer, behind, idle
        self.end_when_full, self.finish = end_when_full, finish
        self._lines: collections.deque[str] = collections.deque()
        self._cond = threading.Condition()
        self.reason: str | None = None
        self.dropped = 0
        #: Bytes written (each line and its newline).
        self.sent = 0

    def put(self, line: str) -> None:
        """Queue ``line`` (any thread; never waits on stdout)."""
        with self._cond:
            if self.reason is not None:
                return
            if len(self._lines) >= self.behind:
                if self.end_when_full:
                    self._end("behind")
                else:
                    self.dropped += 1
                return
            self._lines.append(line)
            self._cond.notify()

    def end(self, reason: str) -> None:
        """End the outbox (the first reason wins); a graceful end writes what was queued."""
        with self._cond:
            self._end(reason)

    def _end(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
            self._cond.notify()

    def _next(self, last: float) -> str | None:
        with self._cond:
            while not self._lines and self.reason is None:
                if self.idle is None:
                    self._cond.wait()
                    continue
                left = self.idle - (time.monotonic() - last)
                if left <= 0:
                    self.reason = "idle"
                    break
                self._cond.wait(left)
            if self._lines and self.reason not in SILENT:
                return self._lines.popleft()
            return None

    def run(self) -> None:
        """Write the lines as they come, until the outbox ends; then ``finish``."""
        last = time.monotonic()
        try:
            while (line := self._next(last)) is not None:
                if not self.writer.line(line):
                    self.end("gone")
                    break
                self.sent += len(line.encode()) + 1
                last = time.monotonic()
        finally:
            try:
                self.finish(self.reason or "gone")
            except Exception as exc:
                failures.report("mcp-stdio subscriptions", exc)


def _key(rid: Any) -> str:
    return json.dumps(rid)


class _Listen:
    """One open listen: its plan, what it holds, and the outbox its lines go through."""

    def __init__(self, owner: StdioSubscriptions, plan: listen.Plan, started: float) -> None:
        self.owner, self.plan, self.started = owner, plan, started
        self.sent = 0  # the acknowledgement's and the end's bytes (the outbox counts its own)
        limits = listen.Limits.current()
        self.outbox = Outbox(
            owner.writer,
            f"tm-stdio-listen-{_key(plan.rid)[:32]}",
            behind=limits.behind,
            idle=limits.idle_seconds,
            end_when_full=True,
            finish=self._finish,
        )
        self._remove: Callable[[], None] | None = None

    def open(self) -> None:
        """Hear the bus, hold the URIs, write the acknowledgement, then start telling."""
        self._remove = changes.add_listener(self._hear)  # heard now, written after the ack
        sources.listened(self.plan.uris, self.plan.lists)
        ack = dumps(self.plan.ack())
        if self.owner.writer.line(ack):
            self.sent += len(ack.encode()) + 1
        else:
            self.outbox.end("gone")
        self.outbox.start()

    def _hear(self, change: Change) -> None:
        if change.kind == "lost":
            self.outbox.end("lost")
            return
        message = self.plan.notification_of(change)
        if message is not None:
            self.outbox.put(dumps(message))

    def _finish(self, reason: str) -> None:
        if self._remove is not None:
            self._remove()
        self.plan.let_go()
        complete = dumps(self.plan.complete()) if reason not in SILENT else None
        if self.plan.log is not None:  # the row of the whole listen, as over HTTP; written
            # before the listen is let go, so stdin closing after its end still waits for it
            sent = self.sent + self.outbox.sent + (len(complete.encode()) + 1 if complete else 0)
            self.plan.log(hooks.micros(self.started), sent, reason)
        self.owner.ended(self)
        if complete is not None:
            self.owner.writer.line(complete)


class StdioSubscriptions:
    """What holds the subscriptions of one ``mcp_stdio`` process (see the module's text)."""

    methods = frozenset({listen.METHOD, *subscribe.METHODS})

    def __init__(self, writer: Writer) -> None:
        self.writer = writer
        self._lock = threading.Lock()
        self._listens: dict[str, _Listen] = {}
        limits = listen.Limits.current()
        self._outbox = Outbox(
            writer,
            "tm-stdio-session",
            behind=limits.behind,
            idle=None,
            end_when_full=False,
            finish=lambda reason: None,
        )
        self._outbox.start()
        self.session = subscribe.Session(lambda message: self._outbox.put(dumps(message)))
        self._watched = False

    def request(
        self, message: Message, ctx: CallContext, run: Callable[[CallContext], Answer]
    ) -> str | None:
        """Answer a listen (held open) or a 2025-11-25 subscription request."""
        self._watched = True  # either may start the change sources
        if message.method != listen.METHOD:
            return run(dataclasses.replace(ctx, subscriber=self.session)).text
        key = _key(message.id)
        with self._lock:
            taken = key in self._listens
        if taken:
            return dumps(
                error_response(
                    message.id,
                    INVALID_REQUEST,
                    f"A listen with the id {key} is open; each listen needs its own id.",
                )
            )
        started = time.perf_counter()
        answer = run(dataclasses.replace(ctx, stream=StreamOffer(message.id)))
        if not isinstance(answer.stream, listen.Plan):
            return answer.text
        held = _Listen(self, answer.stream, started)
        with self._lock:
            self._listens[key] = held
        held.open()
        return None

    def notification(self, message: Message) -> None:
        """``notifications/cancelled`` naming an open listen ends it, silently."""
        if message.method != "notifications/cancelled":
            return
        params = message.params if isinstance(message.params, dict) else {}
        if "requestId" not in params:
            return
        with self._lock:
            held = self._listens.get(_key(params["requestId"]))
        if held is not None:
            held.outbox.end("cancelled")

    def ended(self, held: _Listen) -> None:
        """A listen's outbox has ended (its thread)."""
        with self._lock:
            key = _key(held.plan.rid)
            if self._listens.get(key) is held:
                del self._listens[key]

    def close(self) -> None:
        """End every listen without a word, and the session with them (stdin ended)."""
        with self._lock:
            held = list(self._listens.values())
        for one in held:
            one.outbox.end("gone")
        for one in held:
            one.outbox.join(timeout=2)
        self._outbox.end("gone")
        self.session.close()
        if self._watched:
            sources.uninstall()  # before the interpreter ends: a native watch left running
            # at its exit can bring the process down (a segfault instead of exit status 0)
