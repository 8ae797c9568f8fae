"""The ASGI application: the whole body read in the event loop, then one answer per request.

Every request's body is read in the event loop, against a deadline (``TM_BODY_TIMEOUT``
seconds for the whole body) and a minimum rate (``tmsite.serve.guard``), so a client that
trickles its body holds no thread: it holds a socket until it falls behind, is answered 408 and
the connection is closed; one caller may have only so many requests in flight (429). (The
header deadline is the server's: ``--http1-header-read-timeout``, set by ``python -m
tmsite.serve``.) Only a complete request reaches a thread. A chunked body (no
``Content-Length``) is read the same way and handed on with its length (``CONTENT_LENGTH``),
so everything behind reads it as any other; a framing that is ambiguous or not served, or a
body that breaks off, is refused here (``guard.refuse_framing``, ``guard.refuse_unreadable``).

Then ``/api/mcp`` is answered by the endpoint itself (``tmsite.mcp.endpoint.serve``, over the
request's method, headers and body: no Django request, no middleware; the fields Django's
``SecurityMiddleware`` would add are added here). The body is parsed once, here,
and handed on parsed:

* a request ``tmsite.mcp.prepared`` holds a current answer for (``ping``, ``tools/list``,
  ``initialize``, a small file's read whose links are not due to be compared, …) is answered
  in the event loop, with no thread hop. It is taken only when nothing in it can wait on the
  network or write the database: the rate-limit buckets are in this machine (not Redis), and
  the row is only queued (``recorder.record`` in an event loop): a batch it makes due wakes the
  request log's own thread, which writes it;
* a ``subscriptions/listen`` POST and a session's ``GET`` (``Mcp-Session-Id``) are answered on
  a thread, then held as event streams in the loop (``tmsite.streams.stream``,
  ``tmsite.streams.sessionstream``);
* every other MCP request is answered on a thread of the bounded pool (``TM_WORKER_THREADS``
  threads, 8 unless set), with Django's ``request_started`` and ``request_finished`` signals
  around it as Django's own handler sends them.

Which requests came over TLS is judged as ``callers/tls.py`` and Django judge it (HSTS on
those). Where Django's middleware would do more than add fields (the redirect to https of one
that did not, ``PREPEND_WWW``, ``DISALLOWED_USER_AGENTS``), the MCP request goes through the
site's WSGI application like every other URL, to the same endpoint.

Every other URL (the site, REST, the admin) is the ordinary synchronous Django application
(``tmsite.wsgi.application``) run on a thread of the same pool, its answer sent back to the
loop; a long answer is streamed as it is produced. While a request runs on a thread the loop
listens for its client going away (``http.disconnect``): the request is then marked gone
(``tmsite.core.work``), its work stops at the next unit it counts, its row says ``abandoned``,
and nothing is sent. A stop signal (``lifeline.on_stop``) ends
the worker's event streams gracefully at once; ``lifespan.shutdown`` (the worker exits) writes
the request log's buffered rows.

Spec: T1, OP2, OP5, ANY2.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import re
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from io import BytesIO
from typing import Any

from django.conf import settings
from django.core import signals
from django.urls import set_script_prefix

from tmsite import wsgi
from tmsite.callers import buckets, caller
from tmsite.core import tracing, work
from tmsite.core.settled import settled
from tmsite.mcp import endpoint, prepared
from tmsite.mcp.envelope import MAX_BODY_BYTES, ParseFailure, loads_strict, valid_id
from tmsite.mcp.methods import METHODS
from tmsite.mcp.protocol import (
    DEFAULT_HEADERLESS_VERSION,
    SUPPORTED_VERSIONS,
    CallContext,
    StreamResult,
)
from tmsite.oplog import logs, metrics, recorder
from tmsite.serve import guard, lifeline
from tmsite.serve.guard import Message, Receive, Scope, Send
from tmsite.streams import sessionstream, stream
from tmsite.subscriptions import sessions, sources

#: The most a body of any other URL may be (the MCP endpoint answers 413 past 4 MiB itself).
SITE_BODY_LIMIT = 16 * 1024 * 1024
#: Past this many bytes a threaded answer is sent as it is produced, not gathered first. Until
#: then the thread is free as soon as the answer is made, however slowly the client reads it;
#: past it, the thread waits on the client (the site's answers are far smaller).
STREAM_AFTER = 4 * 1024 * 1024
#: Seconds between two sweeps of a stopping worker's streams (one opened since is ended too).
STOPPING_SWEEP = 0.05
#: The longest body looked at for a prepared answer (those requests are a few hundred bytes).
PREPARED_BODY_MAX = 16 * 1024
#: Methods ``tmsite.mcp.prepared`` may hold an answer for: those their row says, and reads.
PREPARED_METHODS = frozenset(
    {name for name, row in METHODS.items() if row.prepared is not None} | {"resources/read"}
)


def pool_size() -> int:
    """Threads of the request pool: ``TM_WORKER_THREADS``, 8 unless set."""
    declared = os.environ.get("TM_WORKER_THREADS", "")
    return int(declared) if declared.isdigit() and int(declared) > 0 else 8


# --- the MCP endpoint ---------------------------------------------------------------------------


#: The environ key of the event set when the request's client went away.
GONE_KEY = "tm.gone"


def asked_of(scope: Scope, body: bytes) -> endpoint.Asked:
    """The MCP request of an ASGI HTTP ``scope`` whose body is ``body``, as plain values."""
    headers: dict[str, str] = {}
    for raw_name, raw_value in scope["headers"]:
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        headers[name] = headers[name] + "," + value if name in headers else value
    server = scope.get("server") or ("127.0.0.1", 80)
    client = scope.get("client") or ("", 0)
    address = scope.get(caller.ADDRESS_KEY)  # worked out by the caller's cap (guard.py)
    return endpoint.Asked(
        scope["method"],
        headers,
        body,
        peer=str(client[0]),
        server=f"{server[0]}:{server[1] if server[1] is not None else 80}",
        address=address if isinstance(address, str) else None,
        delivers=True,  # this server holds streams, and sessions' ones
    )


def _parsed(asked: endpoint.Asked) -> None:
    """Parse a POST's body once, for the endpoint and for routing (a listen, an answer here)."""
    body = asked.body
    if asked.method != "POST" or body is None or len(body) > MAX_BODY_BYTES:
        return
    with contextlib.suppress(ParseFailure):  # the endpoint refuses it, with its reason
        asked.value = loads_strict(body)


def _served_on_thread(
    asked: endpoint.Asked, gone: threading.Event | None, script: str
) -> endpoint.Answered:
    """The endpoint on a pool thread, between ``request_started`` and ``request_finished``."""
    # what a receiver may read of the request, as under Django's handler
    environ = {
        "REQUEST_METHOD": asked.method,
        "PATH_INFO": endpoint.MCP_PATH,
        "SCRIPT_NAME": script,
    }
    signals.request_started.send(sender=Application, environ=environ)
    try:
        set_script_prefix(script)
        with work.abandoned_when(gone):
            return endpoint.serve(asked)
    finally:
        # old database connections closed, counts flushed
        signals.request_finished.send(sender=Application)


Fields = tuple[tuple[bytes, bytes], ...]


def parts_of(
    answered: endpoint.Answered, security: Fields
) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """The endpoint's answer as it is sent: its fields, the ``security`` fields, its length."""
    headers = [
        (name.lower().encode("latin-1"), value.encode("latin-1"))
        for name, value in answered.headers
    ]
    headers += security
    if answered.stream is None:
        headers.append((b"content-length", str(len(answered.body)).encode("ascii")))
    return answered.status, headers, answered.body


def security_fields(scope: Scope, asked: endpoint.Asked) -> Fields | None:
    """The fields Django's middleware would add to the answer to ``asked``.

    None where it would do more than add fields (the redirect to https, ``PREPEND_WWW``, a user
    agent refused): such a request is served through the site's WSGI application, middleware
    and all. Which requests came over TLS is judged as ``callers/tls.py`` and Django judge it.
    """
    settled_fields = _security_settings()
    if settled_fields is None:
        return None
    fields, hsts, redirect = settled_fields
    if not _secure(scope, asked):
        return None if redirect else fields
    return hsts + fields


#: The header ``ForwardedProtoMiddleware`` settles, by its lower-cased name.
_PROTO = "x-forwarded-proto"


def _secure(scope: Scope, asked: endpoint.Asked) -> bool:
    """``request.is_secure()`` behind ``ForwardedProtoMiddleware`` (on under ``TM_TLS``)."""
    tls, proxy = _tls_settings()
    if proxy is None:
        return bool(scope.get("scheme", "http") == "https")
    name, secure_value = proxy
    told = asked.headers.get(name)
    if tls and name == _PROTO and not caller.trusted(asked.peer):
        told = None  # the middleware drops it: not from a trusted proxy
    if told is not None:
        secure = told.split(",", 1)[0].strip() == secure_value
    else:
        secure = bool(scope.get("scheme", "http") == "https")
    if secure or not tls or name != _PROTO:
        return secure
    # the box's own reads over loopback: the middleware says https
    address = asked.address
    if address is None:
        address = caller.address(asked.peer, asked.headers.get("x-forwarded-for"))
    return caller.loopback(address) and secure_value == "https"


@settled
def _tls_settings() -> tuple[bool, tuple[str, str] | None]:
    """``TM_TLS``, and the proxy's TLS header (lower-cased name, value) Django believes."""
    proxy = settings.SECURE_PROXY_SSL_HEADER
    header = None
    if proxy is not None:
        name = str(proxy[0]).removeprefix("HTTP_").replace("_", "-").lower()
        header = (name, str(proxy[1]))
    return bool(getattr(settings, "TM_TLS", False)), header


@settled
def _security_settings() -> tuple[Fields, Fields, bool] | None:
    """What ``SecurityMiddleware`` adds (always, over TLS) and whether it redirects to https.

    None when ``CommonMiddleware`` may redirect or refuse (``PREPEND_WWW``,
    ``DISALLOWED_USER_AGENTS``), or Django would take the scheme from a ``META`` key that is
    not a header's.
    """
    if settings.PREPEND_WWW or settings.DISALLOWED_USER_AGENTS:
        return None
    proxy = settings.SECURE_PROXY_SSL_HEADER
    if proxy is not None and not str(proxy[0]).startswith("HTTP_"):
        return None
    fields: list[tuple[str, str]] = []
    if settings.SECURE_CONTENT_TYPE_NOSNIFF:
        fields.append(("X-Content-Type-Options", "nosniff"))
    policy = settings.SECURE_REFERRER_POLICY
    if policy:  # a comma-separated string or a list of values, as the middleware joins them
        values = [v.strip() for v in policy.split(",")] if isinstance(policy, str) else policy
        fields.append(("Referrer-Policy", ",".join(values)))
    opener = settings.SECURE_CROSS_ORIGIN_OPENER_POLICY
    if opener:
        fields.append(("Cross-Origin-Opener-Policy", opener))
    hsts: list[tuple[str, str]] = []
    if settings.SECURE_HSTS_SECONDS:
        value = f"max-age={settings.SECURE_HSTS_SECONDS}"
        if settings.SECURE_HSTS_INCLUDE_SUBDOMAINS:
            value += "; includeSubDomains"
        if settings.SECURE_HSTS_PRELOAD:
            value += "; preload"
        hsts.append(("Strict-Transport-Security", value))
    path = endpoint.MCP_PATH.lstrip("/")
    exempt = any(re.compile(pattern).search(path) for pattern in settings.SECURE_REDIRECT_EXEMPT)
    return _encoded(fields), _encoded(hsts), bool(settings.SECURE_SSL_REDIRECT) and not exempt


def _encoded(fields: list[tuple[str, str]]) -> Fields:
    return tuple(
        (name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in fields
    )


def _in_loop(asked: endpoint.Asked) -> tuple[prepared.Key, prepared.Prepared] | None:
    """The prepared answer this MCP POST may be answered with in the event loop, else None.

    Only where nothing in the answer can wait on the network or write the database: the
    rate-limit buckets are in this machine (not Redis), the row is only queued (``recorder``
    writes none in an event loop), a session is one this process found live (no query).
    """
    body, value = asked.body, asked.value
    if body is None or len(body) > PREPARED_BODY_MAX or not isinstance(value, dict):
        return None
    method, rid, params = value.get("method"), value.get("id"), value.get("params")
    params = {} if params is None else params
    if method not in PREPARED_METHODS or rid is None or not valid_id(rid):
        return None
    if not isinstance(params, dict) or buckets.store_kind() == "redis" or not recorder.may_defer():
        return None
    token = asked.headers.get("mcp-session-id")
    version = endpoint.version_header(asked.headers) or DEFAULT_HEADERLESS_VERSION
    # a session not found live yet is checked on the thread
    if (token is not None and not sessions.known_live(token)) or version not in SUPPORTED_VERSIONS:
        return None
    try:
        key = prepared.variant(method, params, CallContext(version=version, transport="http"))
        entry = prepared.current(key, asked.delivers) if key is not None else None
    except Exception:  # a namespace not built yet, …: the thread builds it
        return None
    return None if key is None or entry is None else (key, entry)


def answered_in_loop(asked: endpoint.Asked) -> endpoint.Answered | None:
    """The answer to ``asked`` made in the event loop, or None when it needs a thread."""
    chosen = _in_loop(asked)
    if chosen is None:
        return None
    return endpoint.serve(dataclasses.replace(asked, chosen=chosen))


# --- the rest of the site, through its WSGI application --------------------------------------


class _Disconnected(Exception):
    """The client went away while the answer was being sent."""


def _wsgi_on_thread(
    environ: dict[str, Any], loop: asyncio.AbstractEventLoop, send: Send
) -> tuple[int, list[tuple[bytes, bytes]], bytes] | None:
    """Run the site's WSGI application; its answer gathered, or None when it was streamed."""
    started: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        started["status"] = int(status.split(" ", 1)[0])
        started["headers"] = [
            (name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers
        ]
        return _no_write

    async def sending(message: Message) -> None:
        await send(message)

    def blocking_send(message: Message) -> None:
        try:
            asyncio.run_coroutine_threadsafe(sending(message), loop).result()
        except Exception as exc:
            raise _Disconnected from exc

    with work.abandoned_when(environ.get(GONE_KEY)):
        result: Iterable[bytes] = wsgi.application(environ, start_response)
    try:
        gathered = _gather(
            result, lambda: _start(started["status"], started["headers"]), blocking_send
        )
        return None if gathered is None else (started["status"], started["headers"], gathered)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()  # request_finished


def _gather(
    result: Iterable[bytes], start: Callable[[], Message], blocking_send: Callable[[Message], None]
) -> bytes | None:
    """The whole body of ``result``; or, past ``STREAM_AFTER`` bytes, None once it was sent."""
    chunks: list[bytes] = []
    size = 0
    streaming = False
    for chunk in result:
        if not chunk:
            continue
        if streaming:
            blocking_send({"type": "http.response.body", "body": chunk, "more_body": True})
            continue
        chunks.append(chunk)
        size += len(chunk)
        if size > STREAM_AFTER:
            streaming = True
            blocking_send(start())
            blocking_send(
                {"type": "http.response.body", "body": b"".join(chunks), "more_body": True}
            )
            chunks.clear()
    if not streaming:
        return b"".join(chunks)
    blocking_send({"type": "http.response.body", "body": b"", "more_body": False})
    return None


def _no_write(data: bytes) -> None:
    raise RuntimeError("the WSGI write() callable is not supported")


def _start(status: int, headers: list[tuple[bytes, bytes]]) -> Message:
    return {"type": "http.response.start", "status": status, "headers": headers}


# --- the request -----------------------------------------------------------------------------


def environ_of(scope: Scope, body: bytes) -> dict[str, Any]:
    """The WSGI environ of an ASGI HTTP ``scope`` whose body is ``body``."""
    server = scope.get("server") or ("127.0.0.1", 80)
    client = scope.get("client") or ("", 0)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": scope.get("root_path", ""),
        "PATH_INFO": scope["path"].encode("utf-8").decode("latin-1"),
        "QUERY_STRING": scope.get("query_string", b"").decode("latin-1"),
        "SERVER_NAME": str(server[0]),
        "SERVER_PORT": str(server[1] if server[1] is not None else 80),
        "REMOTE_ADDR": str(client[0]),
        "REMOTE_PORT": str(client[1]),
        "SERVER_PROTOCOL": f"HTTP/{scope.get('http_version', '1.1')}",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    if caller.ADDRESS_KEY in scope:  # worked out by the caller's cap (guard.py): not again
        environ[caller.ADDRESS_KEY] = scope[caller.ADDRESS_KEY]
    for raw_name, raw_value in scope["headers"]:
        key = _ENVIRON_KEYS.get(raw_name)
        if key is None:
            key = _environ_key(raw_name)
        if not key:  # as WSGI servers do: HTTP_X_FORWARDED_FOR only from X-Forwarded-For
            continue
        value = raw_value.decode("latin-1")
        if key in environ:
            joiner = "; " if key == "HTTP_COOKIE" else ","
            value = environ[key] + joiner + value
        environ[key] = value
    if environ.pop("HTTP_TRANSFER_ENCODING", None) is not None:
        # The server took the body out of its transfer coding (chunked): ``body`` is all of it,
        # and its length is known now. Without CONTENT_LENGTH Django would read none of it.
        environ["CONTENT_LENGTH"] = str(len(body))
    return environ


#: The environ key of each header name met so far ("" for a name WSGI leaves out).
_ENVIRON_KEYS: dict[bytes, str] = {}
#: Past this many names the table is not grown (a client may send any names it likes).
MAX_ENVIRON_KEYS = 512


def _environ_key(raw_name: bytes) -> str:
    name = raw_name.decode("latin-1").upper()
    if "_" in name:
        key = ""
    elif name == "CONTENT-TYPE":
        key = "CONTENT_TYPE"
    elif name == "CONTENT-LENGTH":
        key = "CONTENT_LENGTH"
    else:
        key = "HTTP_" + name.replace("-", "_")
    if len(_ENVIRON_KEYS) < MAX_ENVIRON_KEYS:
        _ENVIRON_KEYS[raw_name] = key
    return key


def _closing_if_unread(
    scope: Scope, body: bytes, headers: list[tuple[bytes, bytes]]
) -> list[tuple[bytes, bytes]]:
    """``headers``, with ``Connection: close`` when the MCP body was past the limit (413).

    Announced past it, none of it is read; sent chunked, reading stops just past it. The rest
    is never read, so the connection cannot carry another request: the answer says so, or a
    client that sent its next request on it would find it closed under that request.
    """
    if len(body) > MAX_BODY_BYTES or (not body and (_framing(scope)[1] or 0) > MAX_BODY_BYTES):
        return [*headers, (b"connection", b"close")]
    return headers


def _framing(scope: Scope) -> tuple[bool, int | None, list[bytes] | None]:
    """The request's framing, from one walk of its headers.

    Whether it names a ``Content-Length``, the length it announces (None: none, or not a
    number), and the transfer codings it names, in order, lower-cased
    (None without a ``Transfer-Encoding``).
    """
    length, announced = False, None
    codings: list[bytes] | None = None
    for name, value in scope["headers"]:
        lowered = name.lower()
        if lowered == b"content-length" and not length:
            length = True
            with contextlib.suppress(ValueError):
                announced = int(value)
        elif lowered == b"transfer-encoding":
            codings = (codings or []) + [c.strip().lower() for c in value.split(b",")]
    return length, announced, codings


def _misframed(length: bool, codings: list[bytes] | None) -> guard.Misframed | None:
    """What is wrong with a request's framing, if anything (refused before its body is read).

    The one transfer coding served is ``chunked``, once (the server takes the body out of it);
    a body framed by both ``Content-Length`` and ``Transfer-Encoding`` is ambiguous, which is
    what request smuggling plays on. nginx in front refuses the same, alike.
    """
    if codings is None:
        return None
    if length:
        return "both"
    if codings == [b"chunked"]:
        return None
    return "repeated" if set(codings) == {b"chunked"} else "unknown-coding"


class Application:
    """The ASGI callable (``tmsite.serve.app:application``)."""

    def __init__(self) -> None:
        self._pool: ThreadPoolExecutor | None = None
        self._stopping: asyncio.Task[None] | None = None
        #: Whether this worker started the change sources and the search keeper.
        self._serving = False

    @property
    def pool(self) -> ThreadPoolExecutor:
        """The bounded pool of request threads (made in the worker that uses it)."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(pool_size(), thread_name_prefix="tm-request")
        return self._pool

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer one ASGI connection scope: ``http`` or ``lifespan`` (nothing else is served)."""
        if scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "lifespan":
            await self._lifespan(receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                launched = lifeline.bind()  # a worker does not outlive its launcher
                metrics.forget_dead()  # the open-stream counts of a worker this one replaces
                lifeline.on_stop(asyncio.get_running_loop(), self.stopping)
                if launched:  # a served worker, not the application run in a test's process
                    # the change sources, and the search keeper (one a machine: it takes a lock)
                    await asyncio.get_running_loop().run_in_executor(self.pool, sources.serve)
                    self._serving = True
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def stopping(self) -> None:
        """The worker was told to stop (SIGTERM): its streams end now (in the event loop).

        granian waits for every request in flight before ``lifespan.shutdown``, and a stream
        is in flight until it ends: each open one ends gracefully at once (the listen's
        ``complete``), and so does one opened later by a request already in flight, until the
        worker is gone. The other requests are answered as usual meanwhile.
        """
        if self._stopping is None:
            self._stopping = asyncio.get_running_loop().create_task(self._end_streams())

    async def _end_streams(self) -> None:
        while True:
            stream.close_all()
            await asyncio.sleep(STOPPING_SWEEP)

    async def shutdown(self) -> None:
        """Write the request log's buffered rows (on a thread: it is a database write)."""
        if self._stopping is not None:
            self._stopping.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._stopping
            self._stopping = None
        stream.close_all()  # each open listen stream ends gracefully
        if self._serving:  # no new search round: its front-door reads would meet a closed door
            sources.stop()
            self._serving = False
        loop = asyncio.get_running_loop()
        with contextlib.suppress(Exception):
            await loop.run_in_executor(self.pool, recorder.flush_quietly)
        logs.drain_all()  # the JSON lines too: a granian worker runs no exit hooks
        metrics.leaving()
        await loop.run_in_executor(self.pool, tracing.shutdown)  # the spans still held
        self.pool.shutdown(wait=False)
        self._pool = None

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        admitted, key = guard.enter(scope)  # the caller's cap (guard.py)
        if not admitted:
            await guard.refuse_busy(scope, send)
            return
        try:
            await self._answer(scope, receive, send)
        finally:
            guard.leave(key)

    async def _answer(self, scope: Scope, receive: Receive, send: Send) -> None:
        is_mcp = scope["path"] == endpoint.MCP_PATH
        body = await self._body(scope, receive, send, is_mcp)
        if body is None:
            return  # answered already
        asked = asked_of(scope, body) if is_mcp else None
        security = security_fields(scope, asked) if asked is not None else None
        try:
            if asked is not None and security is not None:
                parts = await self._mcp(scope, receive, send, asked, security)
                if parts is None:
                    return  # held as a stream
            else:
                environ = environ_of(scope, body)
                loop = asyncio.get_running_loop()
                gathered = await _unless_gone(
                    receive,
                    environ,
                    lambda: loop.run_in_executor(self.pool, _wsgi_on_thread, environ, loop, send),
                )
                if gathered is None:
                    return  # streamed
                parts = gathered
        except _Disconnected:
            return
        status, headers, content = parts
        if is_mcp:
            headers = _closing_if_unread(scope, body, headers)
        await _send_whole(send, status, headers, b"" if scope["method"] == "HEAD" else content)

    async def _mcp(
        self, scope: Scope, receive: Receive, send: Send, asked: endpoint.Asked, security: Fields
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes] | None:
        """The endpoint's answer to an MCP request; None when it was held as a stream."""
        _parsed(asked)
        loop = asyncio.get_running_loop()
        script = scope.get("root_path") or "/"
        if asked.method == "POST" and stream.is_listen(asked.value):
            asked.held = True

            async def held() -> tuple[int, list[tuple[bytes, bytes]], bytes, StreamResult | None]:
                answered = await loop.run_in_executor(
                    self.pool, _served_on_thread, asked, None, script
                )
                return (*parts_of(answered, security), answered.stream)

            await stream.serve(receive, send, held)
            return None
        if asked.method == "GET" and "mcp-session-id" in asked.headers:  # its stream (SUB2)
            asked.offer = sessionstream.offer_of(asked.headers)

            async def opened() -> tuple[int, list[tuple[bytes, bytes]], bytes]:
                answered = await loop.run_in_executor(
                    self.pool, _served_on_thread, asked, None, script
                )
                return parts_of(answered, security)

            await sessionstream.serve(receive, send, asked.offer, opened)
            return None
        if asked.method == "POST" and (answered := answered_in_loop(asked)) is not None:
            return parts_of(answered, security)
        gone = threading.Event()
        answered = await _unless_gone(
            receive,
            gone,
            lambda: loop.run_in_executor(self.pool, _served_on_thread, asked, gone, script),
        )
        return parts_of(answered, security)

    async def _body(self, scope: Scope, receive: Receive, send: Send, is_mcp: bool) -> bytes | None:
        """The request's body, read against its deadline (chunked or not).

        None when it was answered already (400, 408, 413, 501).
        """
        length, announced, codings = _framing(scope)
        misframed = _misframed(length, codings)
        if misframed is not None:
            await guard.refuse_framing(send, scope, misframed)
            return None
        limit = MAX_BODY_BYTES if is_mcp else SITE_BODY_LIMIT
        if scope["method"] in ("GET", "HEAD", "OPTIONS") and not announced and codings is None:
            return b""
        if announced is not None and announced > limit:
            if is_mcp:
                return b""  # the endpoint answers 413 from the header, reading nothing
            await _too_large(send)
            return None
        started = time.perf_counter()
        try:  # the whole body's deadline and its minimum rate (guard.py)
            body = await guard.read_body(receive, limit)
        except guard.Late as late:
            await guard.refuse_late(send, scope, late, started)
            return None
        if body is None:  # a broken chunked framing reads as the client gone: it may be there
            await guard.refuse_unreadable(send, scope, started)
        elif not is_mcp and len(body) > limit:
            await _too_large(send)
            body = None
        return body


async def _unless_gone(
    receive: Receive, gone: dict[str, Any] | threading.Event, run: Callable[[], Awaitable[Any]]
) -> Any:
    """``run()``'s result, while the client is heard: gone, its event is set.

    The event is ``gone``, or a WSGI environ's ``GONE_KEY``. The body was read whole before,
    so the next message the server sends is the client's ``http.disconnect``; the thread sees
    the event at its next unit of work.

    Raises:
        _Disconnected: the client went away: there is nobody to answer.
    """
    event = (
        gone if isinstance(gone, threading.Event) else gone.setdefault(GONE_KEY, threading.Event())
    )

    async def listen() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        event.set()

    listening = asyncio.ensure_future(listen())
    try:
        result = await run()
        if event.is_set():
            raise _Disconnected
        return result
    finally:
        listening.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await listening


async def _too_large(send: Send) -> None:
    headers = [(b"connection", b"close"), (b"content-type", b"text/plain")]
    await _send_whole(send, 413, headers, b"The request body is too large.\n")


async def _send_whole(
    send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes
) -> None:
    if not any(name == b"content-length" for name, _ in headers):
        headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send(_start(status, headers))
    await send({"type": "http.response.body", "body": body, "more_body": False})


application = Application()
