"""The change bus across processes and machines: Redis pub/sub (the shared cache's Redis).

:mod:`tmsite.bus.changes` attaches it when ``TM_REDIS_URL`` is set (``TM_SUB_BUS``
``redis``, the default then). Every process of every machine serving one box publishes on one
channel, ``<TM_CACHE_PREFIX>:tmsite:changes`` (boxes sharing a Redis do not hear each other),
and hears what the others publish.

**Publishing** never waits on Redis: a change is put on a queue that a sender thread publishes
from, in order, each ``PUBLISH`` bounded by ``TM_REDIS_TIMEOUT``. The sender keeps its own
account of Redis, apart from the shared cache's circuit (:mod:`tmsite.core.sharedcache`): a
cache call that timed out under load says nothing of this connection, so it never stops a
publish. A ``PUBLISH`` that fails is counted (``publishFailed``) and tried again, the change
kept, after a wait that doubles from ``RETRY_MIN`` to ``RETRY_MAX`` seconds, so a change made
during a short outage is sent when Redis answers again. What is held is bounded twice: at most
``HELD_MAX`` changes (past it a new change is dropped), each for ``HOLD_SECONDS`` at most (a
longer outage has ended every other machine's streams anyway); each change given up is counted
(``dropped``) and logged once a minute at most. A ``PUBLISH`` that timed out may still reach
Redis (a frozen one reads it when it thaws), so every message carries a number of its
process's and a receiver skips one it has just heard from that process: a change sent again is
not told twice. Health's ``bus`` says ``publishing`` (``ok``, or ``failing`` with the error and
for how long) and ``held``.

**Receiving**: one thread a process, started when its first listener is added. It subscribes,
then sends a ``PING`` on its connection every ``TM_SUB_BUS_HEARTBEAT`` seconds (1). Redis
closing the connection, or answering nothing for ``MISSED`` heartbeats (a frozen Redis: the
kernel still accepts what is sent), makes the bus *down*: every listener is told ``lost`` (an
open stream ends gracefully, its client listens again), once an outage, logged once. It then
connects again after a wait that doubles from ``BACKOFF_MIN`` to ``BACKOFF_MAX`` seconds;
subscribed again, the bus is *up* and the listeners added meanwhile are told ``lost`` (they
heard this process's changes only).

On the wire a change is a small JSON object: the publishing process's id (``o``, its own
messages a process skips), its number in that process (``n``), the kind, the URI or the list,
and whether it is exact.

Spec: SUB3.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import queue
import random
import threading
import time
from collections import OrderedDict, deque
from typing import Any

from tmsite.bus import changes
from tmsite.bus.changes import LIST_KINDS, Bus, Change, canonical
from tmsite.core import sharedcache

log = logging.getLogger("tmsite.subscriptions")

#: Changes held (waiting to be sent, or being tried again) at most; past it one is dropped.
HELD_MAX = 10_000
#: Seconds a change is held at most while Redis does not take it; then it is dropped.
HOLD_SECONDS = 30.0
#: Seconds between two tries of a ``PUBLISH`` that failed: the first wait, and the most.
RETRY_MIN = 0.05
RETRY_MAX = 1.0
#: Message numbers remembered per publishing process, and processes remembered (repeats).
SEEN_PER_ORIGIN = 1024
SEEN_ORIGINS = 256
#: Heartbeats without an answer after which Redis counts as gone.
MISSED = 3
#: Seconds between two connection attempts: the first wait, and the most.
BACKOFF_MIN = 0.25
BACKOFF_MAX = 5.0
#: Seconds between two log lines about changes that could not be sent.
LOG_EVERY = 60.0
#: A message on the channel larger than this is not a change (ignored).
MESSAGE_MAX = 16_384
_STOP = object()


def channel_name(prefix: str) -> str:
    """The channel of a box whose cache keys start with ``prefix``."""
    return f"{prefix}:tmsite:changes" if prefix else "tmsite:changes"


def encode(change: Change, origin: str, number: int = 0) -> bytes:
    """``change`` as sent on the channel (``number``: its place in what ``origin`` sent)."""
    item: dict[str, Any] = {"o": origin, "k": change.kind}
    if number:
        item["n"] = number
    if change.kind == "updated":
        item["u"] = change.uri
        if change.exact:
            item["x"] = True
    else:
        item["l"] = change.list_kind
    return json.dumps(item, separators=(",", ":")).encode()


def decode(data: bytes) -> tuple[Change, str, int] | None:
    """The change, origin and number (0: none) in ``data``, or None when it is not one."""
    if len(data) > MESSAGE_MAX:
        return None
    try:
        item = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(item, dict) or not isinstance(item.get("o"), str):
        return None
    origin, kind = item["o"], item.get("k")
    change: Change | None = None
    if kind == "updated" and isinstance(item.get("u"), str):
        try:
            change = Change("updated", uri=canonical(item["u"]), exact=item.get("x") is True)
        except Exception:
            change = None
    elif kind == "list_changed" and item.get("l") in LIST_KINDS:
        change = Change("list_changed", list_kind=item["l"])
    if change is None:
        return None
    number = item.get("n")
    if not isinstance(number, int) or isinstance(number, bool) or number < 0:
        number = 0
    return change, origin, number


class Seen:
    """The message numbers just heard from each process, to skip a message sent again."""

    def __init__(self) -> None:
        self._origins: OrderedDict[str, tuple[deque[int], set[int]]] = OrderedDict()

    def repeat(self, origin: str, number: int) -> bool:
        """Whether ``number`` from ``origin`` was heard already (else it is remembered now)."""
        if not number:
            return False
        found = self._origins.get(origin)
        if found is None:
            found = self._origins[origin] = (deque(), set())
            while len(self._origins) > SEEN_ORIGINS:
                self._origins.popitem(last=False)
        else:
            self._origins.move_to_end(origin)
        order, numbers = found
        if number in numbers:
            return True
        order.append(number)
        numbers.add(number)
        while len(order) > SEEN_PER_ORIGIN:
            numbers.discard(order.popleft())
        return False


class RedisBackend:
    """Redis pub/sub for one :class:`~tmsite.bus.changes.Bus` (see the module).

    Args:
        bus: The bus whose listeners hear what is received.
        url: ``redis://host:port/db``.
        channel: The channel (:func:`channel_name`).
        timeout: Seconds a connect or a ``PUBLISH`` may take (``TM_REDIS_TIMEOUT``).
        heartbeat: Seconds between two pings of the receiving connection.
        held_max: Changes held at most (``HELD_MAX``).
        hold: Seconds a change is held at most (``HOLD_SECONDS``).
    """

    name = "redis"

    def __init__(
        self,
        bus: Bus,
        url: str,
        channel: str,
        *,
        timeout: float = 0.05,
        heartbeat: float = 1.0,
        held_max: int = HELD_MAX,
        hold: float = HOLD_SECONDS,
    ) -> None:
        self.bus, self.url, self.channel = bus, url, channel
        self.timeout = max(0.001, float(timeout))
        self.heartbeat = max(0.05, float(heartbeat))
        self.held_max = max(1, int(held_max))
        self.hold = max(0.0, float(hold))
        self._lock = threading.Lock()
        self._queue: queue.Queue[Any] = queue.Queue()
        self._number = 0
        self._seen = Seen()
        self._sender: threading.Thread | None = None
        self._receiver: threading.Thread | None = None
        self._stopping = threading.Event()
        self._went_up = False
        #: ``idle`` (no listener yet), ``connecting``, ``up`` or ``down``.
        self.state = "idle"
        self._down_since = 0.0
        self.last_error = ""
        self.sent = 0
        self.received = 0
        #: Messages skipped as sent again (a ``PUBLISH`` that timed out, then reached Redis).
        self.repeats = 0
        self.publish_failed = 0
        self.dropped = 0
        #: Since when a ``PUBLISH`` fails (0: the last one was sent), and its error.
        self._failing_since = 0.0
        self.publish_error = ""
        self.outages = 0
        self._unsent_logged = 0.0
        self._unsent_since_log = 0

    # --- publishing ------------------------------------------------------------------------

    def send(self, change: Change, origin: str) -> None:
        """Queue ``change`` for the sender (never blocks; past ``held_max`` it is dropped)."""
        if change.kind == "lost" or self._stopping.is_set():
            return
        self._start_sender()
        with self._lock:
            full = self._queue.unfinished_tasks >= self.held_max
            if full:
                self.dropped += 1
            else:
                self._number += 1
                self._queue.put_nowait((time.monotonic(), encode(change, origin, self._number)))
        if full:
            self._unsent(f"{self.held_max} changes are held already")

    def _start_sender(self) -> None:
        if self._sender is not None:
            return
        with self._lock:
            if self._sender is None:
                self._sender = threading.Thread(
                    target=self._send_loop, name="tm-bus-send", daemon=True
                )
                self._sender.start()

    def _client(self, connect: float, read: float) -> Any:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        return redis.Redis.from_url(
            self.url,
            socket_connect_timeout=connect,
            socket_timeout=read,
            retry=Retry(NoBackoff(), 0),  # a reconnection is ours to make, and to tell
            health_check_interval=0,
        )

    def _send_loop(self) -> None:
        client = self._client(self.timeout, self.timeout)
        while True:
            item = self._queue.get()
            try:
                if item is _STOP:
                    return
                self._publish(client, *item)
            finally:
                self._queue.task_done()

    def _publish(self, client: Any, queued: float, data: bytes) -> None:
        """Send ``data``, trying again while Redis does not take it, ``hold`` seconds at most."""
        wait = RETRY_MIN
        while True:
            if self._failing_since and (
                self._stopping.is_set() or time.monotonic() - queued > self.hold
            ):
                with self._lock:
                    self.dropped += 1
                    if self._queue.unfinished_tasks <= 1:  # nothing else held: not failing now
                        self._failing_since = 0.0
                self._unsent(f"Redis did not take them for {self.hold:g} s: {self.publish_error}")
                return
            try:
                client.publish(self.channel, data)
            except Exception as exc:
                if not sharedcache.is_outage(exc):
                    log.exception("a change could not be published")
                    with self._lock:
                        self.dropped += 1
                    return
                self._failed(f"{type(exc).__name__}: {str(exc)[:200]}")
                self._stopping.wait(wait * random.uniform(0.8, 1.2))
                wait = min(RETRY_MAX, wait * 2)
                continue
            with self._lock:
                self.sent += 1
                away = time.monotonic() - self._failing_since if self._failing_since else 0.0
                self._failing_since = 0.0
            if away:
                log.warning("the change bus publishes to Redis again after %.1f s", away)
            return

    def _failed(self, why: str) -> None:
        with self._lock:
            self.publish_failed += 1
            self.publish_error = why
            if not self._failing_since:
                self._failing_since = time.monotonic()

    def _unsent(self, why: str) -> None:
        """Count a change not sent; say so in the log once every ``LOG_EVERY`` seconds."""
        now = time.monotonic()
        with self._lock:
            self._unsent_since_log += 1
            if self._unsent_logged and now - self._unsent_logged < LOG_EVERY:
                return
            count, self._unsent_since_log = self._unsent_since_log, 0
            self._unsent_logged = now
        log.warning(
            "%d change(s) could not be sent to the other machines (%s): their listeners were "
            "not told; this is logged at most once every %g s",
            count,
            why,
            LOG_EVERY,
        )

    def flush(self, timeout: float = 1.0) -> bool:
        """Wait until what was queued is sent or given up on; whether it was, in ``timeout``."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)
        return True

    # --- receiving -------------------------------------------------------------------------

    def wanted(self) -> None:
        """Start the receiving thread, once."""
        if self._receiver is not None or self._stopping.is_set():
            return
        with self._lock:
            if self._receiver is not None:
                return
            self.state = "connecting"
            self._receiver = threading.Thread(
                target=self._receive_loop, name="tm-bus-receive", daemon=True
            )
            self._receiver.start()

    def promising(self) -> bool:
        """Whether changes from elsewhere reach this process (or may: it is connecting)."""
        return self.state != "down"

    def _receive_loop(self) -> None:
        wait = BACKOFF_MIN
        while not self._stopping.is_set():
            try:
                self._listen()
                error = ""
            except Exception as exc:
                error = f"{type(exc).__name__}: {str(exc)[:200]}"
            if self._stopping.is_set():
                return
            if self._went_up:
                wait = BACKOFF_MIN  # it was up: the next attempt is soon
            self._down(error or "the connection ended")
            self._stopping.wait(wait * random.uniform(0.8, 1.2))
            wait = min(BACKOFF_MAX, wait * 2)

    def _listen(self) -> None:
        """Subscribe and dispatch what comes until the connection fails or stops answering."""
        self._went_up = False
        limit = self.heartbeat * MISSED
        # not on a request's path: a connect may take as long as a heartbeat
        pubsub = self._client(max(self.timeout, self.heartbeat), limit).pubsub(
            ignore_subscribe_messages=False
        )
        try:
            heard = pinged = time.monotonic()
            pubsub.subscribe(self.channel)
            while not self._stopping.is_set():
                message = pubsub.get_message(timeout=min(self.heartbeat, 0.5))
                now = time.monotonic()
                if message is not None:
                    heard = now
                    self._hear(message)
                if now - pinged >= self.heartbeat:
                    pubsub.ping()
                    pinged = now
                if now - heard > limit:
                    raise TimeoutError(f"Redis answered nothing for {now - heard:.1f} s")
        finally:
            try:
                pubsub.close()
            except Exception:
                log.debug("closing the bus's connection failed", exc_info=True)

    def _hear(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "subscribe":
            self._up()
        elif kind == "message":
            data = message.get("data")
            found = decode(data) if isinstance(data, bytes) else None
            if found is None:
                return
            change, origin, number = found
            with self._lock:
                if self._seen.repeat(origin, number):
                    self.repeats += 1
                    return
                self.received += 1
            self.bus.receive(change, origin)

    def _up(self) -> None:
        self._went_up = True
        with self._lock:
            was, self.state = self.state, "up"
            away = time.monotonic() - self._down_since
        if was == "down":
            log.warning("the change bus reaches Redis again after %.1f s away", away)
            self.bus.promised()

    def _down(self, error: str) -> None:
        with self._lock:
            was, self.state = self.state, "down"
            self.last_error = error
            if was != "down":
                self.outages += 1
                self._down_since = time.monotonic()
        if was != "down":
            log.warning(
                "the change bus lost Redis (%s): open listen streams are ended so their clients "
                "listen again, and until it is back changes reach this process's streams only",
                error,
            )
            self.bus.lose()

    # --- the rest --------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """State, counts and, while down, for how long and why."""
        with self._lock:
            out: dict[str, Any] = {
                "state": self.state,
                "channel": self.channel,
                "sent": self.sent,
                "received": self.received,
                "publishing": "failing" if self._failing_since else "ok",
                "held": self._queue.unfinished_tasks,
                "publishFailed": self.publish_failed,
                "dropped": self.dropped,
                "repeats": self.repeats,
                "outages": self.outages,
            }
            if self._failing_since:
                out["publishFailingSeconds"] = round(time.monotonic() - self._failing_since, 3)
                out["publishError"] = self.publish_error
            if self.state == "down":
                out["downSeconds"] = round(time.monotonic() - self._down_since, 3)
                out["lastError"] = self.last_error
        return out

    def close(self) -> None:
        """Stop both threads (what is held is sent first, for a second at most)."""
        self.flush(1.0)
        self._stopping.set()
        if self._sender is not None:
            with contextlib.suppress(queue.Full):
                self._queue.put_nowait(_STOP)
            self._sender.join(timeout=2)
        if self._receiver is not None:
            self._receiver.join(timeout=self.heartbeat * MISSED + 2)


def from_settings(bus: Bus) -> RedisBackend:
    """The backend the settings configure.

    That is ``TM_REDIS_URL``, ``TM_CACHE_PREFIX``, ``TM_REDIS_TIMEOUT`` and
    ``TM_SUB_BUS_HEARTBEAT``; not the shared cache's circuit (the module says why).
    """
    from django.conf import settings

    return RedisBackend(
        bus,
        str(settings.TM_REDIS_URL),
        channel_name(str(settings.TM_CACHE_PREFIX)),
        timeout=float(settings.TM_REDIS_TIMEOUT),
        heartbeat=float(settings.TM_SUB_BUS_HEARTBEAT),
    )


def install() -> RedisBackend | None:
    """Attach the backend ``TM_SUB_BUS`` chooses to this process's bus (at start-up, once).

    ``redis`` (the default when ``TM_REDIS_URL`` is set): this module's, with coalescing over
    ``TM_SUB_BUS_COALESCE`` seconds; ``local``: none. Its threads start only when used.
    """
    from django.conf import settings

    bus = changes.bus()
    if settings.TM_SUB_BUS != "redis" or not settings.TM_REDIS_URL:
        return None
    if isinstance(bus.backend, RedisBackend):
        return bus.backend
    backend = from_settings(bus)
    bus.coalesce = max(0.0, float(settings.TM_SUB_BUS_COALESCE))
    bus.attach(backend)
    atexit.register(backend.flush, 1.0)  # what a command published just before it exits
    return backend
