"""The fs mount's change source: the checkout's roots watched, each change published on the bus.

It watches only what is listened to: a root of the fs mount is watched while some URI at or
beneath ``tm://<host>/fs/<root>/`` is (a subscription to ``tm://<host>/fs/``, to the host's
root or to ``tm://`` takes every root). The watching is the maintained ``watchfiles`` library
(inotify on Linux), on one thread, restarted with the new set of roots when that set changes
(a subscription made meanwhile is kept: the thread is told, it does not forget). Each file or
directory that changed — written, created, removed — is published as its ``tm://`` URI (a
directory as a collection, ``…/``); the bus tells a subscription to the file, and one to any
directory above it with that child's URI. A name the fs mount refuses (its deny-list, a path
resolving out of its root) is never published: a listener learns nothing a read would not
tell it. A directory that a poll sees modified (a child came or went) is not published itself:
the child's change is, alike under both ways of watching.

``TM_FS_WATCH``: ``native`` (the default) uses the kernel's notifications and falls back to
polling when they cannot be had (no inotify, its watch limit reached); ``poll`` always polls,
every ``TM_FS_POLL_MS`` milliseconds (300), for file systems that do not notify (network
mounts); a poll compares modification times to the second, so a file written again within the
second of its last write is not seen by it. Changes close together are gathered for 50 ms before
they are published.

A stream acknowledges only once the watch of its roots is set up (:meth:`FsSource.arm`, the
bus's arm): the kernel's watches added, or the poll's first look taken. When the roots
watched change, the new watch is set up before the old one is let go, and what the old one saw
meanwhile is published.

A watch thread that fails (anything raised outside the watch itself) logs it and starts its
watch again after ``RESTART_SECONDS``, over the roots listened to then: the roots follow the
bus's interest whether or not a thread is running, so nothing listened to meanwhile is lost.
Should the thread be gone anyway, the next stream (:meth:`FsSource.start`) or the next change
of interest starts a new one.

The fs mount served is looked up each time through :attr:`FsSource.find`, which the mount's
change-source hook sets: one rebuilt from changed settings is followed.

Spec: SUB3.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings

from tmsite.bus import changes
from tmsite.core import uri as tmuri
from tmsite.core.errors import Refusal

if TYPE_CHECKING:
    from tmsite.mounts.fs.mount import FsMount

log = logging.getLogger("tmsite.subscriptions")

#: Milliseconds changes are gathered for before they are published.
DEBOUNCE_MS = 50
#: Milliseconds a watch waits for a change before the roots wanted are looked at again.
LOOK_MS = 100
#: Seconds a watch thread that failed waits before it watches again.
RESTART_SECONDS = 1.0


def mode() -> str:
    """``native`` or ``poll`` (``TM_FS_WATCH``)."""
    return "poll" if os.environ.get("TM_FS_WATCH", "").strip() == "poll" else "native"


def poll_ms() -> int:
    """Milliseconds between two polls (``TM_FS_POLL_MS``, 300)."""
    declared = os.environ.get("TM_FS_POLL_MS", "")
    return int(declared) if declared.isdigit() and int(declared) > 0 else 300


class FsSource:
    """Watches the roots listened to; see the module's text."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._arming = threading.Condition(self._lock)
        self._following = threading.Lock()
        self._wanted: frozenset[str] = frozenset()
        #: The directories the running watch covers (set up, so a change there is seen).
        self._armed: tuple[Path, ...] = ()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._remove: object = None
        self._unarm: object = None
        #: Times the watch was (re)started, and with which way of watching (tests, health).
        self.starts: list[tuple[str, frozenset[str]]] = []
        #: Times the watch thread failed and was started again (tests, health).
        self.failures = 0
        #: The fs mount served now (None: none is; set by the mount's change-source hook).
        self.find: Callable[[], FsMount | None] = lambda: None

    # the interest

    def follow(self) -> Callable[[], None]:
        """:meth:`start`, returning :meth:`stop` (the change-source hook's ``start``)."""
        self.start()
        return self.stop

    def start(self) -> None:
        """Begin following the bus's interest (idempotent).

        The bus tells :meth:`_interest` at once of every URI listened to already, in this
        thread: ``_lock`` must not be held meanwhile (only ``_following``, which orders a start
        and a stop and which nothing told by the bus takes).
        """
        with self._following:
            if self._remove is not None:
                with self._lock:
                    self._revive()
                return
            self._remove = changes.add_interest_watcher(self._interest)
            self._unarm = changes.add_arm(self.arm)

    def _fs(self) -> FsMount | None:
        return self.find()

    def roots_for(self, uris: Iterable[str]) -> frozenset[str]:
        """The fs roots the URIs listened to reach."""
        fs = self._fs()
        if fs is None:
            return frozenset()
        host: str = settings.TM_HOST
        wanted: set[str] = set()
        for text in uris:
            try:
                parsed = tmuri.parse(text)
            except Refusal:
                continue
            if parsed.is_hosts or (parsed.host == host and parsed.mount is None):
                wanted.update(fs.roots)
            elif parsed.host == host and parsed.mount == "fs":
                if not parsed.path:
                    wanted.update(fs.roots)
                elif parsed.path[0] in fs.roots:
                    wanted.add(parsed.path[0])
        return frozenset(wanted)

    def _interest(self, uri: str, present: bool) -> None:
        wanted = self.roots_for(changes.interests())
        with self._lock:
            if wanted == self._wanted:
                self._revive()
                return
            self._wanted = wanted
            if self._thread is None or not self._thread.is_alive():
                self._revive()
                return
            self._stop.set()  # the thread watches the new roots within LOOK_MS

    def _revive(self) -> None:
        """Start a watch thread when roots are wanted and none runs (under ``_lock``)."""
        if not self._wanted or (self._thread is not None and self._thread.is_alive()):
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="tm-fs-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop following the interest and watching (tests)."""
        with self._following:
            remove, self._remove = self._remove, None
            if callable(remove):
                remove()  # no more news of the interest: then nothing is wanted
            unarm, self._unarm = self._unarm, None
            if callable(unarm):
                unarm()
            with self._lock:
                self._wanted = frozenset()
                self._stop.set()
                thread = self._thread
        if thread is not None:
            thread.join(timeout=10)

    @property
    def watching(self) -> frozenset[str]:
        """The roots watched now."""
        with self._lock:
            return self._wanted

    # the watch

    def _run(self) -> None:
        """The watch thread: its watch started again after any failure (see the module)."""
        while True:
            try:
                self._follow()
                return
            except Exception:
                self.failures += 1
                log.exception("the fs watch thread failed; it watches again in a moment")
            self._stop.wait(RESTART_SECONDS)

    def _follow(self) -> None:
        poll = mode() == "poll"
        notify: Any = None
        watched: tuple[Path, ...] = ()
        try:
            while True:
                with self._lock:
                    wanted = self._wanted
                    if not wanted:
                        self._ended()
                        return
                    self._stop.clear()
                fs = self._fs()
                if fs is None:
                    with self._lock:
                        self._ended()
                    return
                paths = self.paths(fs, wanted)
                if notify is None or paths != watched:  # other roots, or another checkout
                    notify, poll = self._rewatch(fs, notify, paths, poll)
                    watched = paths if notify is not None else ()
                    self._armed_for(watched)
                if notify is None:  # nothing there to watch yet
                    self._stop.wait(1.0)
                    continue
                # no stop event: a watch stopped early forgets what it saw and had not yet told
                self._publish(fs, notify.watch(DEBOUNCE_MS, DEBOUNCE_MS, LOOK_MS, None))
        finally:
            if notify is not None:
                notify.close()

    def _rewatch(
        self, fs: FsMount, old: Any, paths: tuple[Path, ...], poll: bool
    ) -> tuple[Any, bool]:
        """A watch of ``paths`` set up, then ``old`` drained and let go; and whether it polls.

        The watch is None when no path exists yet; it polls when the kernel's notifications
        cannot be had.
        """
        new = None
        if paths:
            try:
                new = self._notify(paths, poll)
            except Exception as exc:  # no inotify, its limit reached: poll instead
                if poll:
                    raise
                log.warning("the fs watch cannot use the kernel's notifications (%s): polls", exc)
                return self._rewatch(fs, old, paths, True)
        if old is not None:  # the new watch is set: what the old one saw is told
            self._publish(fs, old.watch(DEBOUNCE_MS, DEBOUNCE_MS, 1, None))
            old.close()
        return new, poll

    @staticmethod
    def paths(fs: FsMount | None, roots: frozenset[str]) -> tuple[Path, ...]:
        """The directories of ``roots`` in ``fs``'s checkout that exist now."""
        if fs is None:
            return ()
        return tuple(path for root in sorted(roots) if (path := fs.checkout / root).is_dir())

    def _notify(self, paths: tuple[Path, ...], poll: bool) -> Any:
        """A watch of ``paths``, set up when this returns (inotify's watches, a poll's look)."""
        from watchfiles._rust_notify import RustNotify

        self.starts.append(("poll" if poll else "native", frozenset(p.name for p in paths)))
        return RustNotify([str(p) for p in paths], False, poll, poll_ms(), True, False)

    def _publish(self, fs: FsMount, batch: object) -> None:
        """Publish the URIs of what a watch saw (a set of changes; else it saw nothing)."""
        import watchfiles

        if not isinstance(batch, set):
            return  # "timeout", "stop" or "signal"
        found = set()
        for change, path in batch:
            where = Path(path)
            if change == watchfiles.Change.modified and where.is_dir():
                continue  # a poll's view of a child that came or went: the child says it
            uri = self.uri_of(fs, where)
            if uri is not None:
                found.add(uri)
        for uri in sorted(found):
            changes.publish(uri)

    def _armed_for(self, paths: tuple[Path, ...]) -> None:
        with self._lock:
            self._armed = paths
            self._arming.notify_all()

    def _ended(self) -> None:
        """The watch thread ends (under ``_lock``): nothing is watched."""
        self._thread = None
        self._armed = ()
        self._arming.notify_all()

    def arm(self, deadline: float) -> bool:
        """Return once the roots listened to now are watched (or at ``deadline``, False).

        The bus's arm (:func:`tmsite.bus.changes.add_arm`): a file written after this
        returns is told.
        """
        with self._lock:
            return self._arming.wait_for(
                lambda: self._thread is None or self._armed == self.paths(self._fs(), self._wanted),
                timeout=max(0.0, deadline - time.monotonic()),
            )

    def uri_of(self, fs: FsMount, path: Path) -> str | None:
        """The ``tm://`` URI of a changed path, or None when a read would refuse it."""
        try:
            parts = path.relative_to(fs.checkout).parts
        except ValueError:
            return None
        if not parts or parts[0] not in fs.roots:
            return None
        collection = path.is_dir()
        uri = tmuri.TmUri(fs.host, "fs", tuple(parts), collection)
        try:
            fs.target(uri)
        except Refusal:
            return None
        return uri.text


SOURCE = FsSource()
