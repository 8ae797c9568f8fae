"""The change sources of the served mounts, wired to the bus: each mount says its own.

:func:`install` (idempotent; the serving process calls it once) asks each served mount for its
change sources (:meth:`~tmsite.mounts.base.Mount.change_sources`: the file watch, the refs,
the records' stamps, the peers' notices, the pages) and wires each: its interest watcher and its
arm on the bus, its models' saves and deletes to its ``wake``, and its own start. A mount whose
things live in rows is watched by a stamp (a cheap query whose answer moves when the rows do)
read every ``TM_SUB_RECORDS_POLL`` seconds (default 1.0) while its addresses are listened to,
so a change made by another process or machine is seen within that.

And ``search-results``, a :class:`StampWatcher` of the standing searches
(:mod:`tmsite.search.standing`): a listened ``?as=search`` address is read again when the index
changed, and told only when its hits did.

And ``resources-list``, a :class:`~tmsite.subscriptions.lists.ListWatcher`: the whole
``resources/list`` answer read every ``TM_SUB_LIST_POLL`` seconds (default 10.0) while a stream
asks for its changes.

The search index follows the same sources: :func:`serve` starts them with this machine's
index keeper, which listens while it runs to each mount whose changes only its sources tell
(the files), and :func:`stop` ends both.

Spec: SUB3, SRCH1.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from django.conf import settings
from django.db import connections
from django.db.models.signals import post_delete, post_save

from tmsite.bus import changes
from tmsite.kinds.counter import quiet
from tmsite.mounts import registry
from tmsite.mounts.base import ChangeSource, Watching
from tmsite.search import keeper, standing
from tmsite.subscriptions.lists import ListWatcher, resources_answer
from tmsite.subscriptions.records import Read, StampWatcher

_lock = threading.Lock()
_installed: dict[str, ChangeSource] = {}
_undo: list[Callable[[], None]] = []


def unseen(read: Read) -> Read:
    """``read``, its reads not counted as served (a change source's own reads serve no one).

    A subscription to a ``kinds/`` address would otherwise be told of its watcher's own read of
    it, forever.
    """

    def reading(uri: str) -> Any:
        with quiet():
            return read(uri)

    return reading


def _setting(name: str, default: float) -> float:
    return float(getattr(settings, name, default))


def _stamped(host: str, read: Read) -> Callable[..., ChangeSource]:
    """The ``stamped`` of :class:`~tmsite.mounts.base.Watching`: a :class:`StampWatcher`."""

    def stamped(
        mount: str,
        stamp: Callable[[], Hashable],
        senders: Iterable[str],
        *,
        interval: float | None = None,
        accept: Callable[[tuple[str, ...]], bool] | None = None,
    ) -> ChangeSource:
        every = interval if interval is not None else _setting("TM_SUB_RECORDS_POLL", 1.0)
        watcher = StampWatcher(
            host, mount, stamp, read, changes.publish, interval=every, accept=accept
        )
        return ChangeSource(mount, watcher, watcher.interest, watcher.arm, tuple(senders))

    return stamped


def _wire(found: ChangeSource) -> Callable[[], None]:
    """Hand ``found`` its interest, arm, models' signals and start; returns what undoes it."""
    from django.apps import apps

    undo: list[Callable[[], None]] = []
    if found.interest is not None:
        undo.append(changes.add_interest_watcher(found.interest))
    if found.arm is not None:
        undo.append(changes.add_arm(found.arm))
    senders = [apps.get_model(label) for label in found.senders]
    uid = f"tm-sub-{found.name}"
    for sender in senders:
        for signal in (post_save, post_delete):
            signal.connect(
                found.source.wake,
                sender=sender,
                weak=False,
                dispatch_uid=f"{uid}-{sender.__name__}",
            )
    if found.start is not None:
        undo.append(found.start())

    def unwire() -> None:
        for step in reversed(undo):
            step()
        for sender in senders:
            for signal in (post_save, post_delete):
                signal.disconnect(sender=sender, dispatch_uid=f"{uid}-{sender.__name__}")

    return unwire


def install(
    host: str | None = None,
    read: Read | None = None,
    mounts: list[str] | None = None,
) -> dict[str, Any]:
    """Register the change sources of the served mounts (once); returns them by name.

    Args:
        host: the host whose URIs are watched (default ``TM_HOST``).
        read: how a URI is read for its fingerprint (default: the process namespace).
        mounts: which mounts (default: those served, ``TM_MOUNTS`` or all).
    """
    with _lock:
        if _installed:
            return _sources()
        host = host or settings.TM_HOST
        reader = unseen(read or (lambda uri: registry.namespace().read(uri)))
        watching = Watching(
            host,
            changes.publish,
            reader,
            lambda: registry.namespace().mounts,
            _stamped(host, reader),
            _setting,
        )
        served = registry.namespace().mounts
        wanted = mounts if mounts is not None else registry.enabled_names()
        found = [
            one
            for name in wanted
            if (mount := served.get(name)) is not None
            for one in mount.change_sources(watching)
        ]
        results = StampWatcher(
            host,
            "search",
            standing.stamp,
            reader,
            lambda uri: changes.publish(uri, exact=True),
            interval=_setting("TM_SUB_RECORDS_POLL", 1.0),
            key=standing.key(host),
            prints=standing.results,
        )
        listing = ListWatcher(
            "resources", resources_answer, interval=_setting("TM_SUB_LIST_POLL", 10.0)
        )
        found += [
            ChangeSource("search-results", results, results.interest, results.arm),
            # it reads from its making on; started again, it only says what stops it
            ChangeSource("resources-list", listing, arm=listing.arm, start=lambda: listing.stop),
        ]
        for one in found:
            _undo.append(_wire(one))
            _installed[one.name] = one
        return _sources()


def _sources() -> dict[str, Any]:
    return {name: found.source for name, found in _installed.items()}


def start() -> None:
    """The change sources follow what is listened to from now on (idempotent).

    A source stopped by hand since (a test; a stdio server ending) starts again.
    """
    install()
    with _lock:
        started = [found.start for found in _installed.values() if found.start is not None]
    for again in started:
        again()


def serve() -> keeper.Keeper | None:
    """Start the change sources and this machine's search index keeper (a serving worker).

    The keeper ends with :func:`stop`. Returns it (None: another process of this machine keeps
    the index, or ``TM_SEARCH_POLL`` is 0).
    """
    start()
    every = _setting("TM_SEARCH_POLL", 1.0)
    if every <= 0:
        return None
    host: str = settings.TM_HOST
    return keeper.start(
        lambda: registry.namespace().mounts,
        host,
        settings.VAR_DIR,
        every,
        _setting("TM_SEARCH_FULL_EVERY", keeper.FULL_EVERY),
    )


def stop() -> None:
    """End this process's index keeper (no new round) and its change sources."""
    keeper.stop()
    uninstall()


def listened(uris: Iterable[str], lists: Iterable[changes.ListKind] = ()) -> list[str]:
    """Take a stream's interest before it is acknowledged, and wait until it is watched.

    Off the event loop: the sources start (once), the interest in each URI and list is taken,
    then each source arms (:func:`tmsite.bus.changes.arm`), so that a change made
    after the acknowledgement is told. Returns the URIs' canonical texts, to release.
    """
    try:
        start()
        held = [changes.interest(uri) for uri in uris]
        changes.listen_lists(lists)
        changes.arm()
    finally:
        connections.close_all()  # this thread's own: it may not serve a request again soon
    return held


def installed() -> dict[str, Any]:
    """The change sources installed in this process, by name (none before :func:`install`)."""
    with _lock:
        return _sources()


def uninstall() -> None:
    """Remove what :func:`install` registered (tests; settings changed)."""
    with _lock:
        while _undo:
            _undo.pop()()
        _installed.clear()
