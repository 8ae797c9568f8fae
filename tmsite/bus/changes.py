"""The change bus: change sources publish what changed; open streams listen.

A change source (the fs watcher, the git refs, entity signals, a peer's stream, …) calls

* :func:`publish` with the full ``tm://`` URI of what changed, or
* :func:`publish_list_changed` when what ``tools/list``, ``prompts/list`` or ``resources/list``
  answers changed,

from any thread. Every listener added with :func:`add_listener` is then called with one
:class:`Change`, in the publisher's thread (or the bus's own receiving thread); a listener must be
quick and must not block (an event-loop stream hands it to its loop with
``call_soon_threadsafe``). A listener that raises is logged and kept.

Which subscription a change reaches (:func:`affects`), given URIs as :mod:`tmsite.core.uri` parses
them:

* Matching is on the URI's *key*: its identity (host, mount, segments, trailing ``/``) plus its
  ``at=`` parameter, if any. Every other parameter (``as=``, ``lines=``, ``pointer=``, …) is a
  view of the same resource, so a change of ``tm://h/fs/a.md`` reaches a subscription to
  ``tm://h/fs/a.md?lines=1-9``, and that subscriber is told of the URI it subscribed to. ``at=``
  picks a version: a subscription pinned by ``at=`` is reached only by a change published with
  the same ``at=`` (a source never publishes one for a commit id, so those never fire).
* A subscription to a collection (a URI ending in ``/``: a directory, a mount, a host's root
  ``tm://h/``) is also reached by a change of anything beneath it — any URI whose key path
  starts with the collection's, with the same ``at=`` — and its subscriber is told of the
  changed child's URI (as it was published, canonical). A change of a collection itself reaches
  subscribers to that collection, not those of its children.
* ``tm://``, the list of hosts, is a collection holding every host.
* A standing view (``as=search``: :data:`STANDING_FACETS`) is keyed on all its parameters and
  is no collection: only its own source's change reaches it, when its answer changed.
* A change published ``exact`` (:func:`publish` with ``exact=True``: a URI that is itself a
  secret, like a proposal's receipt) reaches only subscribers to that very URI, never those of
  a collection above it, who would otherwise be told it.

Interest: a source watches only what someone listens to. A stream calls :func:`interest` for
each URI it subscribes to and :func:`release` when it ends (or uses :func:`listening`); counts
are kept per canonical URI. A source calls :func:`add_interest_watcher` with a callback
``(uri, present)``: it is called at once with ``present=True`` for every URI listened to now,
then whenever a URI gains its first listener (``True``) or loses its last (``False``). Watchers
are called under the bus's interest lock, in order, so a source never sees a release before the
interest it releases; they must be quick and may call :func:`interests`.

Arming: a source that learns of an interest starts watching on its own thread, a moment later.
So that an acknowledgement means "from now on you are told", a source also registers an *arm*
(:func:`add_arm`): a callable that returns once it watches everything listened to now — its
baseline taken (a ref's commit, a record's fingerprint, a list's digest) or its file watch set
up — or when its deadline passes. A stream takes its interest, then calls :func:`arm`, and only
then acknowledges; a change made after the acknowledgement is seen against that baseline.

A :class:`Change` of kind ``lost`` says the bus can no longer promise delivery (its shared
backend went away): a stream that gets one ends gracefully so its client listens again.

Two backends, one interface:

* **local** (the default; the embedded box): what a process publishes reaches that process's
  listeners, in the publisher's thread.
* **redis** (``TM_REDIS_URL`` is set, unless ``TM_SUB_BUS=local``):
  :mod:`tmsite.bus.redis_bus`. A change still reaches the publisher's own listeners
  at once, in its thread, and is also published on one Redis channel (named after
  ``TM_CACHE_PREFIX``); each process's receiving thread, started by its first listener,
  dispatches what other processes published to its listeners (its own messages it skips: each
  change reaches each listener once). When Redis goes away every listener is told ``lost``;
  a listener added while it is away is told ``lost`` once it is back, since it heard only this
  process's changes meanwhile.

Coalescing: the same change is often seen by several processes at once (every worker of every
machine watches a shared checkout or polls the same database for its own listeners), and each
publishes it. An ``updated`` or ``list_changed`` change that was dispatched from *another*
process less than ``TM_SUB_BUS_COALESCE`` seconds (0.25) before is dropped; a change from the
process that was dispatched last always passes, since a source publishes a change once (its own
debounce) and a second one from it is a second change.

Interest stays per process: each process's change sources watch what its own listeners listen
to, since each machine sees the files, refs and records it serves. What only one process sees
(a receipt decided there, a model saved there) is published by that process whatever is
listened to, so it needs no interest elsewhere.

Spec: SUB3.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from tmsite.core import uri as tmuri

log = logging.getLogger("tmsite.subscriptions")

ListKind = Literal["tools", "prompts", "resources"]
LIST_KINDS: tuple[ListKind, ...] = ("tools", "prompts", "resources")
ChangeKind = Literal["updated", "list_changed", "lost"]

#: The parameter that is part of what a subscription names (a version), not a view of it.
PINNING_PARAMS = ("at",)
#: Views computed over a whole collection, each a resource of its own: a change below the
#: collection does not reach them; their own source publishes them (a standing search).
STANDING_FACETS = ("search",)


@dataclass(frozen=True)
class Change:
    """One change on the bus.

    Attributes:
        kind: ``updated`` (``uri`` changed), ``list_changed`` (the list ``list_kind`` changed)
            or ``lost`` (the bus cannot promise delivery any more).
        uri: The canonical URI that changed (``updated`` only).
        list_kind: Which list changed (``list_changed`` only).
        exact: ``uri`` reaches its own subscribers only, no collection's (``updated`` only).
    """

    kind: ChangeKind
    uri: str | None = None
    list_kind: ListKind | None = None
    exact: bool = False


Listener = Callable[[Change], None]
InterestWatcher = Callable[[str, bool], None]

#: Seconds within which the same change from another process is dropped, by default.
COALESCE_SECONDS = 0.25


class Backend(Protocol):
    """What carries changes between processes (:mod:`tmsite.bus.redis_bus`)."""

    name: str

    def send(self, change: Change, origin: str) -> None:
        """Hand ``change`` on to the other processes; never blocks, never raises."""

    def wanted(self) -> None:
        """A listener was added: start receiving (once; later calls do nothing)."""

    def promising(self) -> bool:
        """Whether what other processes publish reaches this one now (or may: starting)."""

    def status(self) -> dict[str, Any]:
        """What health says of it."""

    def close(self) -> None:
        """Stop its threads and close its connections (tests, process exit)."""


# --- URIs --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Key:
    """What matching compares: the identity's segments, collection or not, and ``at=``."""

    host: str
    segments: tuple[str, ...]
    collection: bool
    pins: tuple[tuple[str, str], ...]

    def holds(self, other: Key) -> bool:
        """Whether ``other`` is beneath this collection key (never itself)."""
        if self.pins != other.pins or not self.collection:
            return False
        if not self.host:  # tm://: every host
            return bool(other.host)
        n = len(self.segments)
        return (
            other.host == self.host
            and len(other.segments) > n
            and other.segments[:n] == self.segments
        )


@functools.lru_cache(maxsize=4096)  # one change is matched by every stream: parsed once
def key_of(text: str) -> Key:
    """The matching key of ``text``.

    Raises:
        BadUri, BadFacet: ``text`` is not a ``tm://`` URI :mod:`tmsite.core.uri` parses.
    """
    parsed = tmuri.parse(text)
    segments = (parsed.mount, *parsed.path) if parsed.mount is not None else ()
    if dict(parsed.params).get("as") in STANDING_FACETS:
        return Key(parsed.host, segments, False, tuple(sorted(parsed.params)))
    pins = tuple((k, v) for k, v in parsed.params if k in PINNING_PARAMS)
    collection = parsed.collection or parsed.is_hosts or parsed.is_root
    return Key(parsed.host, segments, collection, tuple(sorted(pins)))


def canonical(text: str) -> str:
    """The canonical text of a ``tm://`` URI (parameters in their canonical order).

    Raises:
        BadUri, BadFacet: not a ``tm://`` URI.
    """
    return tmuri.parse(text).text


def affects(subscribed: str, changed: str, *, exact: bool = False) -> str | None:
    """The URI a subscriber to ``subscribed`` is told of when ``changed`` changed, or None.

    Both must be ``tm://`` URIs (see the module's text for the rule); an ``exact`` change
    reaches no collection's subscribers.
    """
    want, got = key_of(subscribed), key_of(changed)
    if want == got:
        return subscribed
    if not exact and want.holds(got):
        return canonical(changed)
    return None


def told(subscribed: Iterable[str], change: Change) -> str | None:
    """The URI a subscriber to ``subscribed`` (its first URI ``change`` reaches) is told of."""
    if change.kind == "updated" and change.uri is not None:
        for uri in subscribed:
            found = affects(uri, change.uri, exact=change.exact)
            if found is not None:
                return found
    return None


# --- the bus -----------------------------------------------------------------------------------


class Bus:
    """Listeners and interest counts of one process (thread-safe)."""

    def __init__(self, coalesce: float = COALESCE_SECONDS) -> None:
        self._lock = threading.Lock()
        self._listeners: dict[int, Listener] = {}
        self._next = 0
        #: This process on the wire: its own messages coming back are skipped.
        self.origin = secrets.token_hex(8)
        self.backend: Backend | None = None
        self.coalesce = max(0.0, float(coalesce))
        #: Per change, when it was last dispatched and from which process.
        self._recent: dict[Change, tuple[float, str]] = {}
        #: Listeners added while the backend was away: told ``lost`` when it is back.
        self._unpromised: set[int] = set()
        self._interest_lock = threading.RLock()
        self._interest: dict[str, int] = {}
        self._watchers: dict[int, InterestWatcher] = {}
        self._next_watcher = 0
        #: Changes published, coalesced, and outages (health).
        self.published = 0
        self.coalesced = 0
        self.lost = 0

    # the backend

    def attach(self, backend: Backend | None) -> Backend | None:
        """Carry changes through ``backend`` (None: in process only); returns the one before."""
        with self._lock:
            previous, self.backend = self.backend, backend
            self._recent.clear()
            self._unpromised.clear()
            wanted = backend is not None and bool(self._listeners)
        if wanted and backend is not None:
            backend.wanted()
        return previous

    def publish(self, change: Change) -> None:
        """``change`` happened in this process: tell its listeners, then the other processes."""
        self.dispatch(change)
        backend = self.backend
        if backend is not None:
            backend.send(change, self.origin)

    def receive(self, change: Change, origin: str) -> None:
        """``change`` published by process ``origin`` (the backend's thread): dispatch it."""
        if origin != self.origin:
            self.dispatch(change, origin)

    def lose(self) -> None:
        """The backend went away: every listener is told ``lost``."""
        with self._lock:
            listeners = list(self._listeners.values())
            self._unpromised.clear()
            self.lost += 1
        self._call(listeners, Change("lost"))

    def promised(self) -> None:
        """The backend is back: who was added while it was away is told ``lost`` now."""
        with self._lock:
            listeners = [self._listeners[t] for t in self._unpromised if t in self._listeners]
            self._unpromised.clear()
        self._call(listeners, Change("lost"))

    def status(self) -> dict[str, Any]:
        """What health says of the bus: its backend, listeners and counts."""
        backend = self.backend
        out: dict[str, Any] = {"backend": "local" if backend is None else backend.name}
        with self._lock:
            out.update(
                listeners=len(self._listeners),
                published=self.published,
                coalesced=self.coalesced,
                lost=self.lost,
            )
        if backend is not None:
            out.update(backend.status())
        return out

    # listeners

    def add_listener(self, callback: Listener) -> Callable[[], None]:
        """Call ``callback`` for every change from now on; returns what removes it."""
        with self._lock:
            self._next += 1
            token = self._next
            self._listeners[token] = callback
            backend = self.backend
        if backend is not None:
            backend.wanted()
            if not backend.promising():
                with self._lock:
                    self._unpromised.add(token)

        def remove() -> None:
            with self._lock:
                self._listeners.pop(token, None)
                self._unpromised.discard(token)

        return remove

    def dispatch(self, change: Change, origin: str | None = None) -> None:
        """Call every listener with ``change``, unless it was coalesced (see the module).

        ``origin`` is the process that published it (this one by default). A listener that
        raises is logged, and kept.
        """
        origin = self.origin if origin is None else origin
        now = time.monotonic()
        with self._lock:
            if self.backend is not None and self.coalesce > 0 and change.kind != "lost":
                last = self._recent.get(change)
                if last is not None and last[1] != origin and now - last[0] < self.coalesce:
                    self.coalesced += 1
                    return
                if len(self._recent) >= 4096:
                    self._recent = {
                        c: seen for c, seen in self._recent.items() if now - seen[0] < self.coalesce
                    }
                self._recent[change] = (now, origin)
            listeners = list(self._listeners.values())
            self.published += 1
        self._call(listeners, change)

    @staticmethod
    def _call(listeners: list[Listener], change: Change) -> None:
        for listener in listeners:
            try:
                listener(change)
            except Exception:
                log.exception("a change listener failed on %s", change)

    # interest

    def interest(self, uri: str) -> str:
        """Count one more listener of ``uri``; returns its canonical text."""
        text = canonical(uri)
        with self._interest_lock:
            count = self._interest.get(text, 0)
            self._interest[text] = count + 1
            if count == 0:
                self._tell(text, True)
        return text

    def release(self, uri: str) -> None:
        """Count one listener of ``uri`` fewer (a URI not listened to is ignored)."""
        text = canonical(uri)
        with self._interest_lock:
            count = self._interest.get(text, 0)
            if count <= 0:
                return
            if count == 1:
                del self._interest[text]
                self._tell(text, False)
            else:
                self._interest[text] = count - 1

    def _tell(self, text: str, present: bool) -> None:
        for watcher in list(self._watchers.values()):
            try:
                watcher(text, present)
            except Exception:
                log.exception("an interest watcher failed on %s", text)

    def interests(self, prefix: str = "") -> dict[str, int]:
        """The URIs listened to now (those starting with ``prefix``) and their listener counts."""
        with self._interest_lock:
            return {u: n for u, n in self._interest.items() if u.startswith(prefix)}

    def add_interest_watcher(self, callback: InterestWatcher) -> Callable[[], None]:
        """Tell ``callback`` of every URI listened to now, then of each change; see the module."""
        with self._interest_lock:
            self._next_watcher += 1
            token = self._next_watcher
            self._watchers[token] = callback
            for text in list(self._interest):
                try:
                    callback(text, True)
                except Exception:
                    log.exception("an interest watcher failed on %s", text)

        def remove() -> None:
            with self._interest_lock:
                self._watchers.pop(token, None)

        return remove


_bus = Bus()


def bus() -> Bus:
    """This process's bus (its backend attached at start-up: ``redis_bus.install``)."""
    return _bus


#: This process's bus's own methods, as the module's functions (see the module's text).
status = _bus.status
add_listener = _bus.add_listener
interest = _bus.interest
release = _bus.release
interests = _bus.interests
add_interest_watcher = _bus.add_interest_watcher


def publish(uri: str, *, exact: bool = False) -> None:
    """``uri`` (a full ``tm://`` URI) changed: tell the listeners.

    ``exact``: tell only the subscribers to ``uri`` itself (a URI that is a secret).

    Raises:
        BadUri, BadFacet: ``uri`` is not a ``tm://`` URI.
    """
    _bus.publish(Change("updated", uri=canonical(uri), exact=exact))


def publish_list_changed(kind: ListKind) -> None:
    """What ``<kind>/list`` answers changed: tell the listeners."""
    if kind not in LIST_KINDS:
        raise ValueError(f"not a list kind: {kind!r}")
    _bus.publish(Change("list_changed", list_kind=kind))


#: Seconds a stream waits for the sources to be armed before it acknowledges all the same.
ARM_SECONDS = 5.0
#: Blocks until its source watches everything listened to now, or the deadline (a
#: ``time.monotonic()`` value) passes; returns whether it does.
Arm = Callable[[float], bool]
_arms_lock = threading.Lock()
_arms: dict[int, Arm] = {}


def add_arm(arm: Arm) -> Callable[[], None]:
    """Register a source's arm (see the module); returns what removes it."""
    with _arms_lock:
        token = max(_arms, default=0) + 1
        _arms[token] = arm

    def remove() -> None:
        with _arms_lock:
            _arms.pop(token, None)

    return remove


def arm(seconds: float = ARM_SECONDS) -> bool:
    """Wait until every source watches what is listened to now; False: one did not in time.

    Call it after :func:`interest` (and :func:`listen_lists`), before telling the client it is
    listened to, off the event loop: it may read a ref, a record or the list it watches.
    """
    deadline = time.monotonic() + seconds
    with _arms_lock:
        arms = list(_arms.values())
    ready = True
    for one in arms:
        try:
            ready = one(deadline) and ready
        except Exception:
            log.exception("a change source could not be armed")
            ready = False
    if not ready:
        log.warning("a change source was not armed within %.1f s", seconds)
    return ready


_lists_lock = threading.Lock()
_lists: dict[ListKind, int] = {}


def listen_lists(kinds: Iterable[ListKind], present: bool = True) -> None:
    """A stream listens to the changes of these lists (``present``), or no longer."""
    with _lists_lock:
        for kind in kinds:
            _lists[kind] = _lists.get(kind, 0) + (1 if present else -1)
            if _lists[kind] <= 0:
                del _lists[kind]


def lists_listened() -> frozenset[ListKind]:
    """The lists whose changes some stream listens to now (a list source polls only those)."""
    with _lists_lock:
        return frozenset(_lists)


@contextlib.contextmanager
def listening(uris: Iterable[str]) -> Iterator[list[str]]:
    """Interest in each of ``uris`` for the ``with`` block; yields their canonical texts."""
    held: list[str] = []
    try:
        for uri in uris:
            held.append(interest(uri))
        yield held
    finally:
        for text in held:
            release(text)
