"""The keeper: the index follows the mounts while the box serves.

One thread per machine (an ``flock`` on ``var/search.lock``; other worker processes of the
machine leave it to the holder) syncs the index every ``TM_SEARCH_POLL`` seconds (default
1.0), and at once when the change bus tells of a change on this host (the fs watch, a ref
moved, a record saved or corrected). A sync reads only documents whose stamp moved, so a quiet
round costs a walk of stats. Across machines the engine's own lock keeps one writer at a time
(PostgreSQL's advisory lock); a round that finds it held is skipped.

Spec: SRCH1, SRCH4.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO

from django.db import DatabaseError, connections

from tmsite.search import index
from tmsite.subscriptions import changes

log = logging.getLogger(__name__)
#: Changes that arrive together are applied together: the keeper waits this long first.
SETTLE_SECONDS = 0.1

Mounts = Callable[[], Mapping[str, index.Offers]]


class Keeper:
    """Keeps the index of ``mounts()`` current; ``start`` once, ``stop`` to end."""

    def __init__(self, mounts: Mounts, host: str, every: float = 1.0) -> None:
        self.mounts = mounts
        self.prefix = f"tm://{host}/"
        self.every = every
        self.woken = threading.Event()
        self.stopped = threading.Event()
        self.thread: threading.Thread | None = None
        self.last: index.Synced | None = None
        self.rounds = 0
        self._unlisten: Callable[[], None] | None = None

    def wake(self, change: changes.Change) -> None:
        """A bus listener: a change on this host starts a round now."""
        if change.uri is not None and change.uri.startswith(self.prefix):
            self.woken.set()

    def start(self) -> None:
        """Listen to the bus and start the thread (once)."""
        if self.thread is not None:
            return
        self._unlisten = changes.add_listener(self.wake)
        self.thread = threading.Thread(target=self._run, name="tm-search-keeper", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        """End the thread (after its round) and stop listening."""
        self.stopped.set()
        self.woken.set()
        if self._unlisten is not None:
            self._unlisten()
        if self.thread is not None:
            self.thread.join(timeout=10)

    def round(self) -> index.Synced:
        """One sync of the mounts (what the thread runs; tests call it).

        Each document written or dropped is published on the bus once the index holds it, so
        a standing search (``<collection>?as=search&q=…``, listened to or subscribed) is told
        again after the change it was first told of is searchable: its next read is current.
        """
        done = index.sync(self.mounts())
        self.last = done
        self.rounds += 1
        for uri in done.changed:
            changes.publish(uri)
        return done

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
        connections.close_all()


_keeper: Keeper | None = None
_lock_file: IO[bytes] | None = None


def start(mounts: Mounts, host: str, var_dir: Path, every: float) -> Keeper | None:
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
    _keeper = Keeper(mounts, host, every)
    _keeper.start()
    return _keeper


def stop() -> None:
    """End this process's keeper, if it runs, without waiting for its round (a worker stopping)."""
    if _keeper is not None:
        _keeper.stopped.set()
        _keeper.woken.set()


def running() -> Keeper | None:
    """This process's keeper, if it holds the machine's lock."""
    return _keeper
