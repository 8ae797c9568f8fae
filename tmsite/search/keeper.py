"""The keeper: the index follows the mounts while the box serves.

One thread per machine (an ``flock`` on ``var/search.lock``; other worker processes of the
machine leave it to the holder) applies each change the bus tells of on this host: the
documents at the changed address (and those another mount makes from it, ``reindexes``) are
read again, alone (``index.refresh``), not the whole mount. Every ``TM_SEARCH_POLL`` seconds
(default 1.0) it also asks each mount for its ``documents_stamp`` (records: a version or a
few one-row reads; repositories: their heads) and walks a mount whose stamp moved. A full walk
of every document, comparing stamps, runs at the first round and every
``TM_SEARCH_FULL_EVERY`` seconds (default 600) after: the safety net for a change no source
told (a watch that missed one, a bus that was lost).

While it runs it listens to the root of each mount it holds documents of that has no stamp (the
fs mount: its watch then follows every root), so the change sources watch them. Across
machines the engine's own lock keeps one writer at a time (PostgreSQL's advisory lock); a round
that finds it held is tried again at the next.

Spec: SRCH1, SRCH4.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from typing import IO, Protocol

from django.db import DatabaseError, connections

from tmsite.bus import changes
from tmsite.core.errors import Refusal
from tmsite.core.uri import TmUri, parse
from tmsite.search import index

log = logging.getLogger(__name__)
#: Changes that arrive together are applied together: the keeper waits this long first.
SETTLE_SECONDS = 0.1
#: Seconds between two full walks (``TM_SEARCH_FULL_EVERY``'s default).
FULL_EVERY = 600.0


class Kept(index.Offers, Protocol):
    """A mount, as the keeper sees it."""

    @property
    def root(self) -> TmUri:
        """Its root collection."""
        ...

    def reindexes(self, changed: TmUri) -> list[TmUri]:
        """Its addresses a change of ``changed`` may alter."""
        ...

    def documents_stamp(self) -> Hashable | None:
        """A cheap stamp of all it offers (None: it has none)."""
        ...


Mounts = Callable[[], Mapping[str, Kept]]


class Keeper:
    """Keeps the index of ``mounts()`` current; ``start`` once, ``stop`` to end."""

    def __init__(
        self, mounts: Mounts, host: str, every: float = 1.0, full_every: float = FULL_EVERY
    ) -> None:
        self.mounts = mounts
        self.prefix = f"tm://{host}/"
        self.every = every
        self.full_every = full_every
        self.woken = threading.Event()
        self.stopped = threading.Event()
        self.thread: threading.Thread | None = None
        self.rounds = 0
        #: Full walks done (the first round's included).
        self.walks = 0
        self._lock = threading.Lock()
        #: Addresses the bus told of since the last round.
        self._pending: set[str] = set()
        #: Each mount's ``documents_stamp`` when it was last walked.
        self._stamps: dict[str, Hashable] = {}
        self._walked: float | None = None
        self._held: list[str] = []
        self._holding = threading.Lock()
        self._unlisten: Callable[[], None] | None = None

    def wake(self, change: changes.Change) -> None:
        """A bus listener: a change on this host is applied at once; a lost bus, by a walk."""
        if change.kind == "lost":
            self._walked = None  # what was told meanwhile is not known: walk it all
            self.woken.set()
        elif change.uri is not None and change.uri.startswith(self.prefix):
            with self._lock:
                self._pending.add(change.uri)
            self.woken.set()

    def start(self) -> None:
        """Listen to the bus and start the thread (once)."""
        if self.thread is not None:
            return
        self._unlisten = changes.add_listener(self.wake)
        self.thread = threading.Thread(target=self._run, name="tm-search-keeper", daemon=True)
        self.thread.start()

    def stop(self, wait: bool = True) -> None:
        """End the thread (after its round, when ``wait``), stop listening, let go of interest."""
        self.stopped.set()
        self.woken.set()
        if self._unlisten is not None:
            self._unlisten()
            self._unlisten = None
        if wait and self.thread is not None:
            self.thread.join(timeout=10)
        self._listen([])

    def round(self) -> index.Synced:
        """One round (what the thread runs; tests call it): a walk when due, else the changes.

        What it writes is not published on the bus: a standing search is told by its own source
        (:mod:`tmsite.search.standing`) when its hits change, and a walk of every document would
        otherwise send each to every machine.
        """
        mounts = self.mounts()
        with self._lock:
            told, self._pending = self._pending, set()
        now = time.monotonic()
        try:
            if self._walked is None or now - self._walked >= self.full_every:
                done = self._walk(mounts, now)
            else:
                done = self._apply(mounts, told)
        except Exception:
            with self._lock:
                self._pending |= told  # applied at the next round
            raise
        if done.skipped:
            with self._lock:
                self._pending |= told  # another machine writes now: try again next round
        self.rounds += 1
        return done

    def _walk(self, mounts: Mapping[str, Kept], now: float) -> index.Synced:
        """Every document of every mount in step (stamps compared), and the interest to hold."""
        stamps = {name: mount.documents_stamp() for name, mount in mounts.items()}
        # watched before the walk reads: a change made while it walks is told, not left to the
        # next walk
        self._listen(_told_roots(mounts, stamps))
        changes.arm()
        done = index.sync(mounts)
        if not done.skipped:
            self._walked, self._stamps = now, stamps
            if self._listen(_told_roots(mounts, stamps)):
                changes.arm()  # a mount this walk first filled is watched once the walk counts
            self.walks += 1
        return done

    def _apply(self, mounts: Mapping[str, Kept], told: set[str]) -> index.Synced:
        """The documents at the addresses told, and every mount whose stamp moved, in step."""
        moved: dict[str, Hashable] = {}
        for name, mount in mounts.items():
            stamp = mount.documents_stamp()
            if stamp is not None and stamp != self._stamps.get(name):
                moved[name] = stamp
        done = index.sync({name: mounts[name] for name in moved}, whole=False) if moved else None
        if done is None or not done.skipped:
            self._stamps.update(moved)
        addresses: dict[str, set[TmUri]] = {}
        for text in sorted(told):
            try:
                changed = parse(text)
            except Refusal:
                continue
            for name, mount in mounts.items():
                if name not in moved:
                    addresses.setdefault(name, set()).update(mount.reindexes(changed))
        for name, under in addresses.items():
            if under and (done is None or not done.skipped):
                done = _merged(done, index.refresh(name, mounts[name], _outermost(under)))
        return done or index.Synced()

    def _listen(self, roots: list[str]) -> bool:
        """Hold interest in ``roots`` (and in nothing else), so their sources watch them.

        Returns whether what is held moved.
        """
        with self._holding:
            wanted = sorted(set(roots)) if not self.stopped.is_set() else []
            if wanted == self._held:
                return False
            for uri in wanted:
                changes.interest(uri)
            for uri in self._held:
                changes.release(uri)
            self._held = wanted
            return True

    def _run(self) -> None:
        while not self.stopped.is_set():
            if self.woken.wait(self.every):
                time.sleep(SETTLE_SECONDS)
            self.woken.clear()
            if self.stopped.is_set():
                break
            try:
                self.round()
            except DatabaseError:
                log.warning("the search index could not be synced this round", exc_info=True)
                connections.close_all()
            except Exception:  # a mount that failed: its changes are tried again next round
                log.exception("the search keeper's round failed")
        connections.close_all()


def _told_roots(mounts: Mapping[str, Kept], stamps: Mapping[str, Hashable]) -> list[str]:
    """The roots of the mounts the index holds documents of whose changes only a source tells."""
    held = index.documents()
    return [str(m.root) for n, m in mounts.items() if n in held and stamps[n] is None]


def _outermost(addresses: set[TmUri]) -> list[TmUri]:
    """``addresses`` without those inside another of them (a directory covers its files)."""
    ordered = sorted(addresses, key=lambda uri: (len(uri.path), str(uri)))
    kept: list[TmUri] = []
    for uri in ordered:
        if not any(
            outer.collection
            and uri.mount == outer.mount
            and uri.path[: len(outer.path)] == outer.path
            for outer in kept
        ):
            kept.append(uri)
    return kept


def _merged(first: index.Synced | None, second: index.Synced) -> index.Synced:
    if first is None:
        return second
    first.written += second.written
    first.dropped += second.dropped
    first.unchanged += second.unchanged
    first.skipped = first.skipped or second.skipped
    first.changed += second.changed[: max(0, index.MAX_TOLD - len(first.changed))]
    return first


_keeper: Keeper | None = None
_lock_file: IO[bytes] | None = None


def start(
    mounts: Mounts, host: str, var_dir: Path, every: float, full_every: float = FULL_EVERY
) -> Keeper | None:
    """Start this machine's keeper unless another process of it holds the lock."""
    global _keeper, _lock_file
    if _keeper is not None:
        return _keeper
    handle = open(var_dir / "search.lock", "ab")  # noqa: SIM115  (held for the process's life)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    os.set_inheritable(handle.fileno(), False)
    _lock_file = handle
    _keeper = Keeper(mounts, host, every, full_every)
    _keeper.start()
    return _keeper


def stop() -> None:
    """End this process's keeper, if it runs, without waiting for its round (a worker stopping).

    The machine's lock is let go: another process (or a later start) may keep the index.
    """
    global _keeper, _lock_file
    if _keeper is not None:
        _keeper.stop(wait=False)
        _keeper = None
    if _lock_file is not None:
        _lock_file.close()
        _lock_file = None
