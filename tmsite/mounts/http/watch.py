"""The http mount's change source: a listened page is told when what makes it changes.

A :class:`PageWatcher` is told which ``tm://<host>/http/…`` URIs are listened to (its
:meth:`~PageWatcher.interest` is the bus's interest watcher) and sorts each page in one of two:

* **Made from a file it can name**: a page of a ``self`` site rendered from a markdown document
  (:func:`tmsite.mounts.http.pages.page_at`) whose root the fs mount serves. The watcher listens, on
  the bus, to that file's ``fs/`` URI, so the fs mount's own watch (inotify, or its polling
  fallback) follows it; when the file changes, the page's URI is published. Nothing is
  fetched for it. A change of the file is told even if it leaves the page's text the same.
* **Anything else** (a static site's page, a ``self`` page that no served file makes, a site's
  collection): handed to ``poll``, a re-fetch poll — in the box, a
  :class:`~tmsite.subscriptions.records.StampWatcher` whose stamp is :func:`tick` — that reads
  each listened page through the namespace, as a visitor gets it, at most once every
  ``TM_SUB_HTTP_POLL`` seconds, one page at a time, and publishes it when its fingerprint (the
  type, the text, the links) changed. A read is the mount's own: the configured sites only,
  over loopback to their front door, a static site's sitemap and robots.txt fencing it, the
  self-fetch budget and the deadline bounding it; a page not listened to is never fetched.

Views of a page (``?as=``, ``?lines=``…) are watched as the page; its subscribers are told of
the URI they subscribed to (the bus's rule).

Spec: SUB3, HTTP.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING

from tmsite.bus import changes
from tmsite.core.errors import Refusal
from tmsite.core.uri import parse
from tmsite.mounts.fs import uris as fs_uris
from tmsite.mounts.http import pages
from tmsite.mounts.http import uris as http_uris

if TYPE_CHECKING:
    from tmsite.mounts.http.mount import HttpMount

#: Seconds between two fetches of one listened page that no served file makes.
DEFAULT_INTERVAL = 5.0

InterestWatcher = Callable[[str, bool], None]
Publish = Callable[[str], None]


def tick(interval: float) -> Callable[[], Hashable]:
    """A stamp that moves once every ``interval`` seconds (a re-fetch poll's clock)."""
    step = max(interval, 0.001)
    return lambda: int(time.monotonic() // step)


class PageWatcher:
    """Sorts the listened pages: followed through their file, or re-fetched; see the module.

    Args:
        mount: the http mount served (its sites and the fs roots it may link into).
        poll: the interest watcher of the re-fetch poll, told of the pages no file makes.
        publish: what is called with a page's URI when its file changed (the bus's publish).
    """

    def __init__(
        self, mount: HttpMount, poll: InterestWatcher, publish: Publish = changes.publish
    ) -> None:
        self.mount = mount
        self.host = mount.host
        self.poll = poll
        self.publish = publish
        self._lock = threading.Lock()
        #: Page (views' parameters dropped) → the listened URIs it stands for.
        self._held: dict[str, set[str]] = {}
        #: Page → the fs URI of the file it is made from, listened to on the bus.
        self._file: dict[str, str] = {}
        #: The listened pages handed to the poll, by listened URI.
        self._polled: set[str] = set()
        self._remove: list[Callable[[], None]] = []

    def start(self) -> Callable[[], None]:
        """Follow the bus's interest and its fs changes (once); returns what stops it."""
        if self._remove:
            return self.stop
        self._remove = [
            changes.add_listener(self._heard),
            changes.add_interest_watcher(self.interest),
        ]
        return self.stop

    def stop(self) -> None:
        """Stop following the bus and release the files listened to."""
        for remove in self._remove:
            remove()
        self._remove = []
        with self._lock:
            held = list(self._file.values())
            self._file.clear()
            self._held.clear()
        for uri in held:
            changes.release(uri)

    def source_of(self, uri: str) -> str | None:
        """The fs URI of the file the page ``uri`` is made from, or None (it is re-fetched)."""
        parsed = parse(uri)
        if len(parsed.path) < 1:
            return None
        site = self.mount.sites.get(parsed.path[0])
        if site is None or site.kind != "self":
            return None
        segments = parsed.path[1:]
        path = "/" + "/".join(segments) + ("/" if parsed.collection and segments else "")
        try:
            page = pages.page_at(path)
        except (OSError, ValueError):
            return None
        if page is None or page.source.split("/")[0] not in self.mount.fs_roots:
            return None
        return changes.canonical(str(fs_uris.checkout_file_uri(self.host, page.source)))

    def files(self) -> dict[str, str]:
        """The pages followed through their file now: page → the file's fs URI."""
        with self._lock:
            return dict(self._file)

    def interest(self, uri: str, present: bool) -> None:
        """The bus's interest watcher: ``uri`` gained its first listener, or lost its last."""
        try:
            parsed = parse(uri)
        except Refusal:
            return
        if parsed.host != self.host or parsed.mount != http_uris.MOUNT:
            return
        with self._lock:
            acquire, release, polled = self._sort(parsed.keeping().text, uri, present)
        if acquire is not None:
            changes.interest(acquire)  # the fs mount's watch follows the file from now on
        if release is not None:
            changes.release(release)
        if polled:
            self.poll(uri, present)

    def _sort(self, key: str, uri: str, present: bool) -> tuple[str | None, str | None, bool]:
        """(the file to listen to, the file to release, whether the poll is told); locked."""
        acquire: str | None = None
        if present and key not in self._held and uri not in self._polled:
            acquire = self.source_of(key)
            if acquire is not None:
                self._file[key] = acquire
                self._held[key] = set()
        held = self._held.get(key)
        if held is None:  # re-fetched
            if present:
                self._polled.add(uri)
                return None, None, True
            polled = uri in self._polled
            self._polled.discard(uri)
            return None, None, polled
        if present:
            held.add(uri)
            return acquire, None, False
        held.discard(uri)
        if held:
            return None, None, False
        del self._held[key]
        return None, self._file.pop(key, None), False

    def _heard(self, change: changes.Change) -> None:
        if change.kind != "updated" or change.uri is None:
            return
        with self._lock:
            told = [page for page, source in self._file.items() if source == change.uri]
        for page in told:
            self.publish(page)
