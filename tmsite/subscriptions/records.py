"""Changes of what the database holds, seen for the URIs someone listens to, on every machine.

A :class:`StampWatcher` serves one mount whose things live in database rows (entity records,
trails, MCP server records). It is told which of that mount's URIs are listened to (its
:meth:`~StampWatcher.interest` is the bus's interest watcher) and, while any are, reads a
*stamp* every ``interval`` seconds: one cheap query whose answer moves whenever the rows do
(a reload's load token, the newest correction, a record's last-asked time…). The stamp lives in
the shared database, so a reload run by a command on another machine, or an admin correction
saved by another worker, moves it for every worker. In the process that made the change, a
model signal calls :meth:`~StampWatcher.wake`, so the URIs are read again at once, whatever
the stamp says.

When the stamp moved, each listened URI is read again through the namespace (``read``) and
its fingerprint — the media type, the body and the links, or the refusal's reason — compared
with the one taken before; a URI whose fingerprint differs is published. So only what really
changed fires, a reload that changes nothing fires nothing, and a thing removed fires (it now
reads ``not-found``). The first fingerprint of a URI is taken when it is first polled.

Spec: SUB3.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Hashable
from typing import Any

from django.db import close_old_connections

from tmsite.core.errors import Refusal
from tmsite.core.parts import dumps
from tmsite.core.types import Content
from tmsite.core.uri import parse

log = logging.getLogger("tmsite.subscriptions.records")

#: Seconds between two reads of a stamp while its mount is listened to.
DEFAULT_INTERVAL = 1.0

Read = Callable[[str], Content]
Publish = Callable[[str], None]


def read_as(content: Content) -> list[bytes]:
    """What a read is, to compare: its body (without the clock's keys), type and links."""
    body = content.body
    if isinstance(body, str):
        body = body.encode("utf-8", "surrogatepass")
    elif not isinstance(body, bytes):
        body = dumps(_without_clock(body)).encode("utf-8", "surrogatepass")
    links = dumps([link.to_json() for link in content.links]).encode()
    return [body, content.mime_type.encode(), links]


def _without_clock(body: Any) -> Any:
    """A JSON body without the keys that say when it was read (not what it is)."""
    if isinstance(body, dict):
        return {k: _without_clock(v) for k, v in body.items() if k not in ("readAt", "calledAt")}
    if isinstance(body, list):
        return [_without_clock(v) for v in body]
    return body


class StampWatcher:
    """Reads a stamp while the mount's URIs are listened to; publishes those that changed.

    Args:
        host: the host whose URIs are watched.
        mount: the mount's name (``entity``, ``trail``, ``mcp``).
        stamp: the cheap query whose answer moves when the rows do.
        read: reads one URI as every surface does (the namespace's ``read``).
        publish: what is called with each changed URI (the bus's ``publish``).
        interval: seconds between two reads of the stamp.
        accept: which of the mount's URIs this watcher answers for (default: all).
        key: what a listened URI is watched as, or None when it is not this watcher's (default:
            the mount's URIs, views' parameters dropped).
        prints: what of a watched URI's read is compared (default :func:`read_as`).
        threaded: poll in a thread of its own while anything is listened to (False: only when
            :meth:`poll` is called).
    """

    def __init__(
        self,
        host: str,
        mount: str,
        stamp: Callable[[], Hashable],
        read: Read,
        publish: Publish,
        *,
        interval: float = DEFAULT_INTERVAL,
        accept: Callable[[tuple[str, ...]], bool] | None = None,
        key: Callable[[str], str | None] | None = None,
        prints: Callable[[Content], list[bytes]] = read_as,
        threaded: bool = True,
    ) -> None:
        self.host = host
        self.mount = mount
        self.stamp = stamp
        self.read = read
        self.publish = publish
        self.interval = interval
        self.accept = accept
        self.key = key or self._key
        self.prints = prints
        self.threaded = threaded
        self.polls = 0
        #: Polls that ran to their end.
        self.checked = 0
        self._lock = threading.Lock()
        #: Watched URI (views' parameters dropped) → the listened URIs it stands for.
        self._held: dict[str, set[str]] = {}
        #: Watched URI → its fingerprint when last read (None: not read yet).
        self._prints: dict[str, str | None] = {}
        self._stamp: Hashable = None
        self._forced = False
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def interest(self, uri: str, present: bool) -> None:
        """The bus's interest watcher: ``uri`` gained its first listener, or lost its last."""
        key = self.key(uri)
        if key is None:
            return
        start = False
        with self._lock:
            held = self._held.setdefault(key, set())
            if present:
                held.add(uri)
                self._prints.setdefault(key, None)
                if self.threaded and self._thread is None:
                    self._thread = threading.Thread(
                        target=self._run, name=f"tm-{self.mount}-stamp", daemon=True
                    )
                    start = True
            else:
                held.discard(uri)
                if not held:
                    del self._held[key]
                    self._prints.pop(key, None)
        if start and self._thread is not None:
            self._thread.start()
        self._wake.set()

    def wake(self, *args: Any, **kwargs: Any) -> None:
        """Read the watched URIs again now, whatever the stamp says.

        A model signal's receiver (a row saved in this process); its arguments are ignored.
        """
        self._forced = True
        self._wake.set()

    def watched(self) -> list[str]:
        """The URIs watched now."""
        with self._lock:
            return sorted(self._held)

    def arm(self, deadline: float) -> bool:
        """Take the first fingerprint of each watched URI not read yet (the bus's arm).

        Reads in the calling thread, until ``deadline``; False when some were left unread.
        """
        with self._lock:
            unread = [key for key, value in self._prints.items() if value is None]
        for key in unread:
            if time.monotonic() >= deadline:
                return False
            now = self._fingerprint(key)
            with self._lock:
                if key in self._prints and self._prints[key] is None:
                    self._prints[key] = now
        return True

    def _fingerprint(self, key: str) -> str:
        """What ``key`` reads as now (``prints`` of its read, or its refusal), as a digest."""
        digest = hashlib.blake2b(digest_size=16)
        try:
            parts = self.prints(self.read(key))
        except Refusal as refusal:
            parts = [f"refused:{refusal.reason}".encode()]
        for part in parts:
            digest.update(part)
        return digest.hexdigest()

    def _key(self, uri: str) -> str | None:
        try:
            parsed = parse(uri)
        except Refusal:
            return None
        if parsed.host != self.host or parsed.mount != self.mount:
            return None
        if self.accept is not None and not self.accept(parsed.path):
            return None
        return parsed.keeping("at").text

    def _run(self) -> None:
        while True:
            self._wake.wait(self.interval)
            self._wake.clear()
            with self._lock:
                if not self._held:
                    self._thread = None
                    return
            try:
                self.poll()
            except Exception:  # logged; the next poll tries again
                log.exception("watching the %s records failed", self.mount)
            finally:
                close_old_connections()

    def poll(self) -> list[str]:
        """Read the stamp once; when it moved, read the watched URIs and publish what changed.

        A URI not read before has its first fingerprint taken (nothing is published for it).
        Returns the URIs published.
        """
        self.polls += 1
        with self._lock:
            unread = [k for k, v in self._prints.items() if v is None]
        forced, self._forced = self._forced, False
        stamp = self.stamp()
        moved = stamp != self._stamp or forced
        self._stamp = stamp
        if not moved and not unread:
            self.checked += 1
            return []
        with self._lock:
            keys = list(self._prints) if moved else unread
        published: list[str] = []
        for key in keys:
            now = self._fingerprint(key)
            with self._lock:
                if key not in self._prints:
                    continue  # released meanwhile
                before = self._prints[key]
                self._prints[key] = now
            if before is not None and before != now:
                published.append(key)
                self.publish(key)
        self.checked += 1
        return published
