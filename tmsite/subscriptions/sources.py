"""The change sources of the database- and repository-backed mounts, wired to the bus.

:func:`install` (idempotent; the serving process calls it once) registers, for the mounts this
box serves:

* ``git`` — a :class:`~tmsite.mounts.git.watch.RefWatcher` over the served repositories:
  refs polled every ``TM_SUB_GIT_POLL`` seconds (default 0.5) while git URIs are listened to.
* ``entity`` — a :class:`~tmsite.subscriptions.records.StampWatcher` whose stamp is each
  kind's load token (a reload writes a new one) and the newest correction; the entity models'
  and corrections' ``post_save``/``post_delete`` wake it in the process that saved.
* ``trail`` — the same, stamped by the trail index's version (re-indexed or corrected) and the
  trail files' sizes and times; the trail models' signals wake it.
* ``mcp`` — the same for the server records (their status: last asked, outcome, what they
  declared, their maps), never for what asks a server (a resource's content, a map-named
  thing): those are told by the server itself, through a
  :class:`~tmsite.servers.notices.PeerNotices` (a stdio or 2026-07-28 HTTP server's
  ``resources/updated`` and ``*/list_changed``). The records' and declarations' signals wake it.
* ``kinds`` — the same, stamped by the stored counts and this process's pending ones (see
  :mod:`tmsite.mounts.kinds.watch`); its reads, like every watcher's, are not counted.
* ``http`` — a :class:`~tmsite.mounts.http.watch.PageWatcher`: a page made from a served
  markdown file is told when the file changes (through the fs watch); any other listened page
  is fetched again every ``TM_SUB_HTTP_POLL`` seconds (default 5.0) and told when it changed.

And ``resources-list``, a :class:`~tmsite.subscriptions.lists.ListWatcher`: the whole
``resources/list`` answer read every ``TM_SUB_LIST_POLL`` seconds (default 10.0) while a stream
asks for its changes.

Stamps are read every ``TM_SUB_RECORDS_POLL`` seconds (default 1.0) while their mount is
listened to, so a change made by another process or machine is seen within that.

Spec: SUB3.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connections
from django.db.models import Count, Max, Sum
from django.db.models.signals import post_delete, post_save

from tmsite.subscriptions import changes, fswatch
from tmsite.subscriptions.records import Read, StampWatcher

_lock = threading.Lock()
_installed: dict[str, Any] = {}
#: What an mcp record watcher reads: descriptions only, never what runs on a server.
MCP_DESCRIBED = frozenset({"tools", "prompts", "map"})


def entity_stamp() -> Hashable:
    """Each entity kind's load token and the newest correction: moves on a reload or a fix."""
    from tmsite.entities import models as m

    try:
        tokens = tuple(
            model.objects.order_by().values_list("load_token", flat=True).first()
            for model in (m.Pattern, m.Game, m.Routine, m.Lesson)
        )
        fixes = m.Correction.objects.aggregate(n=Count("id"), last=Max("id"))
    except DatabaseError:
        return None
    return (tokens, fixes["n"], fixes["last"])


def trail_stamp(checkout: Path | None = None) -> Hashable:
    """The trail index's version and the trail files as they are on disk."""
    from tmsite.trails import index

    return (index.version(), tuple(index.scan(checkout).items()))


def servers_stamp() -> Hashable:
    """The server records' status and declarations: moves when any is asked or corrected."""
    from tmsite.servers.models import McpServer, ServerDeclaration

    try:
        records = McpServer.objects.aggregate(
            n=Count("id"),
            asked=Max("last_asked_at"),
            answered=Max("last_answered_at"),
            updated=Max("updated_at"),
            maps=Sum("map_version"),
        )
        declared = ServerDeclaration.objects.aggregate(n=Count("id"), last=Max("id"))
    except DatabaseError:
        return None
    return (tuple(sorted(records.items())), declared["n"], declared["last"])


def mcp_described(path: tuple[str, ...]) -> bool:
    """Whether an ``mcp/`` path is read from the records alone (no server is asked)."""
    if len(path) <= 1:
        return True
    if path[1] in MCP_DESCRIBED:
        return True
    return path[1] == "resources" and len(path) == 2  # the listing; not a resource's content


def _models(*names: str) -> list[Any]:
    from django.apps import apps

    return [apps.get_model(name) for name in names]


def _wire(watcher: StampWatcher, senders: list[Any], uid: str) -> Callable[[], None]:
    remove = changes.add_interest_watcher(watcher.interest)
    unarm = changes.add_arm(watcher.arm)
    for sender in senders:
        for signal in (post_save, post_delete):
            signal.connect(
                watcher.wake, sender=sender, weak=False, dispatch_uid=f"{uid}-{sender.__name__}"
            )

    def undo() -> None:
        remove()
        unarm()
        for sender in senders:
            for signal in (post_save, post_delete):
                signal.disconnect(sender=sender, dispatch_uid=f"{uid}-{sender.__name__}")

    return undo


def install(
    host: str | None = None,
    read: Read | None = None,
    mounts: list[str] | None = None,
) -> dict[str, Any]:
    """Register the change sources of the served mounts (once); returns them by mount.

    Args:
        host: the host whose URIs are watched (default ``TM_HOST``).
        read: how a URI is read for its fingerprint (default: the process namespace).
        mounts: which mounts (default: those served, ``TM_MOUNTS`` or all).
    """
    from tmsite.mounts import registry

    with _lock:
        if _installed:
            return dict(_installed)
        host = host or settings.TM_HOST
        from tmsite.mounts.kinds.watch import SENDERS as KIND_SENDERS
        from tmsite.mounts.kinds.watch import stamp as kinds_stamp
        from tmsite.mounts.kinds.watch import unseen

        reader = unseen(read or (lambda uri: registry.namespace().read(uri)))  # never counted
        wanted = mounts if mounts is not None else registry.enabled_names()
        records_poll = float(getattr(settings, "TM_SUB_RECORDS_POLL", 1.0))
        undo: list[Callable[[], None]] = []
        if "git" in wanted:
            from tmsite.mounts.git.settings import is_repository, read_settings
            from tmsite.mounts.git.watch import RefWatcher

            conf = read_settings()
            repos = dict(conf.neighbours)
            if conf.checkout_name is not None and is_repository(conf.checkout):
                repos[conf.checkout_name] = conf.checkout
            git = RefWatcher(
                host,
                repos,
                changes.publish,
                default_refs=conf.default_refs,
                interval=float(getattr(settings, "TM_SUB_GIT_POLL", 0.5)),
            )
            undo.append(changes.add_interest_watcher(git.interest))
            undo.append(changes.add_arm(git.arm))
            _installed["git"] = git
        stamped: list[tuple[str, Callable[[], Hashable], list[str], Any]] = [
            (
                "entity",
                entity_stamp,
                [
                    "tm_entities.Pattern",
                    "tm_entities.Game",
                    "tm_entities.Routine",
                    "tm_entities.Lesson",
                    "tm_entities.Correction",
                ],
                None,
            ),
            ("trail", trail_stamp, ["tm_trails.Trail", "tm_trails.TrailCorrection"], None),
            ("kinds", kinds_stamp, KIND_SENDERS, None),
            (
                "mcp",
                servers_stamp,
                ["tm_servers.McpServer", "tm_servers.ServerDeclaration", "tm_servers.MapEntry"],
                mcp_described,
            ),
        ]
        for name, stamp, senders, accept in stamped:
            if name not in wanted:
                continue
            watcher = StampWatcher(
                host,
                name,
                stamp,
                reader,
                changes.publish,
                interval=records_poll,
                accept=accept,
            )
            undo.append(_wire(watcher, _models(*senders), f"tm-sub-{name}"))
            _installed[name] = watcher
        http = registry.namespace().mounts.get("http") if "http" in wanted else None
        if http is not None:
            from tmsite.mounts.http.mount import HttpMount
            from tmsite.mounts.http.watch import PageWatcher, tick

            every = float(getattr(settings, "TM_SUB_HTTP_POLL", 5.0))
            fetch = StampWatcher(host, "http", tick(every), reader, changes.publish, interval=every)
            if isinstance(http, HttpMount):
                _installed["http"] = page_watcher = PageWatcher(http, fetch.interest)
                _installed["http-poll"] = fetch
                undo.append(page_watcher.start())
                undo.append(changes.add_arm(fetch.arm))
        if "mcp" in wanted:
            from tmsite.servers.notices import PeerNotices

            notices = PeerNotices(host, changes.publish)
            undo.append(changes.add_interest_watcher(notices.interest))
            _installed["mcp-notices"] = notices
        from tmsite.subscriptions.lists import ListWatcher, resources_answer

        every = float(getattr(settings, "TM_SUB_LIST_POLL", 10.0))
        _installed["resources-list"] = listing = ListWatcher(
            "resources", resources_answer, interval=every
        )
        undo.append(listing.stop)
        undo.append(changes.add_arm(listing.arm))
        _installed["_undo"] = undo
        return dict(_installed)


def start() -> None:
    """The change sources follow what is listened to from now on (idempotent)."""
    fswatch.SOURCE.start()
    install()


def listened(uris: Iterable[str], lists: Iterable[changes.ListKind] = ()) -> list[str]:
    """Take a stream's interest before it is acknowledged, and wait until it is watched.

    Off the event loop: the sources start (once), the interest in each URI and list is taken,
    then each source arms (:func:`tmsite.subscriptions.changes.arm`), so that a change made
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
    """The change sources installed in this process, by mount (none before :func:`install`)."""
    with _lock:
        return {name: source for name, source in _installed.items() if name != "_undo"}


def uninstall() -> None:
    """Remove what :func:`install` registered (tests; settings changed)."""
    with _lock:
        for undo in _installed.pop("_undo", []):
            undo()
        _installed.clear()
