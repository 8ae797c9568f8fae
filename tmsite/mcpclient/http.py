"""The Streamable HTTP transport: one POST per message, answered by JSON or an event stream.

Redirects are followed by hand and only within the server's own origin (307/308 keep the POST);
a redirect anywhere else is refused, so a token never leaves the origin it was configured for.
Given a :class:`~tmsite.core.addresses.DialPolicy`, every URL (the endpoint and each redirect
target) is judged before a request, and every connection resolves its host itself, judges each
address and dials the judged address (TLS still verifies the host name): a refusal is
:class:`Refused`, raised before any packet is sent.
Bodies are read while streaming and stopped at the byte cap; an event stream is read event by
event until the response to the request arrives. Server→client requests that arrive on a stream
are answered with -32601 in a POST of their own. A session id issued on the handshake is sent on
every later request and released with DELETE on close.

:meth:`HttpTransport.listen` holds one POST open as a notification stream (2026-07-28
``subscriptions/listen``): the same address checks and redirect rules as every POST, each event
capped at :data:`LISTEN_EVENT_BYTES`, a read deadline per chunk (a silent stream is ended), and a
flood cap (:data:`LISTEN_BYTES_PER_SECOND`, :data:`LISTEN_EVENTS_PER_SECOND`) that ends a
stream arriving faster than a peer's notices can honestly come. A :class:`Hangup` ends it from
another thread. :meth:`HttpTransport.session_stream` holds a 2025-era session's own GET stream
the same way (the same checks and caps; event ids kept for ``Last-Event-ID``).

Spec: MCP, SUB3.
"""

from __future__ import annotations

import contextlib
import logging
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpcore
import httpx
from typing_extensions import override

from tmsite.core.addresses import AddressRefused, DialPolicy
from tmsite.mcpclient import jsonrpc
from tmsite.mcpclient.errors import (
    Gated,
    McpClientError,
    PeerError,
    ProtocolError,
    Refused,
    Timeout,
    TooLarge,
    Unreachable,
)
from tmsite.mcpclient.limits import Deadline, Limits

log = logging.getLogger("tmsite.mcpclient.http")

SESSION_HEADER = "Mcp-Session-Id"
_SESSION_ID = re.compile(r"^[\x21-\x7e]{1,1024}$")
_MAX_REDIRECTS = 3
_ERROR_BODY_CAP = 64 * 1024
#: The most bytes of one event (one message) on a notification stream.
LISTEN_EVENT_BYTES = 64 * 1024
#: The most bytes, and events, a notification stream may bring in one second before it is ended.
LISTEN_BYTES_PER_SECOND = 256 * 1024
LISTEN_EVENTS_PER_SECOND = 200


class Hangup:
    """Ends a notification stream from another thread (shuts its socket down)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._socket: socket.socket | None = None
        self.hung = False

    def attach(self, sock: socket.socket | None) -> None:
        """The stream's socket, once it is open (shut down at once if already hung up)."""
        with self._lock:
            self._socket = sock
            if self.hung:
                self._shut()

    def __call__(self) -> None:
        """End the stream now (or as soon as it opens)."""
        with self._lock:
            self.hung = True
            self._shut()

    def _shut(self) -> None:
        if self._socket is not None:
            with contextlib.suppress(OSError):
                self._socket.shutdown(socket.SHUT_RDWR)


class _Flood:
    """Counts a stream's bytes and events per second; raises once a second brings too many."""

    def __init__(self, max_bytes: int, max_events: int) -> None:
        self.max_bytes = max_bytes
        self.max_events = max_events
        self.start = time.monotonic()
        self.bytes = 0
        self.events = 0

    def count(self, size: int, events: int) -> None:
        now = time.monotonic()
        if now - self.start >= 1.0:
            self.start, self.bytes, self.events = now, 0, 0
        self.bytes += size
        self.events += events
        if self.bytes > self.max_bytes or self.events > self.max_events:
            raise ProtocolError(
                "the notification stream came faster than "
                f"{self.max_bytes} bytes or {self.max_events} events a second"
            )


def origin(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of a URL, with the scheme's default port filled in."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return parts.scheme, (parts.hostname or "").lower(), port


def refused(exc: AddressRefused) -> Refused:
    """The client error for a URL or address the policy refuses."""
    return Refused(exc.what, exc.host, str(exc), address=exc.address, reason=exc.reason)


class _JudgedBackend(httpcore.SyncBackend):
    """Connects only to addresses the policy takes: resolves, judges, dials what it judged."""

    def __init__(self, policy: DialPolicy, scheme: str) -> None:
        self.policy = policy
        self.scheme = scheme

    @override
    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        addresses = self.policy.resolve(host, port, self.scheme)  # AddressRefused propagates
        failure: httpcore.ConnectError | httpcore.ConnectTimeout | None = None
        for address in addresses:
            try:
                return super().connect_tcp(address, port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None
        raise failure


def _judged_transport(policy: DialPolicy, scheme: str) -> httpx.HTTPTransport:
    """An httpx transport whose every connection goes through :class:`_JudgedBackend`."""
    transport = httpx.HTTPTransport(trust_env=False)
    # httpx takes no network backend: its pool is rebuilt with one (the same defaults).
    transport._pool = httpcore.ConnectionPool(
        ssl_context=httpx.create_ssl_context(trust_env=False),
        network_backend=_JudgedBackend(policy, scheme),
    )
    return transport


class HttpTransport:
    """A Streamable HTTP endpoint and the state one client keeps for it."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None,
        limits: Limits,
        on_server_request: Callable[[str], None],
        user_agent: str,
        policy: DialPolicy | None = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        if parts.username or parts.password:
            raise ValueError("credentials belong in the token, not in the URL")
        self.url = url
        self.token = token
        self.limits = limits
        self.session_id: str | None = None
        self._on_server_request = on_server_request
        self._ids = 0
        self.policy = policy
        self._client = httpx.Client(
            follow_redirects=False,
            trust_env=False,
            headers={"User-Agent": user_agent},
            transport=None if policy is None else _judged_transport(policy, parts.scheme),
        )

    @property
    def pid(self) -> int | None:
        """No process: always None (the stdio transport has one)."""
        return None

    def start(self) -> None:
        """Nothing to start: connections are opened per request."""

    def close(self) -> None:
        """Release the session (DELETE, best effort) and the connection pool."""
        if self.session_id is not None:
            with contextlib.suppress(httpx.HTTPError):
                self._client.delete(self.url, headers=self._headers({}), timeout=2.0)
            self.session_id = None
        self._client.close()

    def kill(self, reason: McpClientError) -> None:
        """Nothing to kill over HTTP; each request stands alone."""
        del reason

    # -- exchange --------------------------------------------------------------------------

    def request(
        self,
        method: str,
        params: jsonrpc.JSONObject | None,
        deadline: Deadline,
        headers: Mapping[str, str] | None = None,
    ) -> jsonrpc.JSONObject:
        """POST one request and return its result.

        Raises:
            Gated: 401/403. PeerError: a JSON-RPC error (with the HTTP status it came with).
            Unreachable, Timeout, ProtocolError, TooLarge.
        """
        self._ids += 1
        sent_id = self._ids
        message = jsonrpc.request(sent_id, method, params)
        result: jsonrpc.JSONObject | None = None
        for reply, status in self._post(message, headers or {}, deadline, expect_reply=True):
            kind = jsonrpc.classify(reply)
            if kind == "request":
                self._on_server_request(reply["method"])
                self._answer(jsonrpc.answer_to(reply), headers or {}, deadline)
            elif kind == "response":
                result = jsonrpc.result_of(reply, sent_id, method, status=status)
                break
        if result is None:
            raise ProtocolError(f"the server's answer to {method} held no response")
        return result

    def notify(
        self,
        method: str,
        params: jsonrpc.JSONObject | None,
        deadline: Deadline,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """POST one notification (202 expected)."""
        message = jsonrpc.notification(method, params)
        for _ in self._post(message, headers or {}, deadline, expect_reply=False):
            pass

    def _answer(
        self, message: jsonrpc.JSONObject, headers: Mapping[str, str], deadline: Deadline
    ) -> None:
        extra = {k: v for k, v in headers.items() if k.lower() == "mcp-protocol-version"}
        try:
            for _ in self._post(message, extra, deadline, expect_reply=False):
                pass
        except (PeerError, ProtocolError, Unreachable) as exc:
            log.info("answering a server request at %s failed: %s", self.url, exc)

    def _headers(self, extra: Mapping[str, str]) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        if self.session_id is not None:
            headers[SESSION_HEADER] = self.session_id
        headers.update(extra)
        return headers

    def _post(
        self,
        message: jsonrpc.JSONObject,
        extra: Mapping[str, str],
        deadline: Deadline,
        *,
        expect_reply: bool,
    ) -> Iterator[tuple[Any, int]]:
        method = str(message.get("method", "response"))
        with self._opened(
            "POST",
            jsonrpc.encode(message),
            self._headers(extra),
            lambda: httpx.Timeout(deadline.remaining()),
            Timeout(deadline.kind, deadline.seconds, method),
        ) as response:
            yield from self._read(response, method, deadline, expect_reply=expect_reply)

    @contextlib.contextmanager
    def _opened(
        self,
        verb: str,
        body: bytes | None,
        headers: dict[str, str],
        timeout: Callable[[], httpx.Timeout],
        late: Timeout,
        hangup: Hangup | None = None,
    ) -> Iterator[httpx.Response]:
        """The answer at the end of the redirects, each URL judged before it is dialled.

        A fault while it is read is raised as the client's error (``late`` for a timeout);
        on a stream ``hangup`` ended, it is raised as httpx's, for the holder to tell.
        """
        url = self.url
        for _hop in range(_MAX_REDIRECTS + 1):
            try:
                seconds = timeout()
                if self.policy is not None:
                    self.policy.check_url(url)
                with self._client.stream(
                    verb, url, content=body, headers=headers, timeout=seconds
                ) as response:
                    if not response.is_redirect:
                        yield response
                        return
                    url = self._redirect_target(url, response)
            except AddressRefused as exc:
                raise refused(exc) from None
            except httpx.ConnectError as exc:
                raise Unreachable("connect", f"could not connect to {url}: {exc}") from None
            except httpx.TransportError as exc:
                if hangup is not None and hangup.hung:
                    raise
                if isinstance(exc, httpx.TimeoutException):
                    raise late from None
                raise Unreachable("http", f"{type(exc).__name__} from {url}: {exc}") from None
        raise ProtocolError(f"more than {_MAX_REDIRECTS} redirects")

    def _redirect_target(self, url: str, response: httpx.Response) -> str:
        location = response.headers.get("location")
        if not location:
            raise ProtocolError(f"HTTP {response.status_code} redirect without a Location")
        target: str = urljoin(url, str(location))
        if self.policy is not None:
            try:
                self.policy.check_url(target)
            except AddressRefused as exc:
                raise Refused(
                    "redirect",
                    exc.host,
                    f"redirect to {target[:200]} refused: {exc}",
                    address=exc.address,
                    reason=exc.reason,
                ) from None
        if origin(target) != origin(self.url):
            raise ProtocolError(f"redirect to another origin refused: {target}")
        if response.status_code not in (307, 308):
            raise ProtocolError(
                f"HTTP {response.status_code} redirect would turn the POST into a GET: {target}"
            )
        return target

    def _read(
        self, response: httpx.Response, method: str, deadline: Deadline, *, expect_reply: bool
    ) -> Iterator[tuple[Any, int]]:
        """The messages an answer carries, each with its HTTP status, once the status is checked.

        Raises:
            Gated: HTTP 401 or 403.
            Unreachable: another error status whose body is no JSON-RPC error.
            ProtocolError: a status, session id or content type this transport does not take.
        """
        status = response.status_code
        self._refuse_gated(response)
        if status >= 400:
            yield from self._error_body(response, method)
            return
        if self._carries_reply(response, method, expect_reply=expect_reply):
            yield from self._messages(response, method, deadline)

    def _refuse_gated(self, response: httpx.Response) -> None:
        """Raise :class:`Gated` for HTTP 401 or 403."""
        if response.status_code in (401, 403):
            raise Gated(
                response.status_code,
                token_sent=self.token is not None,
                challenge=response.headers.get("www-authenticate"),
            )

    def _carries_reply(self, response: httpx.Response, method: str, *, expect_reply: bool) -> bool:
        """Whether a success answer is to be read for messages; keeps the session id it sets.

        Raises:
            ProtocolError: a 202 or 204 where a reply was due, another status than 200, or a
                session id that is not visible ASCII.
        """
        status = response.status_code
        if status in (202, 204):
            if expect_reply:
                raise ProtocolError(f"HTTP {status} with no response to {method}")
            return False
        if status != 200:
            raise ProtocolError(f"unexpected HTTP {status} for {method}")
        if method == "initialize" and (sid := response.headers.get(SESSION_HEADER)) is not None:
            if not _SESSION_ID.match(sid):
                raise ProtocolError("the session id is not visible ASCII", sid[:80])
            self.session_id = sid
        return expect_reply

    def _messages(
        self, response: httpx.Response, method: str, deadline: Deadline
    ) -> Iterator[tuple[Any, int]]:
        """The messages of a 200 answer: one JSON body, or the data of each stream event."""
        status = response.status_code
        ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype == "application/json":
            yield (
                jsonrpc.decode(
                    self._body(response, deadline, self.limits.max_message_bytes),
                    self.limits.max_message_bytes,
                    max_depth=self.limits.max_depth,
                ),
                status,
            )
        elif ctype == "text/event-stream":
            for data in _events(response.iter_bytes(), deadline, self.limits.max_message_bytes):
                message = jsonrpc.decode(
                    data, self.limits.max_message_bytes, max_depth=self.limits.max_depth
                )
                yield message, status
        else:
            raise ProtocolError(f"unexpected content type {ctype or '(none)'!r} for {method}")

    def _error_body(self, response: httpx.Response, method: str) -> Iterator[tuple[Any, int]]:
        status = response.status_code
        raw = b""
        with contextlib.suppress(TooLarge):
            raw = self._body(response, Deadline("call", 2.0), _ERROR_BODY_CAP)
        try:
            message = jsonrpc.decode(raw, _ERROR_BODY_CAP, max_depth=self.limits.max_depth)
            if jsonrpc.classify(message) == "response" and "error" in message:
                # An error status answers this POST's one request, whatever id its error
                # names (the Python SDK 1.x names "server-error" for a transport refusal).
                yield {**message, "id": None}, status
                return
        except ProtocolError:
            pass
        if status == 404 and self.session_id is not None:
            raise Unreachable("session", "the server ended the session (HTTP 404)", status=404)
        raise Unreachable("http", f"HTTP {status} for {method} from {self.url}", status=status)

    def _body(self, response: httpx.Response, deadline: Deadline, cap: int) -> bytes:
        declared = response.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > cap:
            raise TooLarge("message", cap, int(declared))
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > cap:
                raise TooLarge("message", cap, size)
            chunks.append(chunk)
            deadline.remaining()
        return b"".join(chunks)

    # -- the notification stream -----------------------------------------------------------

    def listen(
        self,
        params: jsonrpc.JSONObject,
        headers: Mapping[str, str],
        *,
        connect_seconds: float,
        read_seconds: float,
        on_notification: Callable[[jsonrpc.JSONObject], None],
        hangup: Hangup,
    ) -> str:
        """POST ``subscriptions/listen`` and tell each message of its stream until it ends.

        Returns how it ended: ``"complete"`` (the server answered the listen), ``"closed"``
        (the stream ended without an answer) or ``"hung up"`` (``hangup`` was called).

        Raises:
            Gated, PeerError (the listen refused), Unreachable, Timeout (nothing for
            ``read_seconds``), ProtocolError (not a stream, a flood), TooLarge (an event).
        """
        self._ids += 1
        sent_id = self._ids
        body = jsonrpc.encode(jsonrpc.request(sent_id, "subscriptions/listen", params))
        return self._hold(
            "POST",
            "subscriptions/listen",
            body,
            self._headers(headers),
            connect_seconds=connect_seconds,
            read_seconds=read_seconds,
            hangup=hangup,
            read=lambda response: self._stream(response, sent_id, on_notification, hangup),
        )

    def session_stream(
        self,
        headers: Mapping[str, str],
        *,
        last_event_id: str | None,
        connect_seconds: float,
        read_seconds: float,
        opened: Callable[[], None],
        on_notification: Callable[[jsonrpc.JSONObject], None],
        event_id: Callable[[str], None],
        hangup: Hangup,
    ) -> str:
        """GET the session's own stream (2025 era) and tell each notification until it ends.

        ``opened()`` is called once the server answered with an event stream, before any event
        is read; ``event_id(id)`` with the id of each event that carries one (to resume with
        ``Last-Event-ID``, sent when ``last_event_id`` is given). A request of the server on
        the stream is answered -32601 in a POST of its own. Same caps as :meth:`listen`.

        Returns ``"closed"`` (the server ended the stream) or ``"hung up"``.

        Raises:
            Gated; Unreachable (``status`` 404 with kind ``session``: the session is gone; 405:
            the server offers no such stream; 409: it holds one open already), Timeout (nothing
            for ``read_seconds``), ProtocolError (no session, not a stream, a flood), TooLarge.
        """
        if self.session_id is None:
            raise ProtocolError("the server issued no session: it has no session stream")
        sent = self._headers(headers)
        sent.pop("Content-Type", None)
        sent["Accept"] = "text/event-stream"
        if last_event_id is not None:
            sent["Last-Event-ID"] = last_event_id
        return self._hold(
            "GET",
            "the session stream",
            None,
            sent,
            connect_seconds=connect_seconds,
            read_seconds=read_seconds,
            hangup=hangup,
            read=lambda response: self._session_events(
                response, headers, opened, on_notification, event_id, hangup
            ),
        )

    def _hold(
        self,
        verb: str,
        method: str,
        body: bytes | None,
        headers: dict[str, str],
        *,
        connect_seconds: float,
        read_seconds: float,
        hangup: Hangup,
        read: Callable[[httpx.Response], str],
    ) -> str:
        """One held stream (a listen POST, a session GET): redirects, address checks, faults."""
        timeout = httpx.Timeout(connect_seconds, read=read_seconds)
        try:
            with self._opened(
                verb, body, headers, lambda: timeout, Timeout("call", read_seconds, method), hangup
            ) as response:
                return read(response)
        except httpx.TransportError:  # raised as httpx's only once hung up
            return "hung up"

    def _stream(
        self,
        response: httpx.Response,
        sent_id: int,
        on_notification: Callable[[jsonrpc.JSONObject], None],
        hangup: Hangup,
    ) -> str:
        method = "subscriptions/listen"
        _attach(response, hangup)
        status = response.status_code
        ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if status != 200 or ctype != "text/event-stream":
            return self._not_a_stream(response, sent_id, ctype)
        cap = min(self.limits.max_message_bytes, LISTEN_EVENT_BYTES)
        for data in _events(_held_chunks(response, hangup), _no_deadline(), cap):
            if hangup.hung:
                return "hung up"
            message = jsonrpc.decode(data, cap, max_depth=self.limits.max_depth)
            kind = jsonrpc.classify(message)
            if kind == "notification":
                on_notification(message)
            elif kind == "response" and message.get("id") == sent_id:
                jsonrpc.result_of(message, sent_id, method, status=status)
                return "complete"
        return "hung up" if hangup.hung else "closed"

    def _session_events(
        self,
        response: httpx.Response,
        headers: Mapping[str, str],
        opened: Callable[[], None],
        on_notification: Callable[[jsonrpc.JSONObject], None],
        event_id: Callable[[str], None],
        hangup: Hangup,
    ) -> str:
        """The messages of a session stream, once its status and content type are checked."""
        _attach(response, hangup)
        self._session_answered(response)
        opened()
        cap = min(self.limits.max_message_bytes, LISTEN_EVENT_BYTES)
        ids: list[str] = []
        for data in _events(_held_chunks(response, hangup), _no_deadline(), cap, ids):
            if hangup.hung:
                return "hung up"
            message = jsonrpc.decode(data, cap, max_depth=self.limits.max_depth)
            if ids:
                event_id(ids[-1])
            kind = jsonrpc.classify(message)
            if kind == "notification":
                on_notification(message)
            elif kind == "request":
                self._on_server_request(message["method"])
                self._answer(jsonrpc.answer_to(message), headers, Deadline("call", 5.0))
        if ids:
            event_id(ids[-1])
        return "hung up" if hangup.hung else "closed"

    def _session_answered(self, response: httpx.Response) -> None:
        """Raise unless the session stream was answered with an event stream."""
        status = response.status_code
        self._refuse_gated(response)
        if status == 404:
            raise Unreachable("session", "the server ended the session (HTTP 404)", status=404)
        if status >= 400:
            raise Unreachable(
                "http", f"HTTP {status} for the session stream from {self.url}", status=status
            )
        ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if status != 200 or ctype != "text/event-stream":
            raise ProtocolError(
                f"the session stream was answered HTTP {status} ({ctype or 'no content type'})"
            )

    def _not_a_stream(self, response: httpx.Response, sent_id: int, ctype: str) -> str:
        """A listen answered at once: its error raised, a plain result is ``"complete"``."""
        method = "subscriptions/listen"
        deadline = Deadline("call", 5.0, method)
        for reply, code in self._read(response, method, deadline, expect_reply=True):
            if jsonrpc.classify(reply) == "response":
                jsonrpc.result_of(reply, sent_id, method, status=code)
                return "complete"
        raise ProtocolError(f"the answer to {method} is no event stream ({ctype or 'none'})")


def _no_deadline() -> Deadline:
    """A held stream's deadline: none overall (the read timeout bounds its silence)."""
    return Deadline("call", 1e9)


def _attach(response: httpx.Response, hangup: Hangup) -> None:
    """Give ``hangup`` the socket a held stream is read from."""
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    hangup.attach(sock if isinstance(sock, socket.socket) else None)


def _held_chunks(response: httpx.Response, hangup: Hangup) -> Iterator[bytes]:
    """A held stream's bytes, flood-counted, until it ends or is hung up."""
    flood = _Flood(LISTEN_BYTES_PER_SECOND, LISTEN_EVENTS_PER_SECOND)
    for chunk in response.iter_bytes():
        if hangup.hung:
            return
        flood.count(len(chunk), chunk.count(b"\n\n"))
        yield chunk


#: The longest event id kept (to send back as ``Last-Event-ID``); a longer one is ignored.
MAX_EVENT_ID = 1024
_EVENT_ID = re.compile(rb"^[\x21-\x7e]{1,%d}$" % MAX_EVENT_ID)


def _lines(chunks: Iterator[bytes], deadline: Deadline, cap: int) -> Iterator[bytes]:
    """The lines of a byte stream (without their line ends), each bounded before it is kept."""
    pending = b""
    for chunk in chunks:
        deadline.remaining()
        pending += chunk
        *lines, pending = pending.split(b"\n")
        if len(pending) > cap + 16:  # a line that does not end: bounded before it is kept
            raise TooLarge("message", cap, len(pending))
        for line in lines:
            yield line.rstrip(b"\r")


def _events(
    chunks: Iterator[bytes], deadline: Deadline, cap: int, ids: list[str] | None = None
) -> Iterator[bytes]:
    """The data of each server-sent event of a byte stream, each capped at ``cap`` bytes.

    Given ``ids``, the id of each event that sets one (visible ASCII, at most
    :data:`MAX_EVENT_ID` bytes; others are ignored) is kept in it as the event ends, before
    its data is yielded (an event without data may carry an id: a priming event).
    """
    data: list[bytes] = []
    size = 0
    seen: bytes | None = None
    for line in _lines(chunks, deadline, cap):
        if not line:
            event = b"\n".join(data)
            if seen is not None and ids is not None:
                ids[:] = [seen.decode("ascii")]
            seen = None
            if event.strip():  # an event without data (a priming event) carries nothing
                yield event
            data, size = [], 0
            continue
        field, _, value = line.partition(b":")
        value = value[1:] if value.startswith(b" ") else value
        if field == b"id":
            seen = value if _EVENT_ID.match(value) else None
        elif field == b"data":
            size += len(value)
            if size > cap:
                raise TooLarge("message", cap, size)
            data.append(value)
    if b"".join(data).strip():
        yield b"\n".join(data)


__all__ = ["Hangup", "HttpTransport", "origin"]
