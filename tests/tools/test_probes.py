"""Probes against real HTTP servers on 127.0.0.1, started in the test.

Every server is a ``http.server`` in a thread (or a listening socket that never answers, a
socket that holds its connections until enough of them are open at once, or a port nothing
listens on). A probe that should answer gets a generous timeout it never needs; only where the
timeout is the point is it short, and how long that took is compared with what an answered probe
costs on the same machine just before, never with a fixed number.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tmsite.operations import probes
from tmsite.operations.pieces import Piece
from tmsite.operations.probes import Measurement, Prober, measure, probe_all, probe_one

pytestmark = pytest.mark.spec("TL4")

#: The timeout of probes that should answer: generous, so a slow machine does not turn them into
#: timeouts; reaching it means something is wrong.
TIMEOUT = 5.0
#: The timeout of probes whose point is to time out.
SHORT = 0.3

Behaviour = Callable[[BaseHTTPRequestHandler], None]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, routes: dict[tuple[str, str], Behaviour]) -> None:
        self.routes = routes
        self.hits: list[tuple[str, str, dict[str, str]]] = []
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _dispatch(self) -> None:
        self.server.hits.append((self.command, self.path, dict(self.headers.items())))
        behaviour = self.server.routes.get((self.command, self.path))
        if behaviour is None:
            behaviour = self.server.routes.get(("*", self.path), answer(404))
        behaviour(self)

    do_HEAD = _dispatch
    do_GET = _dispatch


def answer(status: int, headers: dict[str, str] | None = None) -> Behaviour:
    def behave(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(status)
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    return behave


def endless_body(release: threading.Event) -> Behaviour:
    """Promise a gigabyte, send a little, then stall until ``release``: only a client that reads
    the body would wait (and time out)."""

    def behave(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", str(10**9))
        handler.end_headers()
        handler.wfile.write(b"x" * 1024)
        handler.wfile.flush()
        release.wait(60)

    return behave


@pytest.fixture
def serve() -> Iterator[Callable[[dict[tuple[str, str], Behaviour]], tuple[str, _Server]]]:
    servers: list[_Server] = []

    def start(routes: dict[tuple[str, str], Behaviour]) -> tuple[str, _Server]:
        server = _Server(routes)
        threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
        servers.append(server)
        host, port = server.server_address[:2]
        return f"http://{host!s}:{port}", server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def hanging() -> Iterator[Callable[[], str]]:
    """Listening sockets that never accept: the connection opens, no answer ever comes."""
    sockets: list[socket.socket] = []

    def make() -> str:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        sockets.append(sock)
        return f"http://127.0.0.1:{sock.getsockname()[1]}/"

    yield make
    for sock in sockets:
        sock.close()


class _Gate:
    """A listening socket that holds each connection, unanswered, until ``size`` of them are open
    at the same time, then closes them all; a connection its client gives up on is let go.

    ``most_open`` is the largest number of connections that were open together: probes run one
    after another never make it more than one.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.sock = socket.create_server(("127.0.0.1", 0), backlog=16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/"
        self.all_open = threading.Event()
        self.closing = threading.Event()
        self._lock = threading.Lock()
        self._open = 0
        self.most_open = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closing.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._hold, args=(conn,), daemon=True).start()

    def _hold(self, conn: socket.socket) -> None:
        with self._lock:
            self._open += 1
            self.most_open = max(self.most_open, self._open)
            if self._open >= self.size:
                self.all_open.set()
        conn.settimeout(0.02)
        try:
            while not self.all_open.is_set() and not self.closing.is_set():
                try:
                    if conn.recv(4096) == b"":
                        break  # the client gave up on this connection
                except TimeoutError:
                    continue
                except OSError:
                    break
        finally:
            with self._lock:
                self._open -= 1
            conn.close()

    def close(self) -> None:
        self.closing.set()
        self.sock.close()


@pytest.fixture
def gate() -> Iterator[Callable[[int], _Gate]]:
    gates: list[_Gate] = []

    def make(size: int) -> _Gate:
        made = _Gate(size)
        gates.append(made)
        return made

    yield make
    for made in gates:
        made.close()


@pytest.fixture
def closed_port() -> str:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}/"


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    probes.clear_cache()


def piece(key: str, url: str | None) -> Piece:
    return Piece(
        key=key,
        project=None,
        name=key,
        what=f"What {key} is.",
        source="https://github.com/tinymachines/6502",
        ships_as="a service",
        code_licence="MIT",
        data_terms="none",
        embeds_die_data=False,
        public_url=url,
        not_hosted_because=None if url else "a library, not a service",
    )


# --- outcomes -----------------------------------------------------------------------------------


def test_200_is_up(serve: Any) -> None:
    base, server = serve({("HEAD", "/"): answer(200)})
    result = measure(base + "/", TIMEOUT)
    assert result.reachability == "up"
    assert result.http_status == 200
    assert result.latency_ms is not None and 0 <= result.latency_ms < TIMEOUT * 1000
    assert result.detail is None
    assert result.url == base + "/"
    assert [hit[0] for hit in server.hits] == ["HEAD"]


def test_404_is_down(serve: Any) -> None:
    base, _ = serve({})
    result = measure(base + "/gone", TIMEOUT)
    assert result.reachability == "down"
    assert result.http_status == 404
    assert result.latency_ms is not None


def test_500_is_down(serve: Any) -> None:
    base, _ = serve({("HEAD", "/"): answer(503)})
    result = measure(base + "/", TIMEOUT)
    assert (result.reachability, result.http_status) == ("down", 503)


def test_405_on_head_is_asked_again_with_get(serve: Any) -> None:
    base, server = serve({("HEAD", "/"): answer(405, {"Allow": "GET"}), ("GET", "/"): answer(200)})
    result = measure(base + "/", TIMEOUT)
    assert (result.reachability, result.http_status) == ("up", 200)
    assert [hit[0] for hit in server.hits] == ["HEAD", "GET"]


def test_get_after_405_does_not_download_the_body(serve: Any) -> None:
    # The body stalls until the probe has returned: a probe that read it would wait on it until
    # its timeout and report ``unreachable``.
    release = threading.Event()
    base, _ = serve({("HEAD", "/"): answer(405), ("GET", "/"): endless_body(release)})
    try:
        result = measure(base + "/", TIMEOUT)
    finally:
        release.set()
    assert (result.reachability, result.http_status) == ("up", 200)
    assert result.detail is None


def test_redirect_chain_is_followed_to_its_end(serve: Any) -> None:
    base, server = serve(
        {
            ("HEAD", "/a"): answer(302, {"Location": "/b"}),
            ("HEAD", "/b"): answer(301, {"Location": "/c"}),
            ("HEAD", "/c"): answer(307, {"Location": "/end"}),
            ("HEAD", "/end"): answer(200),
        }
    )
    result = measure(base + "/a", TIMEOUT)
    assert (result.reachability, result.http_status) == ("up", 200)
    assert [hit[1] for hit in server.hits] == ["/a", "/b", "/c", "/end"]
    assert result.url == base + "/a"


def test_redirect_to_a_missing_page_is_down(serve: Any) -> None:
    base, _ = serve({("HEAD", "/a"): answer(302, {"Location": "/nothing"})})
    result = measure(base + "/a", TIMEOUT)
    assert (result.reachability, result.http_status) == ("down", 404)


def test_no_cookies_and_no_credentials_are_sent(serve: Any) -> None:
    base, server = serve(
        {
            ("HEAD", "/a"): answer(302, {"Location": "/b", "Set-Cookie": "session=abc; Path=/"}),
            ("HEAD", "/b"): answer(200),
        }
    )
    host = base.removeprefix("http://")
    result = measure(f"http://user:secret@{host}/a", TIMEOUT)
    assert result.reachability == "up"
    for _, _, headers in server.hits:
        lowered = {name.lower() for name in headers}
        assert "cookie" not in lowered
        assert "authorization" not in lowered


def test_hanging_server_is_unreachable_after_the_timeout(serve: Any, hanging: Any) -> None:
    # What a whole answered probe costs on this machine right now: client, connection, answer.
    base, _ = serve({("HEAD", "/"): answer(200)})
    started = time.monotonic()
    assert measure(base + "/", TIMEOUT).reachability == "up"
    answered = time.monotonic() - started

    url = hanging()
    started = time.monotonic()
    result = measure(url, SHORT)
    elapsed = time.monotonic() - started
    assert result.reachability == "unreachable"
    assert result.detail == f"timed out after {SHORT}s"
    assert result.http_status is None and result.latency_ms is None
    # No earlier than its setting, and no later than the setting plus many times the cost of an
    # answered probe (a probe that ignored the setting would wait for httpx's 5 s default).
    assert SHORT <= elapsed < SHORT + max(1.0, 20 * answered), (elapsed, answered)


def test_closed_port_is_unreachable_with_what_failed(closed_port: str) -> None:
    result = measure(closed_port, TIMEOUT)
    assert result.reachability == "unreachable"
    assert result.detail is not None and result.detail.startswith("ConnectError")
    assert result.http_status is None and result.latency_ms is None


def test_piece_without_url_is_not_probed() -> None:
    result = probe_one(piece("lib", None), timeout=TIMEOUT, cache_seconds=30)
    assert result.reachability == "not_probed"
    assert result.url is None
    assert result.http_status is None and result.latency_ms is None
    assert result.detail == "a library, not a service"


# --- many at once -------------------------------------------------------------------------------


def test_probes_run_concurrently_and_keep_the_pieces_order(
    serve: Any, gate: Any, closed_port: str
) -> None:
    # Four hosts that answer nothing until all four are asked at once: probes run one after
    # another would each wait out the timeout, and the gate would never see four together.
    base, _ = serve({("HEAD", "/"): answer(200)})
    held = gate(4)
    pieces = [piece(f"slow{i}", held.url) for i in range(4)]
    pieces[1:1] = [piece("fine", base + "/"), piece("lib", None)]
    pieces.append(piece("closed", closed_port))
    results = probe_all(pieces, timeout=TIMEOUT, cache_seconds=30)
    assert held.most_open == 4, "the four slow hosts were not asked at the same time"
    assert [r.url for r in results] == [p.public_url for p in pieces]
    assert [r.reachability for r in results] == [
        "unreachable",
        "up",
        "not_probed",
        "unreachable",
        "unreachable",
        "unreachable",
        "unreachable",
    ]


def test_a_probe_that_outlives_the_deadline_is_given_up() -> None:
    # The probe stays stuck until the set has answered (or a generous 20 s have passed): the
    # set must answer while it is still stuck, and not before its own deadline.
    release = threading.Event()

    def stuck(url: str, timeout: float) -> Measurement:
        release.wait(60)
        raise AssertionError("never reported")

    prober = Prober(measure=stuck)
    answered: list[Measurement] = []
    target = [piece("stuck", "http://127.0.0.1:9/")]
    caller = threading.Thread(target=lambda: answered.extend(prober.probe_all(target, 0.2, 30)))
    started = time.monotonic()
    caller.start()
    caller.join(20)
    given_up = not caller.is_alive()
    elapsed = time.monotonic() - started
    release.set()
    caller.join(60)
    assert given_up, "the set waited for a probe past its deadline"
    assert elapsed >= 0.2 + probes.GRACE_SECONDS
    [result] = answered
    assert result.reachability == "unreachable"
    assert result.detail == "timed out after 0.2s"


def test_a_probe_that_raises_is_unreachable_with_the_error() -> None:
    def broken(url: str, timeout: float) -> Measurement:
        raise RuntimeError("the resolver is gone")

    [result] = Prober(measure=broken).probe_all([piece("x", "http://127.0.0.1:9/")], 0.2, 30)
    assert result.reachability == "unreachable"
    assert result.detail == "RuntimeError: the resolver is gone"


# --- the cache ----------------------------------------------------------------------------------


def test_second_call_is_answered_from_the_cache(serve: Any) -> None:
    base, server = serve({("HEAD", "/"): answer(200)})
    target = piece("fine", base + "/")
    first = probe_one(target, timeout=TIMEOUT, cache_seconds=30)
    second = probe_all([target], timeout=TIMEOUT, cache_seconds=30)[0]
    assert len(server.hits) == 1
    assert second == first


def test_cache_expires_on_the_monotonic_clock(serve: Any) -> None:
    base, server = serve({("HEAD", "/"): answer(200)})
    now = [1000.0]
    prober = Prober(clock=lambda: now[0])
    target = piece("fine", base + "/")
    prober.probe_all([target], TIMEOUT, 30)
    now[0] += 29.9
    prober.probe_all([target], TIMEOUT, 30)
    assert len(server.hits) == 1
    now[0] += 0.2
    prober.probe_all([target], TIMEOUT, 30)
    assert len(server.hits) == 2


def test_cache_expires_in_real_time(serve: Any) -> None:
    # Asked again and again on the real clock: answered from the cache until ``cache_seconds``
    # have passed, measured afresh soon after (within a generous 30 s).
    base, server = serve({("HEAD", "/"): answer(200)})
    target = piece("fine", base + "/")
    cache_seconds = 0.2
    started = time.monotonic()
    probe_one(target, timeout=TIMEOUT, cache_seconds=cache_seconds)
    while len(server.hits) < 2:
        assert time.monotonic() - started < 30, "the cached answer never expired"
        time.sleep(0.01)
        probe_one(target, timeout=TIMEOUT, cache_seconds=cache_seconds)
    assert time.monotonic() - started >= cache_seconds, "measured again before it expired"
    assert len(server.hits) == 2


def test_zero_cache_seconds_measures_every_time(serve: Any) -> None:
    base, server = serve({("HEAD", "/"): answer(200)})
    target = piece("fine", base + "/")
    probe_one(target, timeout=TIMEOUT, cache_seconds=0)
    probe_one(target, timeout=TIMEOUT, cache_seconds=0)
    assert len(server.hits) == 2


def test_cache_is_per_piece_and_url(serve: Any) -> None:
    base, server = serve({("HEAD", "/"): answer(200), ("HEAD", "/other"): answer(200)})
    probe_one(piece("one", base + "/"), timeout=TIMEOUT, cache_seconds=30)
    probe_one(piece("two", base + "/"), timeout=TIMEOUT, cache_seconds=30)
    probe_one(piece("one", base + "/other"), timeout=TIMEOUT, cache_seconds=30)
    assert len(server.hits) == 3


def test_unreachable_answers_are_cached_too(hanging: Any) -> None:
    now = [0.0]
    prober = Prober(clock=lambda: now[0])
    target = piece("slow", hanging())
    first = prober.probe_all([target], 0.2, 30)[0]
    assert first.reachability == "unreachable"
    assert prober.probe_all([target], 0.2, 30)[0] is first


# --- timestamps ---------------------------------------------------------------------------------


def test_each_measurement_is_timestamped_in_utc(serve: Any, closed_port: str) -> None:
    base, _ = serve({("HEAD", "/"): answer(200)})
    before = datetime.now(UTC)
    results = probe_all(
        [piece("fine", base + "/"), piece("closed", closed_port), piece("lib", None)],
        timeout=TIMEOUT,
        cache_seconds=30,
    )
    after = datetime.now(UTC)
    for result in results:
        assert result.checked_at.utcoffset() is not None
        assert result.checked_at.utcoffset().total_seconds() == 0  # type: ignore[union-attr]
        assert before <= result.checked_at <= after
        assert result.model_dump(mode="json")["checked_at"].endswith("Z")


def test_a_cached_measurement_keeps_its_own_time(serve: Any) -> None:
    base, _ = serve({("HEAD", "/"): answer(200)})
    target = piece("fine", base + "/")
    first = probe_one(target, timeout=TIMEOUT, cache_seconds=30)
    time.sleep(0.05)
    again = probe_one(target, timeout=TIMEOUT, cache_seconds=30)
    assert again.checked_at == first.checked_at


def test_defaults_come_from_settings(settings: Any, serve: Any) -> None:
    base, server = serve({("HEAD", "/"): answer(200)})
    settings.TM_PROBE_TIMEOUT = TIMEOUT
    settings.TM_PROBE_CACHE_SECONDS = 0
    target = piece("fine", base + "/")
    probe_one(target)
    probe_all([target])
    assert len(server.hits) == 2
