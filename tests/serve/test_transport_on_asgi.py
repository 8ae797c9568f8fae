"""The transport tests that talk HTTP to a live server, against the ASGI serving model.

The tests of ``tests/transport`` that reach the endpoint over loopback (``test_http_envelope``,
``test_wire_schema``, ``test_sdk_clients``, ``test_metadata``, ``test_sdk_full_session``) run
here again, unchanged, with the box served by ``tmsite.serve.app`` (on uvicorn, in this
process, so each test's settings reach it) instead of Django's live server: prepared answers in
the event loop, the rest on the request threads, every refusal, header, batch, notification
and SDK session as the ordinary path gives them (the tests there that do not reach the server,
stdio and in-process ones, are not run again).

Also here: which requests are answered in the event loop, and which on a thread.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import httpx
import pytest
from django.core import signals
from django.test.utils import override_settings

from tests import wire_schema
from tests.serve.inthread import served
from tests.transport import (
    test_http_envelope,
    test_metadata,
    test_sdk_clients,
    test_sdk_full_session,
    test_wire_schema,
)
from tests.waiting import wait_until
from tmsite.oplog.models import RequestLog
from tmsite.serve.app import Application
from tmsite.streams import stream

pytestmark = [
    pytest.mark.spec("T1", "T2", "T3", "T4", "T5", "T6", "T7", "T8", "T9", "T10", "T12", "OP5"),
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

COPIED: tuple[ModuleType, ...] = (
    test_http_envelope,
    test_wire_schema,
    test_sdk_clients,
    test_metadata,
    test_sdk_full_session,
)


#: The fixtures through which a copied test reaches the server.
SERVED_BY = frozenset({"mcp_url", "live_server", "origin"})


def _copied(module: ModuleType) -> dict[str, Any]:
    """The module's fixtures, and its tests that reach the server over HTTP."""

    def wanted(name: str, value: Any) -> bool:
        if type(value).__name__ == "FixtureFunctionDefinition":
            return True
        return name.startswith("test_") and bool(
            SERVED_BY & set(inspect.signature(value).parameters)
        )

    return {name: value for name, value in vars(module).items() if wanted(name, value)}


wire_schema.install_on_serve()
for _module in COPIED:
    globals().update(_copied(_module))


@dataclass(frozen=True)
class Served:
    """What the copied tests use of Django's ``live_server``: its URL.

    pytest-django enables and disables a live server's settings around each test that asks
    for one; this server changes none.
    """

    url: str
    _live_server_modified_settings: override_settings = field(default_factory=override_settings)


@pytest.fixture(scope="module")
def asgi_url() -> Iterator[str]:
    with served(Application()) as url:
        yield url


@pytest.fixture
def live_server(asgi_url: str, transactional_db: Any) -> Iterator[Served]:
    yield Served(asgi_url)
    # A stream a client opened (a 2025 session's GET) may still be claiming its session in the
    # database when the client is done; it ends before the database is emptied for the next test.
    streams_ended()


def streams_ended(seconds: float = 10.0) -> None:
    """Wait until the served application holds no stream; end those left at half the time."""
    deadline = time.monotonic() + seconds
    asked = False
    while stream.open_streams() and time.monotonic() < deadline:
        if not asked and time.monotonic() > deadline - seconds / 2:
            for loop in stream.loops():
                loop.call_soon_threadsafe(stream.close_all)
            asked = True
        time.sleep(0.01)
    assert stream.open_streams() == 0, "a stream outlived its test"


@pytest.fixture
def mcp_url(live_server: Served) -> str:
    return f"{live_server.url}/api/mcp"


@pytest.fixture
def streams_served() -> bool:
    return True


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as client:
        yield client


# --- where each request is answered -----------------------------------------------------------


@pytest.fixture
def threaded() -> Iterator[list[str]]:
    """The paths of the requests Django's ``request_started`` was sent for (a thread ran them)."""
    seen: list[str] = []

    def started(sender: Any, environ: dict[str, Any], **kwargs: Any) -> None:
        seen.append(str(environ.get("PATH_INFO")))

    signals.request_started.connect(started, dispatch_uid="tm-test-threaded")
    try:
        yield seen
    finally:
        signals.request_started.disconnect(dispatch_uid="tm-test-threaded")


def _call(http: httpx.Client, url: str, method: str, rid: int, **params: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params:
        body["params"] = params
    reply = http.post(
        url,
        content=json.dumps(body),
        headers={"Content-Type": "application/json", "MCP-Protocol-Version": "2025-11-25"},
    )
    assert reply.status_code == 200, reply.text
    answer = reply.json()
    assert answer["id"] == rid and "result" in answer, answer
    return dict(answer)


def test_prepared_answers_are_given_in_the_loop_and_the_rest_on_a_thread(
    http: httpx.Client, mcp_url: str, threaded: list[str]
) -> None:
    _call(http, mcp_url, "tools/list", 1)  # builds the prepared answer, on a thread
    assert threaded == ["/api/mcp"]
    for rid in range(2, 7):
        _call(http, mcp_url, "tools/list", rid)
        _call(http, mcp_url, "ping", 100 + rid)
    assert threaded == ["/api/mcp", "/api/mcp"]  # the first ping's build; none since
    _call(http, mcp_url, "resources/read", 20, uri="tm://tinymachines/fs/docs/README.md")
    assert threaded == ["/api/mcp"] * 3
    home = http.get(mcp_url.removesuffix("/api/mcp") + "/")
    assert home.status_code == 200 and "text/html" in home.headers["content-type"]
    assert threaded == ["/api/mcp"] * 3 + ["/"]


def test_an_answer_in_the_loop_is_logged_and_limited_as_on_a_thread(
    http: httpx.Client, mcp_url: str, threaded: list[str], settings: Any
) -> None:
    """The same request-log rows, the same rate-limit headers, wherever it was answered."""
    from tmsite.oplog import recorder

    settings.TM_RATE_EXEMPT = []
    _call(http, mcp_url, "ping", 1)
    replies = [
        http.post(
            mcp_url,
            content=json.dumps({"jsonrpc": "2.0", "id": rid, "method": "ping"}),
            headers={"Content-Type": "application/json", "MCP-Protocol-Version": "2025-11-25"},
        )
        for rid in (2, 3)
    ]
    assert len(threaded) == 1
    limits = [reply.headers["ratelimit"] for reply in replies]
    assert all(value.startswith('"tm";r=') for value in limits), limits
    assert replies[0].headers["ratelimit-policy"] == replies[1].headers["ratelimit-policy"]
    assert replies[1].headers["x-content-type-options"] == "nosniff"
    recorder.flush()
    rows = list(RequestLog.objects.order_by("id").values_list("method", "outcome", "status"))
    assert rows == [("ping", "ok", 200)] * 3


def test_a_row_recorded_in_the_loop_never_writes_the_batch_there(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch that fell due in an event loop is written by the log's own thread, at once."""
    import threading
    from datetime import UTC, datetime

    from tmsite.oplog import recorder
    from tmsite.oplog.recorder import Row

    settings.TM_LOG_FLUSH_ROWS = 1
    settings.TM_LOG_FLUSH_SECONDS = 60.0  # its own ticks are far apart: only the wake-up writes
    writers: list[str] = []
    insert = recorder._insert

    def noted(rows: list[Row]) -> None:  # the real write; only who wrote it is noted
        writers.append(threading.current_thread().name)
        insert(rows)

    row = Row(at=datetime.now(UTC), surface="mcp-http", method="ping", outcome="ok", status=200)
    monkeypatch.setattr(recorder, "_insert", noted)

    async def in_the_loop() -> None:
        recorder.record(row)

    loop = threading.Thread(target=asyncio.run, args=(in_the_loop(),))
    loop.start()
    loop.join()
    # the batch leaves the buffer before its insert commits: the row itself is waited for
    wait_until(lambda: RequestLog.objects.exists(), what="the row written")
    assert writers == ["tm-oplog-flusher"], writers
    assert recorder.pending() == 0
    assert list(RequestLog.objects.values_list("method", flat=True)) == ["ping"]


def test_a_long_answer_is_streamed_as_made_and_arrives_whole(
    http: httpx.Client, live_server: Served, threaded: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A site answer past ``STREAM_AFTER`` is sent in pieces as the thread makes it."""
    from tmsite.serve import app

    gathered = http.get(f"{live_server.url}/")
    assert gathered.status_code == 200 and len(gathered.content) > 1000
    monkeypatch.setattr(app, "STREAM_AFTER", 100)
    with http.stream("GET", f"{live_server.url}/") as streamed:
        assert streamed.status_code == 200
        assert streamed.headers["content-type"] == gathered.headers["content-type"]
        body = streamed.read()
    assert body == gathered.content
    assert threaded == ["/", "/"]
