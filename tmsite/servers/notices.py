"""What another MCP server says changed, told on the bus as the ``tm://`` addresses it changes.

A :class:`PeerNotices` is told which ``tm://<host>/mcp/<server>/…`` URIs are listened to (its
:meth:`~PeerNotices.interest` is the bus's interest watcher). While any URI of a server is
listened to, it holds a connection of its own to that server (not the warm pool's: a
notification must not wait for a read) and listens to it; when the last listener goes, the
connection is closed and the server's process ends. For each listened resource
(``mcp/<server>/resources/<uri>``) it asks the server ``resources/subscribe`` when the server
declares ``resources.subscribe`` (and ``resources/unsubscribe`` when it is released). What the
server then sends is forwarded:

* ``notifications/resources/updated {uri}`` → ``mcp/<server>/resources/<uri>`` (the URI is
  data: one segment, at most 2048 characters, no control characters; others are dropped);
* ``notifications/resources/list_changed``, ``…/tools/list_changed``,
  ``…/prompts/list_changed`` → the server is asked again what it declares, then
  ``mcp/<server>/resources/`` (``tools/``, ``prompts/``) is published, so a reader sees the
  new declaration. One worker a server does that, at most once every :data:`REPROBE_SECONDS`,
  for everything named since: a flood of notifications costs one probe a period.

Only what a listened URI is affected by is published (the URI itself or a collection above
it). A listened server is pinged every :data:`ALIVE_SECONDS`; one that exited is met again
(with a doubling wait, :data:`RETRY_SECONDS`) while it is listened to, asked again for the
listened resources, and its listened URIs are published once, since what changed meanwhile
was not told. Notifications are heard over stdio as the transport reads them. An HTTP server
that speaks 2026-07-28 is not pinged: a ``subscriptions/listen`` stream is held to it
(:meth:`tmsite.mcpclient.Client.listen`: the POST client's address checks, redirect rules and
connections, each event capped, a flood ended) asking for the listened resources (when it
declares ``resources.subscribe``) and the three list_changed notifications; what it brings
after the acknowledgement is forwarded as above. A change of the listened set hangs the stream
up and opens it again with the new set; a stream that ends otherwise (closed, silent for
:data:`READ_SECONDS`, refused, too large, a flood) is opened again after the same doubling
wait, and once acknowledged again its listened URIs are published once. A 2025-era HTTP
server that opens a session (``Mcp-Session-Id`` on ``initialize``) is heard over that session's
own GET stream (:meth:`tmsite.mcpclient.Client.session_stream`: the same checks and caps): once
the stream is open the listened resources are asked with ``resources/subscribe`` (when it
declares ``resources.subscribe``; a change of the listened set subscribes and unsubscribes in
the session, the stream stays), and what it brings is forwarded as above. A stream that ends is
opened again after the same doubling wait, with ``Last-Event-ID`` when the server numbered its
events, and its listened URIs are published once; a session the server no longer knows (HTTP
404) is opened again with a new ``initialize``; when nothing listens any more the session is
ended (``DELETE``). A server that answers the GET with 405 (no such stream) is not heard: its
session is ended at once and it is not asked again while it is listened to (logged once). A
2025-era HTTP server without a session is not heard (logged once; its record's status still
is, by :mod:`tmsite.subscriptions.records`).

Spec: SUB3, MCP.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from django.db import close_old_connections

from tmsite.core.errors import Refusal
from tmsite.core.uri import TmUri, parse
from tmsite.mcpclient import Client, Hangup, McpClientError, PeerError, Unreachable
from tmsite.servers import grammar
from tmsite.servers.models import McpServer

log = logging.getLogger("tmsite.subscriptions.mcp")

#: The least time between two re-probes of one server for its list_changed notifications.
REPROBE_SECONDS = 5.0
#: Seconds between two pings of a listened server (a server that exits is met again).
ALIVE_SECONDS = 5.0
#: Seconds before the first attempt to meet again a server that exited, and the most between two.
RETRY_SECONDS = (0.5, 30.0)
#: Seconds a notification stream may stay silent before it is ended and opened again (the
#: servers send keep-alives every 15 s or so).
READ_SECONDS = 45.0
#: The first notification of a listen stream.
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
#: The longest upstream URI forwarded.
MAX_UPSTREAM_URI = 2048
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_LISTS = {
    "notifications/resources/list_changed": "resources",
    "notifications/tools/list_changed": "tools",
    "notifications/prompts/list_changed": "prompts",
}

Publish = Callable[[str], None]
Connect = Callable[[McpServer], Client]
Reprobe = Callable[[McpServer], object]


def _connect(record: McpServer) -> Client:
    from tmsite.servers.connect import client_for

    return client_for(record)


def _reprobe(record: McpServer) -> object:
    from tmsite.servers.connect import probe_record

    return probe_record(record)


class _Peer:
    """One listened server: its record, its connection, what is listened to of it."""

    def __init__(self, record: McpServer) -> None:
        self.record = record
        self.uris: set[str] = set()
        self.client: Client | None = None
        self.subscribed: set[str] = set()
        self.can_subscribe: bool | None = False
        self.reprobed = float("-inf")
        #: The listings a list_changed named since the server was last asked again.
        self.pending: set[str] = set()
        self.asking = False
        self.lock = threading.Lock()
        #: Set when nobody listens to the server any more: its keeper stops.
        self.released = threading.Event()
        #: Times the server was met again after it exited (health, tests).
        self.reconnects = 0
        #: Ends the HTTP server's listen stream (to end it, or to open it again with a new set).
        self.hangup: Hangup | None = None
        #: Whether the HTTP server's listen stream (or session stream) is open and acknowledged.
        self.streaming = False
        #: Whether the HTTP server is a 2025-era one heard over its session's GET stream.
        self.session = False
        #: The id of the last event of the session stream, to resume it with.
        self.last_event_id: str | None = None
        #: Sessions opened with the server (a session it forgot is opened again).
        self.sessions = 0


class PeerNotices:
    """Holds connections to the listened servers and forwards what they say changed.

    Args:
        host: the host whose ``mcp/`` URIs are watched.
        publish: what is called with each changed URI (the bus's ``publish``).
        connect: a (not yet started) client for a record (default: the record's own).
        reprobe: asks a record's server again what it declares (default: ``probe_record``).
        affects: the bus's rule for whether a change reaches a listened URI.
        reprobe_seconds: the least time between two re-probes of one server.
        alive_seconds: seconds between two pings of a listened server.
        retry_seconds: the first and the longest wait before meeting again a server that
            exited (doubled after each failed attempt).
        read_seconds: how long an HTTP server's listen stream may stay silent.
    """

    def __init__(
        self,
        host: str,
        publish: Publish,
        *,
        connect: Connect = _connect,
        reprobe: Reprobe = _reprobe,
        affects: Callable[[str, str], str | None] | None = None,
        reprobe_seconds: float = REPROBE_SECONDS,
        alive_seconds: float = ALIVE_SECONDS,
        retry_seconds: tuple[float, float] = RETRY_SECONDS,
        read_seconds: float = READ_SECONDS,
    ) -> None:
        from tmsite.bus import changes

        self.host = host
        self.publish = publish
        self.connect = connect
        self.reprobe = reprobe
        self.affects = affects or changes.affects
        self.reprobe_seconds = reprobe_seconds
        self.alive_seconds = alive_seconds
        self.retry_seconds = retry_seconds
        self.read_seconds = read_seconds
        self._lock = threading.Lock()
        self._peers: dict[str, _Peer] = {}

    # ---- interest -----------------------------------------------------------------------

    def interest(self, uri: str, present: bool) -> None:
        """The bus's interest watcher: ``uri`` gained its first listener, or lost its last."""
        try:
            parsed = parse(uri)
        except Refusal:
            return
        if parsed.host != self.host or parsed.mount != "mcp" or not parsed.path:
            return
        name = parsed.path[0]
        if not grammar.SERVER_NAME.fullmatch(name):
            return
        upstream = _upstream(parsed)
        with self._lock:
            peer = self._peers.get(name)
            if present:
                if peer is None:
                    # Not met yet: its record is read by the peer's own thread (this watcher
                    # is told from a stream's event loop, where the database is not asked).
                    peer = self._peers[name] = _Peer(McpServer(name=name, transport=""))
                    threading.Thread(
                        target=self._start, args=(peer,), name=f"tm-mcp-notices-{name}", daemon=True
                    ).start()
                peer.uris.add(parsed.text)
            elif peer is not None:
                peer.uris.discard(parsed.text)
                if not peer.uris:
                    del self._peers[name]
                    peer.released.set()
                    threading.Thread(target=self._close, args=(peer,), daemon=True).start()
                    return
        if peer is not None and upstream is not None:
            threading.Thread(
                target=self._subscription, args=(peer,), name=f"tm-mcp-sub-{name}", daemon=True
            ).start()

    def _peer(self, name: str) -> _Peer | None:
        with self._lock:
            return self._peers.get(name)

    def asking(self, name: str) -> bool:
        """Whether the server ``name`` is being asked again for a list_changed (or soon)."""
        peer = self._peer(name)
        return peer is not None and peer.asking

    def listened(self) -> dict[str, list[str]]:
        """The servers listened to now and their listened URIs."""
        with self._lock:
            return {name: sorted(p.uris) for name, p in self._peers.items()}

    def streaming(self, name: str) -> bool:
        """Whether the HTTP server ``name``'s listen stream is open and acknowledged now."""
        peer = self._peer(name)
        return peer is not None and peer.streaming

    def connected(self, name: str) -> Client | None:
        """The connection held to the server ``name``, once it is met."""
        peer = self._peer(name)
        return peer.client if peer is not None else None

    # ---- the connection -----------------------------------------------------------------

    def _start(self, peer: _Peer) -> None:
        """Read the server's record, then meet it; a server with none is not listened to."""
        name = peer.record.name
        try:
            record = McpServer.objects.filter(name=name).first()
        except Exception:
            log.exception("reading the record of the MCP server %s failed", name)
            record = None
        finally:
            close_old_connections()
        if record is None or record.transport not in ("stdio", "http"):
            with self._lock:
                if self._peers.get(name) is peer:
                    del self._peers[name]
            return
        with peer.lock:
            peer.record = record
        if not peer.released.is_set():
            self._open(peer)

    def _open(self, peer: _Peer) -> None:
        if peer.record.transport == "http":
            self._hear(peer)
        elif self._meet(peer):
            self._keep(peer)

    def _hear(self, peer: _Peer) -> None:
        """Hold a stream to an HTTP server while it is listened to; then end its session."""
        try:
            self._hear_streams(peer)
        finally:
            if peer.released.is_set():
                self._drop(peer)

    def _hear_streams(self, peer: _Peer) -> None:
        """Hold a ``subscriptions/listen`` stream (or a 2025-era session's GET stream).

        The listen stream asks for the listened resources and the three list_changed
        notifications; what it brings is told as a stdio server's notifications are. A listened
        set that changes hangs the stream up and opens it again with the new set; a stream that
        ends otherwise (closed, silent past ``read_seconds``, refused, a flood) is opened again
        after a doubling wait, and once acknowledged again, every listened URI is published.
        A session stream is held the same way (see :meth:`_session_once`); a session the server
        forgot is dropped and a new one opened after the wait. A 2025-era server without a
        session is not listened to (logged once).
        """
        name = peer.record.name
        first, most = self.retry_seconds
        wait = first
        missed = False
        while not peer.released.is_set():
            client = peer.client or self._meet_http(peer)
            if client is None:
                if peer.released.is_set() or peer.can_subscribe is None:
                    return
            else:
                once = self._session_once if peer.session else self._listen_once
                acked, opened = once(peer, client, missed=missed)
                if peer.released.is_set():
                    return
                if acked == "hung up":  # the listened set changed: open it again at once
                    wait = first
                    continue
                if self._session_ended(peer, acked):
                    return
                missed = missed or acked in ("acknowledged", "gone")
                if acked == "acknowledged" and time.monotonic() - opened > wait:
                    wait = first
            if peer.released.wait(wait):
                return
            wait = min(wait * 2, most)
            if client is not None:
                peer.reconnects += 1
                log.info("listening again to the MCP server %s", name)

    def _session_ended(self, peer: _Peer, how: str) -> bool:
        """Drop a session that cannot go on; True if the server is not to be asked again."""
        if how == "refused":  # no session stream: nothing to hear, nothing retried
            log.warning(
                "the MCP server %s offers no session stream (HTTP 405): its notifications are "
                "not heard",
                peer.record.name,
            )
            self._drop(peer)
            with peer.lock:
                peer.can_subscribe = None
            return True
        if how == "gone":  # the server forgot the session: met again after the wait
            log.info("the MCP server %s ended its session", peer.record.name)
            self._drop(peer)
        return False

    def _drop(self, peer: _Peer) -> None:
        """Close the connection held to an HTTP server (its session, if any, is ended)."""
        with peer.lock:
            client, peer.client = peer.client, None
            peer.subscribed = set()
        if client is not None:
            client.close()

    def _meet_http(self, peer: _Peer) -> Client | None:
        """Connect to an HTTP server; None if it failed (``can_subscribe`` None: never listen)."""
        try:
            client = self.connect(peer.record)
            hs = client.handshake()
        except Exception as exc:  # a server that does not answer tells nothing
            log.warning("listening to the MCP server %s failed: %s", peer.record.name, exc)
            return None
        if hs.era != "discover" and not hs.session:
            log.warning(
                "the MCP server %s speaks %s over HTTP without a session: its notifications "
                "are not heard (only a 2026-07-28 server's subscriptions/listen is, or a "
                "2025-era session's own stream)",
                peer.record.name,
                hs.protocol_version,
            )
            client.close()
            with peer.lock:
                peer.can_subscribe = None
            return None
        resources = hs.capabilities.get("resources")
        with peer.lock:
            peer.client = client
            peer.can_subscribe = isinstance(resources, dict) and resources.get("subscribe") is True
            peer.session = hs.era == "initialize"
            if peer.session:
                peer.subscribed, peer.last_event_id = set(), None
                peer.sessions += 1
        return client

    def _session_once(self, peer: _Peer, client: Client, *, missed: bool) -> tuple[str, float]:
        """One GET stream of a 2025-era session, until it ends: ``(how, opened)``.

        ``how`` is ``"acknowledged"`` (it was open), ``"gone"`` (the server no longer knows the
        session: HTTP 404), ``"refused"`` (it offers no such stream: HTTP 405), ``"hung up"`` or
        ``""``. Once the stream is open (so that nothing
        the server says goes to no stream), the listened resources are subscribed in the
        session and, if ``missed``, the listened URIs are published once; the stream is then
        read until it ends.
        """
        hangup = Hangup()
        with peer.lock:
            peer.hangup = hangup
        started = time.monotonic()
        if peer.released.is_set():
            return "hung up", started
        open_: list[bool] = []

        def opened() -> None:
            self._session_subscribe(peer, client)
            if missed:  # what changed while not heard was not told
                self._publish_listened(peer)
            open_.append(True)
            peer.streaming = True
            # A change of the listened set from now on is subscribed by _subscription; one
            # made since the first asking, here (nothing is asked when nothing changed).
            self._session_subscribe(peer, client)

        def event_id(value: str) -> None:
            peer.last_event_id = value

        try:
            ended = client.session_stream(
                lambda method, params: self._told(peer, method, params),
                hangup,
                opened=opened,
                event_id=event_id,
                last_event_id=peer.last_event_id,
                read_seconds=self.read_seconds,
            )
        except McpClientError as exc:
            if _gone(exc):
                return "gone", started
            if isinstance(exc, Unreachable) and exc.status == 405:
                return "refused", started
            ended = f"failed: {exc}"
        finally:
            peer.streaming = False
        if hangup.hung:
            return "hung up", started
        log.info("the session stream of the MCP server %s ended: %s", peer.record.name, ended)
        return ("acknowledged" if open_ else ""), started

    def _session_subscribe(self, peer: _Peer, client: Client) -> None:
        """Subscribe the listened resources in the session, unsubscribe the others.

        Raises:
            McpClientError: the session is gone (HTTP 404); other refusals are logged and the
                resource is asked again at the next change of the listened set.
        """
        with peer.lock:
            if not peer.can_subscribe or peer.client is not client:
                return
            try:
                _subscribe_to(client, peer, self._wanted(peer))
            except McpClientError as exc:
                if _gone(exc):
                    raise
                log.warning("subscribing at the MCP server %s failed: %s", peer.record.name, exc)

    def _listen_once(self, peer: _Peer, client: Client, *, missed: bool) -> tuple[str, float]:
        """One listen stream, until it ends: ``("acknowledged" | "hung up" | "", opened)``."""
        hangup = Hangup()
        wanted = self._wanted(peer)
        with peer.lock:
            peer.hangup = hangup
            peer.subscribed = wanted if peer.can_subscribe else set()
            asked = sorted(peer.subscribed)
        if peer.released.is_set():
            return "hung up", time.monotonic()
        notifications: dict[str, Any] = {
            "toolsListChanged": True,
            "promptsListChanged": True,
            "resourcesListChanged": True,
        }
        if asked:
            notifications["resourceSubscriptions"] = asked
        acknowledged: list[bool] = []

        def told(method: str, params: dict[str, Any]) -> None:
            if method == ACKNOWLEDGED:
                if not acknowledged and missed:  # what changed while not heard was not told
                    self._publish_listened(peer)
                acknowledged.append(True)
                peer.streaming = True
            elif acknowledged:
                self._told(peer, method, params)

        opened = time.monotonic()
        try:
            ended = client.listen(notifications, told, hangup, read_seconds=self.read_seconds)
        except McpClientError as exc:
            ended = f"failed: {exc}"
        finally:
            peer.streaming = False
        if hangup.hung:
            return "hung up", opened
        log.info("the notification stream of the MCP server %s ended: %s", peer.record.name, ended)
        return ("acknowledged" if acknowledged else ""), opened

    def _meet(self, peer: _Peer) -> bool:
        """Connect to the server and ask for the listened resources; False if it failed."""
        try:
            client = self.connect(peer.record)
            client.on_notification(lambda method, params: self._told(peer, method, params))
            hs = client.handshake()
        except Exception as exc:  # a server that does not answer tells nothing
            log.warning("listening to the MCP server %s failed: %s", peer.record.name, exc)
            return False
        resources = hs.capabilities.get("resources")
        with peer.lock:
            peer.client = client
            peer.can_subscribe = isinstance(resources, dict) and resources.get("subscribe") is True
        if peer.released.is_set():
            self._close(peer)
            return False
        self._subscription(peer)
        return True

    def _keep(self, peer: _Peer) -> None:
        """While the server is listened to, ping it; one that exited is met again, with backoff.

        Once met again, every listened URI of it is published: what changed meanwhile was not
        told, so its readers read again.
        """
        first, most = self.retry_seconds
        while not peer.released.wait(self.alive_seconds):
            with peer.lock:
                client = peer.client
            try:
                if client is None:
                    raise McpClientError("not connected")
                client.request("ping")
                continue
            except PeerError:  # it answered, if only to say it has no ping: it is there
                continue
            except McpClientError as exc:
                log.warning("the MCP server %s stopped answering (%s)", peer.record.name, exc)
            with peer.lock:
                peer.client, peer.subscribed = None, set()
            if client is not None:
                client.close()
            wait = first
            while not peer.released.wait(wait):
                if self._meet(peer):
                    peer.reconnects += 1
                    self._publish_listened(peer)
                    break
                wait = min(wait * 2, most)

    def _publish_listened(self, peer: _Peer) -> None:
        with self._lock:
            listened = sorted(peer.uris)
        for uri in listened:
            self.publish(uri)

    def _wanted(self, peer: _Peer) -> set[str]:
        """The upstream URIs of the listened resources of ``peer``."""
        with self._lock:
            return {u for u in (_upstream(parse(t)) for t in peer.uris) if u is not None}

    def _close(self, peer: _Peer) -> None:
        with peer.lock:
            if peer.hangup is not None:
                peer.hangup()
            if peer.record.transport == "http":
                client, peer.client = peer.client, None
                if client is not None:
                    client.close()
                return
            client, peer.client = peer.client, None
            subscribed, peer.subscribed = set(peer.subscribed), set()
        if client is None:
            return
        for upstream in sorted(subscribed):
            try:
                client.unsubscribe_resource(upstream)
            except McpClientError:
                break
        client.close()

    def _subscription(self, peer: _Peer) -> None:
        """Ask the server to tell of the listened resources (and no longer of the others)."""
        if peer.session:  # a 2025-era session: asked in it while its stream is open
            client = peer.client
            if client is not None and peer.streaming:
                try:
                    self._session_subscribe(peer, client)
                except McpClientError as exc:  # the stream meets the same and opens it again
                    log.info("the MCP server %s ended its session: %s", peer.record.name, exc)
            return
        wanted = self._wanted(peer)
        with peer.lock:
            client = peer.client
            if client is None or not peer.can_subscribe:
                return
            if peer.record.transport == "http":  # the listen stream asks again for the new set
                if wanted != peer.subscribed and peer.hangup is not None:
                    peer.hangup()
                return
            try:
                _subscribe_to(client, peer, wanted)
            except McpClientError as exc:
                log.warning("subscribing at the MCP server %s failed: %s", peer.record.name, exc)

    # ---- what the server says -----------------------------------------------------------

    def _told(self, peer: _Peer, method: str, params: dict[str, Any]) -> None:
        name = peer.record.name
        if method == "notifications/resources/updated":
            upstream = params.get("uri")
            if (
                not isinstance(upstream, str)
                or not upstream
                or len(upstream) > MAX_UPSTREAM_URI
                or _CONTROL.search(upstream)
            ):
                return
            self._forward(peer, str(TmUri(self.host, "mcp", (name, "resources", upstream))))
        elif method in _LISTS:
            with peer.lock:
                peer.pending.add(_LISTS[method])
                start = not peer.asking
                peer.asking = True
            if start:  # one worker a server, however many notifications come
                threading.Thread(target=self._listings_changed, args=(peer,), daemon=True).start()

    def _listings_changed(self, peer: _Peer) -> None:
        """Ask the server again (at most once every ``REPROBE_SECONDS``), then tell."""
        while True:
            with peer.lock:
                wait = peer.reprobed + self.reprobe_seconds - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            with self._lock:
                listened = self._peers.get(peer.record.name) is peer
            with peer.lock:
                sections, peer.pending = sorted(peer.pending), set()
                if not sections or not listened:  # nothing more, or nobody listens now
                    peer.asking = False
                    return
                peer.reprobed = time.monotonic()
            try:
                self.reprobe(peer.record)
            except Exception:
                log.exception("asking the MCP server %s again failed", peer.record.name)
            finally:
                close_old_connections()
            for section in sections:
                uri = TmUri(self.host, "mcp", (peer.record.name, section), True)
                self._forward(peer, str(uri))

    def _forward(self, peer: _Peer, changed: str) -> None:
        with self._lock:
            uris = list(peer.uris)
        if any(self.affects(uri, changed) is not None for uri in uris):
            self.publish(changed)


def _subscribe_to(client: Client, peer: _Peer, wanted: set[str]) -> None:
    """Subscribe ``wanted`` at the peer and unsubscribe the rest, noting each as it is done."""
    for upstream in sorted(wanted - peer.subscribed):
        client.subscribe_resource(upstream)
        peer.subscribed.add(upstream)
    for upstream in sorted(peer.subscribed - wanted):
        client.unsubscribe_resource(upstream)
        peer.subscribed.discard(upstream)


def _gone(exc: McpClientError) -> bool:
    """Whether a failure says the server no longer knows the session (HTTP 404)."""
    return isinstance(exc, Unreachable | PeerError) and exc.status == 404


def _upstream(uri: TmUri) -> str | None:
    """The upstream URI a ``mcp/<server>/resources/<uri>`` names, else None."""
    path = uri.path
    if len(path) == 3 and path[1] == "resources" and not uri.collection:
        return path[2]
    return None
