"""The change source of ``resources/list``: the box's map, fingerprinted while it is listened to.

What ``resources/list`` answers — the root, the help document (its size and date), and every
mount's collections (the fs directories, the git repositories and their directories, the
entity kinds and records' collections, the MCP servers, the sites) — moves while a box runs: a
directory made, a record reloaded, a server added. A :class:`ListWatcher` reads the whole
answer, every page of it, every ``TM_SUB_LIST_POLL`` seconds (default 10) while some stream
listens to ``resourcesListChanged`` (:func:`~tmsite.bus.changes.lists_listened`),
and publishes ``list_changed`` for ``resources`` when its fingerprint differs from the last
one. Nothing is read while nobody listens; the first reading only notes where it is.

``tools/list`` and ``prompts/list`` have no such source: their answers are tables in the code
(the four tools, the prompts) and the settings, fixed while a box runs, so their
``listChanged`` is not advertised.

Spec: SUB3.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Hashable

from tmsite.bus import changes
from tmsite.core.parts import dumps
from tmsite.kinds.counter import quiet

log = logging.getLogger("tmsite.subscriptions.lists")

#: Seconds between two readings of the map while its changes are listened to.
DEFAULT_INTERVAL = 10.0


def resources_answer() -> Hashable:
    """A digest of what ``resources/list`` answers now, every page of it."""
    from tmsite.mounts import registry

    digest = hashlib.blake2b(digest_size=16)
    space = registry.namespace()
    cursor: str | None = None
    with quiet():
        while True:
            page = space.resource_map(cursor)
            for entry in page.entries:
                digest.update(dumps(entry.to_json()).encode("utf-8", "surrogatepass"))
            cursor = page.next_cursor
            if cursor is None:
                return digest.hexdigest()


class ListWatcher:
    """Reads one list's answer while its changes are listened to; publishes when it moved.

    Args:
        kind: the list (``resources``).
        answer: what the list answers now, as something comparable (a digest).
        publish: what is called with ``kind`` when it changed (the bus's).
        interval: seconds between two readings.
        threaded: read in a thread of its own (False: only when :meth:`poll` is called).
    """

    def __init__(
        self,
        kind: changes.ListKind,
        answer: Callable[[], Hashable],
        publish: Callable[[changes.ListKind], None] = changes.publish_list_changed,
        *,
        interval: float = DEFAULT_INTERVAL,
        threaded: bool = True,
    ) -> None:
        self.kind = kind
        self.answer = answer
        self.publish = publish
        self.interval = interval
        self._last: Hashable = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if threaded:
            self._thread = threading.Thread(target=self._run, name=f"tm-{kind}-list", daemon=True)
            self._thread.start()

    def poll(self) -> bool:
        """Read the answer once if it is listened to; True when it changed and was published."""
        if self.kind not in changes.lists_listened():
            self._last = None  # nobody listens: a later listener's first reading starts anew
            return False
        now = self.answer()
        before, self._last = self._last, now
        if before is not None and before != now:
            self.publish(self.kind)
            return True
        return False

    def arm(self, deadline: float) -> bool:
        """Note where the list is now when it is listened to and not yet noted (the bus's arm)."""
        if self.kind in changes.lists_listened() and self._last is None:
            self._last = self.answer()
        return True

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.poll()
            except Exception:  # logged; the next reading tries again
                log.exception("reading the %s list failed", self.kind)

    def stop(self) -> None:
        """Stop reading (tests; settings changed)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
