"""A failure inside the server: the right answer on each surface, the right row, one log line.

The faults are real where they can be: the entity table is gone from the database (an entity
read fails in the mount), the rate limit's bucket file cannot be opened (its directory is a
regular file: the limit code fails before any route runs). A middleware that fails is the one
fault no shipped middleware can be made to produce on these paths, so a test middleware raises.

MCP answers -32603 carrying the request's id (both eras, a batch one error per request); REST
answers its JSON refusal shape (``reason: internal``) with 500, never Django's HTML page; the
request log row has the real method, kind and target, ``internal`` and the status sent; and five
failures of one kind are one traceback in the log, not five.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, transaction
from django.test import Client

from tests.oplog.conftest import CALLER
from tmsite.callers import buckets
from tmsite.callers.clock import FakeClock
from tmsite.entities.loaders import fill, read_checkout
from tmsite.entities.models import Pattern
from tmsite.oplog import failures, recorder
from tmsite.oplog.models import RequestLog

pytestmark = pytest.mark.spec("OP2", "T6")

ROOT = Path(__file__).resolve().parents[2]
FILE = "tm://tinymachines/fs/docs/index.md"
STATELESS = "2026-07-28"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": STATELESS,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def mcp(client: Client, method: str, rid: Any = 1, modern: bool = False, **params: Any) -> Any:
    headers: dict[str, str] = {"X-Forwarded-For": CALLER}
    if modern:
        params["_meta"] = MODERN_META
        headers.update({"MCP-Protocol-Version": STATELESS, "Mcp-Method": method})
        if "uri" in params:
            headers["Mcp-Name"] = params["uri"]
    else:
        headers["MCP-Protocol-Version"] = "2025-06-18"
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    return client.post(
        "/api/mcp", json.dumps(body), content_type="application/json", headers=headers
    )


def rows() -> list[tuple[str, str, str, str, str, int]]:
    recorder.flush()
    return [
        (r.surface, r.method, r.kind, r.target, r.outcome, r.status)
        for r in RequestLog.objects.order_by("id")
    ]


def internal_error(reply: Any, rid: Any) -> None:
    assert reply.status_code == 200, reply.content
    assert reply["Content-Type"] == "application/json"
    assert reply.json() == {
        "jsonrpc": "2.0",
        "id": rid,
        "error": {"code": -32603, "message": "Internal error."},
    }


def rest_internal(reply: Any) -> None:
    assert reply.status_code == 500
    assert reply["Content-Type"] == "application/json"
    assert reply.json() == {
        "error": "The server failed to answer this request; the failure is in its log.",
        "reason": "internal",
    }


def failure_lines(caplog: Any) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.fixture
def entity_table_gone(db: None) -> Iterator[str]:
    """The shipped records loaded, then the patterns' table dropped (until the test ends)."""
    fill(read_checkout(ROOT))
    key = Pattern.objects.order_by("key").values_list("key", flat=True).first()
    point = transaction.savepoint()
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE {connection.ops.quote_name(Pattern._meta.db_table)}")
    try:
        yield f"tm://tinymachines/entity/pattern/{key}"
    finally:
        transaction.savepoint_rollback(point)


@pytest.fixture
def bucket_file_unusable(settings: Any, tmp_path: Path) -> Iterator[None]:
    """The rate limit on its file store, whose directory is a regular file."""
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    settings.TM_RATE_LIMIT = True
    settings.TM_RATE_STORE = "file"
    settings.TM_RATE_FILE = blocker / "ratelimit.buckets"
    buckets._stores.clear()
    yield
    buckets._stores.clear()


@pytest.mark.parametrize("modern", [False, True], ids=["2025-06-18", "2026-07-28"])
def test_a_read_that_fails_in_its_mount_is_32603_with_its_id(
    entity_table_gone: str, modern: bool, caplog: Any
) -> None:
    client = Client()
    for rid in (11, "twelve", 13, 14, 15):
        reply = mcp(client, "resources/read", rid, modern, uri=entity_table_gone)
        internal_error(reply, rid)
        assert b"no such table" not in reply.content
    row = ("mcp-http", "resources/read", "entity", entity_table_gone, "internal", 200)
    assert rows() == [row] * 5
    [line] = failure_lines(caplog)
    assert line.name == "tmsite.failures" and line.exc_info is not None
    assert "no such table" in str(line.exc_info[1])


def test_rest_answers_its_json_shape_and_500_never_the_html_page(
    entity_table_gone: str, caplog: Any
) -> None:
    client = Client(raise_request_exception=False)
    for _ in range(5):
        rest_internal(client.get("/api/v1/resolve", {"uri": entity_table_gone}))
    assert rows() == [("rest", "GET resolve", "entity", entity_table_gone, "internal", 500)] * 5
    [line] = failure_lines(caplog)  # and no "Internal Server Error" per request
    assert line.name == "tmsite.failures" and "rest request" in line.getMessage()


@pytest.mark.django_db
def test_the_limit_code_failing_is_answered_with_the_id_on_both_surfaces(
    bucket_file_unusable: None, caplog: Any
) -> None:
    client = Client(raise_request_exception=False)
    internal_error(mcp(client, "resources/read", 21, uri=FILE), 21)
    internal_error(mcp(client, "tools/list", 22, modern=True), 22)
    reply = client.get("/api/v1/resolve", {"uri": FILE}, headers={"X-Forwarded-For": CALLER})
    rest_internal(reply)
    assert "RateLimit" not in reply.headers
    assert rows() == [
        ("mcp-http", "resources/read", "fs", FILE, "internal", 200),
        ("mcp-http", "tools/list", "protocol", "", "internal", 200),
        ("rest", "GET resolve", "fs", FILE, "internal", 500),
    ]
    assert [r.getMessage().split(":")[0] for r in failure_lines(caplog)] == [
        "internal failure in mcp-http rate limit",
        "internal failure in rest rate limit",
    ]


@pytest.mark.django_db
def test_a_batch_answers_every_request_in_it_with_its_id(bucket_file_unusable: None) -> None:
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "b", "method": "resources/read", "params": {"uri": FILE}},
    ]
    reply = Client().post(
        "/api/mcp",
        json.dumps(batch),
        content_type="application/json",
        headers={"X-Forwarded-For": CALLER},
    )
    assert reply.status_code == 200
    error = {"code": -32603, "message": "Internal error."}
    assert reply.json() == [
        {"jsonrpc": "2.0", "id": 1, "error": error},
        {"jsonrpc": "2.0", "id": "b", "error": error},
    ]
    assert [(r[1], r[4]) for r in rows()] == [("ping", "internal"), ("resources/read", "internal")]


class FailingMiddleware:
    """A middleware that fails on every request (no shipped one can be made to)."""

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: Any) -> Any:
        raise RuntimeError("the middleware failed")


@pytest.mark.django_db
def test_a_failure_outside_every_view_keeps_each_surfaces_shape(settings: Any, caplog: Any) -> None:
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, f"{__name__}.FailingMiddleware"]
    client = Client(raise_request_exception=False)
    internal_error(mcp(client, "resources/read", 31, uri=FILE), 31)
    internal_error(mcp(client, "resources/read", 32, modern=True, uri=FILE), 32)
    unreadable = client.post("/api/mcp", b"{not json", content_type="application/json")
    assert unreadable.status_code == 500
    assert unreadable.json() == {
        "jsonrpc": "2.0",
        "error": {"code": -32603, "message": "Internal error."},
    }
    rest_internal(client.get("/api/v1/resolve", {"uri": FILE}))
    page = client.get("/")
    assert page.status_code == 500 and page["Content-Type"].startswith("text/html")
    assert rows() == [
        ("mcp-http", "resources/read", "fs", FILE, "internal", 200),
        ("mcp-http", "resources/read", "fs", FILE, "internal", 200),
        ("mcp-http", "", "", "", "internal", 500),
        ("rest", "GET resolve", "fs", FILE, "internal", 500),
    ]
    # one line per surface, each with its traceback; none from Django per request
    lines = failure_lines(caplog)
    assert [r.name for r in lines] == ["tmsite.failures"] * 3
    assert all(r.exc_info is not None for r in lines)


def test_one_line_per_class_per_interval(monkeypatch: pytest.MonkeyPatch, caplog: Any) -> None:
    clock = FakeClock(100.0)
    monkeypatch.setattr(failures, "clock", clock)
    caplog.set_level(logging.ERROR, logger="tmsite.failures")

    def fail(where: str, exc: Exception, times: int, step: float = 1.0) -> None:
        for _ in range(times):
            try:
                raise exc
            except Exception as raised:
                failures.report(where, raised)
            clock.advance(step)

    fail("mcp-http request", ConnectionError("refused"), 30)  # 30 s of failures: one line
    fail("rest request", ConnectionError("refused"), 3)  # another class: its own line
    assert [(r.getMessage(), r.exc_info is not None) for r in caplog.records] == [
        (
            "internal failure in mcp-http request: ConnectionError: refused "
            "(further ones are counted, one line a minute)",
            True,
        ),
        (
            "internal failure in rest request: ConnectionError: refused "
            "(further ones are counted, one line a minute)",
            True,
        ),
    ]
    caplog.clear()
    fail("mcp-http request", ConnectionError("still refused"), 40)  # past the minute: a count
    [line] = caplog.records
    assert line.exc_info is None
    assert line.getMessage() == (
        "internal failure in mcp-http request: ConnectionError: 57 more in the last 60 s; "
        "the latest: still refused"
    )
    caplog.clear()
    clock.advance(60)
    failures.summarize()  # what was counted since is told once, when its interval is over
    assert [r.getMessage() for r in caplog.records] == [
        "internal failure in mcp-http request: ConnectionError: 12 more in the last 73 s, "
        "none since",
        "internal failure in rest request: ConnectionError: 2 more in the last 103 s, none since",
    ]
    caplog.clear()
    failures.summarize()
    fail("mcp-http request", ConnectionError("again"), 1)  # quiet for a minute: a new traceback
    [line] = caplog.records
    assert line.exc_info is not None and "again" in line.getMessage()
    assert failures.totals() == {
        "mcp-http request: ConnectionError": 71,
        "rest request: ConnectionError": 3,
    }


@pytest.mark.django_db
def test_a_redis_at_a_closed_port_never_gives_an_idless_or_html_answer(
    settings: Any, caplog: Any
) -> None:
    """The shared cache's address answers nothing (a closed loopback port).

    Whether a request is then answered (the limit falls back) or fails, it is answered with its
    id, REST in JSON, each row says what was asked and how it ended as the answer says, and the
    log holds at most one line per class of failure, not one per request.
    """
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again when the block ends
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{port}/0",
        }
    }
    settings.TM_RATE_LIMIT = True
    settings.TM_RATE_STORE = "redis"
    buckets._stores.clear()
    client = Client(raise_request_exception=False)
    outcomes = []
    for rid in range(6):
        body = mcp(client, "resources/read", rid, modern=rid % 2 == 1, uri=FILE).json()
        assert body["id"] == rid
        outcomes.append("internal" if "error" in body else "ok")
        if "error" in body:
            assert body["error"] == {"code": -32603, "message": "Internal error."}
    for _ in range(3):
        reply = client.get("/api/v1/resolve", {"uri": FILE}, headers={"X-Forwarded-For": CALLER})
        assert reply["Content-Type"].split(";")[0] == "application/json"
        assert reply.status_code in (200, 500)
        outcomes.append("ok" if reply.status_code == 200 else reply.json()["reason"])
    buckets._stores.clear()
    found = rows()
    assert [(r[0], r[1], r[2], r[3]) for r in found] == [
        *[("mcp-http", "resources/read", "fs", FILE)] * 6,
        *[("rest", "GET resolve", "fs", FILE)] * 3,
    ]
    assert [r[4] for r in found] == outcomes
    lines = failure_lines(caplog)
    assert len(lines) == len({r.getMessage().split(":")[0] for r in lines}) <= 2
