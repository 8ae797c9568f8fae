"""Fetching a page the way a visitor gets it: over loopback, from the front door only.

The one place the ``http`` mount touches the network. A fetch names a *site* (a configured
name, sent as ``Host`` and, over TLS, as SNI) and a *path* (built from checked segments, always
an origin-form ``/…`` request target). The connection always goes to the site's configured front
door — a loopback address and port fixed at start-up — so no client text ever becomes an address:
the mount is not a proxy.

Every fetch:

* never follows a redirect (a 3xx is reported with its ``Location``, resolved as a visitor
  would be sent);
* reads the body while streaming and stops at a cap (a decompression bomb is capped on the
  *decoded* bytes, inflated a bounded piece at a time);
* has one total deadline, enforced by a watchdog that shuts the socket down when it passes, so
  a slow-drip header or body cannot stretch it;
* when the site is served by this same Django project, takes one of a bounded number of
  per-process *self-fetch slots* without waiting: see :class:`SelfFetchBudget`.

Failures are :class:`FetchFailed` with a ``kind`` the mount maps to a refusal.

Spec: HTTP.
"""

from __future__ import annotations

import contextlib
import functools
import heapq
import http.client
import itertools
import os
import shlex
import socket
import ssl
import sys
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import urlsplit

from tmsite.core import tracing
from tmsite.core.addresses import is_loopback_host

#: What a fetch failed with: the mount maps each to a refusal reason.
FailKind = Literal["timeout", "unreachable", "too-large", "busy"]
USER_AGENT = "tmsite-http-mount/1"
_CHUNK = 64 * 1024


class FetchFailed(Exception):
    """A fetch that produced no answer the mount can use.

    Attributes:
        kind: ``timeout``, ``unreachable``, ``too-large`` or ``busy``.
        detail: One sentence: what failed.
        size: For ``too-large``: the size announced or the bytes read before the cap.
    """

    def __init__(self, kind: FailKind, detail: str, size: int | None = None) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail
        self.size = size


@dataclass(frozen=True)
class FrontDoor:
    """Where every fetch of a site connects: a loopback address and port, fixed at start-up."""

    scheme: str
    host: str
    port: int

    @classmethod
    def parse(cls, url: str) -> FrontDoor:
        """Parse ``http://127.0.0.1:8000`` (or https, ``[::1]``, ``localhost``).

        Raises:
            ValueError: not http(s), userinfo, a path, a query, or an address not on loopback.
        """
        parts = urlsplit(url)
        if parts.scheme not in {"http", "https"}:
            raise ValueError(f"a front door is an http:// or https:// URL, not {url!r}")
        if parts.username or parts.password or parts.path not in {"", "/"} or parts.query:
            raise ValueError(f"a front door is scheme://address:port only, not {url!r}")
        host = parts.hostname or ""
        if not is_loopback_host(host):
            raise ValueError(f"a front door is a loopback address, not {host!r}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return cls(parts.scheme, host, port)

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


@dataclass
class Fetched:
    """One answer, as a visitor receives it (headers in order, body decoded)."""

    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes
    complete: bool
    declared_length: int | None
    fetched_at: datetime
    elapsed: float
    encoded: bool = False

    def header(self, name: str) -> str | None:
        """The first header named ``name`` (any case), or None."""
        wanted = name.lower()
        for key, value in self.headers:
            if key.lower() == wanted:
                return value
        return None

    @property
    def content_type(self) -> str:
        """The ``Content-Type`` as sent, parameters and all (octet-stream when absent)."""
        return self.header("Content-Type") or "application/octet-stream"

    @property
    def media_type(self) -> str:
        """The media type alone, lower-cased, without parameters (octet-stream when absent)."""
        return self.content_type.split(";")[0].strip().lower() or "application/octet-stream"

    @property
    def size(self) -> int | None:
        """The body's size in bytes, when known (read whole, or announced unencoded)."""
        if self.complete:
            return len(self.body)
        if self.declared_length is not None and not self.encoded:
            return self.declared_length
        return None


# ---- the deadline --------------------------------------------------------------------------


class _Watchdog:
    """One thread that shuts sockets down when their deadline passes."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, socket.socket]] = []
        self._cancelled: set[int] = set()
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None

    def watch(self, sock: socket.socket, deadline: float) -> int:
        with self._cond:
            token = next(self._ids)
            heapq.heappush(self._heap, (deadline, token, sock))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="tm-http-deadline")
                self._thread.daemon = True
                self._thread.start()
            self._cond.notify()
            return token

    def cancel(self, token: int) -> None:
        with self._cond:
            self._cancelled.add(token)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._heap:
                    self._cond.wait()
                deadline, token, sock = self._heap[0]
                now = time.monotonic()
                if token in self._cancelled:
                    heapq.heappop(self._heap)
                    self._cancelled.discard(token)
                    continue
                if deadline > now:
                    self._cond.wait(deadline - now)
                    continue
                heapq.heappop(self._heap)
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


_WATCHDOG = _Watchdog()


# ---- the self-fetch budget ---------------------------------------------------------------


def worker_threads() -> int | None:
    """The thread count of this server process, when it can be told.

    ``TM_WORKER_THREADS`` when set (``deploy/gunicorn.conf.py`` sets it in each worker from the
    value gunicorn settled on, whether it came from the file, the environment or the command
    line), else ``--threads`` on gunicorn's command line; a gunicorn that says neither has 1.
    """
    declared = os.environ.get("TM_WORKER_THREADS", "")
    if declared.isdigit():
        return int(declared)
    argv = [*sys.argv, *shlex.split(os.environ.get("GUNICORN_CMD_ARGS", ""))]
    if not any("gunicorn" in part for part in argv[:2]) and "GUNICORN_CMD_ARGS" not in os.environ:
        return None
    threads: int | None = None
    for index, part in enumerate(argv):
        value = None
        if part == "--threads" and index + 1 < len(argv):
            value = argv[index + 1]
        elif part.startswith("--threads="):
            value = part.split("=", 1)[1]
        if value is not None and value.isdigit():
            threads = int(value)
    return threads if threads is not None else 1


class SelfFetchBudget:
    """A bounded count of concurrent fetches of this process's own site, never waited for.

    A thread that fetches a page of its own server blocks until some thread of that server
    answers. If every thread of a worker could block that way, none would be left to answer and
    the worker would hang until the deadline. So at most ``limit`` threads of a process may hold
    a self-fetch, ``limit`` below the worker's thread count, and a fetch beyond it is refused at
    once (``busy``) instead of waiting — a thread waiting for a slot would be one more thread
    that answers nobody. Every thread that holds no slot never waits on another request, so each
    worker always has a thread that drains its queue: no deadlock, whatever the mix of requests
    and however the kernel spreads connections over workers.
    """

    def __init__(self, limit: int) -> None:
        self.limit = max(0, limit)
        self._lock = threading.Lock()
        self._held = 0

    def acquire(self) -> bool:
        """Take a slot if one is free, at once; False when all ``limit`` are held."""
        with self._lock:
            if self._held >= self.limit:
                return False
            self._held += 1
            return True

    def release(self) -> None:
        """Give back a slot taken by :meth:`acquire`."""
        with self._lock:
            self._held -= 1

    @property
    def held(self) -> int:
        """How many slots are held now."""
        return self._held


#: The one budget of this process. Every mount instance shares it: two namespaces built by two
#: threads at start-up must not double the count of threads allowed to wait.
PROCESS_BUDGET = SelfFetchBudget(4)


# ---- the fetch -----------------------------------------------------------------------------


@functools.lru_cache(maxsize=16)
def _tls_context(
    verify: bool, ca_file: str | None, default_file: str | None, default_dir: str | None
) -> ssl.SSLContext:
    """A client context, made once per way of verifying.

    Loading the authorities costs tens of milliseconds, more than a whole page fetch over
    loopback. The system's default paths are part of the key, so pointing ``SSL_CERT_FILE``
    elsewhere takes effect.
    """
    del default_file, default_dir  # the key only: create_default_context reads them itself
    context = ssl.create_default_context(cafile=ca_file)
    if not verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


class _SniHTTPSConnection(http.client.HTTPSConnection):
    """HTTPS to the front door's address with the site's name as SNI and for verification."""

    def __init__(
        self, host: str, port: int, server_name: str, context: ssl.SSLContext, timeout: float
    ) -> None:
        super().__init__(host, port, timeout=timeout, context=context)
        self._server_name = server_name
        self._ssl_context = context

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)
        self.sock = self._ssl_context.wrap_socket(self.sock, server_hostname=self._server_name)


@dataclass
class Fetcher:
    """Fetches pages of one site from its front door.

    Attributes:
        site: The site's name, sent as ``Host`` (and SNI).
        door: Where to connect.
        deadline: Seconds a whole fetch may take, headers and body.
        budget: The self-fetch budget when the site is this project's own, else None.
        verify: Verify the front door's certificate (https) against the site's name.
        ca_file: The authorities to verify it with, instead of the system's.
    """

    site: str
    door: FrontDoor
    deadline: float
    budget: SelfFetchBudget | None = None
    verify: bool = True
    ca_file: str | None = None

    def fetch(self, path: str, *, cap: int, truncate: bool = False, method: str = "GET") -> Fetched:
        """GET ``path`` (an origin-form target built from checked segments).

        Args:
            path: ``/…``, already percent-encoded, never an absolute URL.
            cap: The most body bytes (decoded) to keep.
            truncate: At the cap, stop and answer what was read (``complete=False``) instead of
                failing ``too-large``.
            method: The request method, sent as given (``GET`` unless a caller asks otherwise).

        Raises:
            FetchFailed: timeout, unreachable, too-large or busy.
        """
        assert path.startswith("/") and not path.startswith("//"), path
        assert all(0x21 <= ord(ch) < 0x7F for ch in path), "the target is percent-encoded ASCII"
        if self.budget is not None and not self.budget.acquire():
            raise FetchFailed(
                "busy",
                f"this worker already has {self.budget.limit} page reads of its own site in "
                "flight; one more could leave it no thread to answer them — try again shortly",
            )
        try:
            with tracing.span(
                method,
                {"http.request.method": method, "server.address": self.site, "url.path": path},
                client=True,
            ):
                fetched = self._fetch(path, cap, truncate, method)
                tracing.note(**{"http.response.status_code": fetched.status})
                return fetched
        finally:
            if self.budget is not None:
                self.budget.release()

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        if self.door.scheme == "https":
            paths = ssl.get_default_verify_paths()
            context = _tls_context(self.verify, self.ca_file, paths.cafile, paths.capath)
            return _SniHTTPSConnection(
                self.door.host, self.door.port, self.site, context, timeout=timeout
            )
        return http.client.HTTPConnection(self.door.host, self.door.port, timeout=timeout)

    def _fetch(self, path: str, cap: int, truncate: bool, method: str) -> Fetched:
        started = time.monotonic()
        deadline = started + self.deadline
        fetched_at = datetime.now(UTC).replace(microsecond=0)
        conn = self._connection(self.deadline)
        token: int | None = None
        try:
            try:
                conn.connect()
                if conn.sock is not None:
                    token = _WATCHDOG.watch(conn.sock, deadline)
                conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
                conn.putheader("Host", self.site)
                conn.putheader("User-Agent", USER_AGENT)
                conn.putheader("Accept", "text/html,*/*;q=0.8")
                conn.putheader("Accept-Encoding", "identity")
                conn.putheader("Connection", "close")
                conn.endheaders()
                response = conn.getresponse()
                headers = list(response.getheaders())
                status, reason = response.status, response.reason
                body, complete, encoded = _read_body(response, headers, cap, truncate, deadline)
            except FetchFailed:
                raise
            except TimeoutError as exc:
                raise FetchFailed("timeout", f"no answer within {self.deadline:g} s") from exc
            except (OSError, http.client.HTTPException, ssl.SSLError, ValueError) as exc:
                if time.monotonic() >= deadline:
                    raise FetchFailed(
                        "timeout", f"the answer took longer than {self.deadline:g} s"
                    ) from exc
                raise FetchFailed("unreachable", _describe(exc)) from exc
        finally:
            if token is not None:
                _WATCHDOG.cancel(token)
            conn.close()
        declared = _content_length(headers)
        return Fetched(
            status=status,
            reason=reason,
            headers=headers,
            body=body,
            complete=complete,
            declared_length=declared,
            fetched_at=fetched_at,
            elapsed=time.monotonic() - started,
            encoded=encoded,
        )


def _content_length(headers: list[tuple[str, str]]) -> int | None:
    for key, value in headers:
        if key.lower() == "content-length" and value.strip().isdigit():
            return int(value.strip())
    return None


#: Failure → the sentence ``unreachable`` says about it; the first class that matches wins, so
#: a subclass comes before its base.
_DESCRIPTIONS: tuple[tuple[type[BaseException], Callable[[Any], str]], ...] = (
    (
        ConnectionRefusedError,
        lambda exc: "the front door refused the connection (nothing listens there)",
    ),
    (
        http.client.IncompleteRead,
        lambda exc: (
            f"the body ended after {len(exc.partial)} bytes, short of the length it announced"
        ),
    ),
    (
        ssl.SSLCertVerificationError,
        lambda exc: (
            f"TLS failed: the front door's certificate is not trusted ({exc.verify_message})"
        ),
    ),
    (ssl.SSLError, lambda exc: f"TLS failed: {exc.reason or exc}"),
    (
        http.client.HTTPException,
        lambda exc: f"the answer is not well-formed HTTP ({type(exc).__name__})",
    ),
    (ConnectionError, lambda exc: "the connection was closed before a whole answer arrived"),
)


def _describe(exc: BaseException) -> str:
    """One sentence on why a fetch failed, for ``unreachable``."""
    for kind, say in _DESCRIPTIONS:
        if isinstance(exc, kind):
            return say(exc)
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return f"the fetch failed: {text}"


def _decoder(headers: list[tuple[str, str]]) -> zlib._Decompress | None:
    encoding = ""
    for key, value in headers:
        if key.lower() == "content-encoding":
            encoding = value.strip().lower()
    if encoding in {"", "identity"}:
        return None
    if encoding in {"gzip", "x-gzip"}:
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        return zlib.decompressobj()
    raise FetchFailed("unreachable", f"the body is encoded {encoding!r}, which is not read here")


def _read_body(
    response: http.client.HTTPResponse,
    headers: list[tuple[str, str]],
    cap: int,
    truncate: bool,
    deadline: float,
) -> tuple[bytes, bool, bool]:
    """Read at most ``cap`` decoded bytes: (body, complete, was-encoded)."""
    decoder = _decoder(headers)
    declared = _content_length(headers)
    if decoder is None and declared is not None and declared > cap and not truncate:
        raise FetchFailed("too-large", f"the body is {declared} bytes", size=declared)
    out = bytearray()
    while True:
        _before_deadline(deadline)
        chunk = response.read1(_CHUNK)
        if not chunk:
            _before_deadline(deadline)
            missing = response.length
            if missing:  # the connection ended before the length it announced
                raise FetchFailed(
                    "unreachable",
                    f"the body ended {missing} bytes short of the length it announced",
                )
            break
        if _take(out, chunk, decoder, cap):
            return _over_cap(out, cap, truncate, decoder is not None, " (decoded)")
    if decoder is not None:
        out += decoder.flush(cap - len(out) + 1)
        if len(out) > cap:
            return _over_cap(out, cap, truncate, True, "")
    return bytes(out), True, decoder is not None


def _before_deadline(deadline: float) -> None:
    """Refuse ``timeout`` once the deadline has passed while the body is read."""
    if time.monotonic() >= deadline:
        raise FetchFailed("timeout", "the body was still arriving at the deadline")


def _take(out: bytearray, chunk: bytes, decoder: zlib._Decompress | None, cap: int) -> bool:
    """Add a chunk to ``out`` (inflated no further than one byte past the cap): over the cap?"""
    if decoder is None:
        out += chunk
        return len(out) > cap
    out += decoder.decompress(chunk, cap - len(out) + 1)
    return bool(decoder.unconsumed_tail) or len(out) > cap


def _over_cap(
    out: bytearray, cap: int, truncate: bool, encoded: bool, what: str
) -> tuple[bytes, bool, bool]:
    """A body past the cap: its first ``cap`` bytes when truncating, else ``too-large``."""
    if truncate:
        return bytes(out[:cap]), False, encoded
    raise FetchFailed("too-large", f"the body is more than {cap} bytes{what}", size=len(out))
