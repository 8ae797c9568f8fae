"""The request log: one row per request with what was asked and how it ended, written in
batches, kept 30 days, shown in the admin only as aggregates, and never in the namespace."""

from __future__ import annotations

import io
import json
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from tmsite.mcp.stdio import StdioSession
from tmsite.oplog import recorder
from tmsite.oplog.logs import JsonFormatter
from tmsite.oplog.models import RequestLog
from tmsite.oplog.recorder import Row

pytestmark = pytest.mark.spec("OP2")

FILE = "tm://tinymachines/fs/docs/index.md"

#: Every column the log has. A new column is a decision: add it here only if it says nothing
#: about who asked.
COLUMNS = {
    "id",
    "at",
    "surface",
    "method",
    "kind",
    "target",
    "facet",
    "protocol",
    "outcome",
    "status",
    "bytes",
    "duration_us",
}


def post(client: Client, body: Any, **headers: str) -> Any:
    return client.post(
        "/api/mcp", json.dumps(body), content_type="application/json", headers=headers
    )


def rows() -> list[RequestLog]:
    recorder.flush()
    return list(RequestLog.objects.order_by("id"))


def test_the_log_has_no_column_for_who_asked() -> None:
    assert {field.column for field in RequestLog._meta.get_fields()} == COLUMNS


@pytest.mark.django_db
def test_a_read_is_one_row_with_what_was_asked_and_how_it_ended() -> None:
    reply = post(
        Client(),
        {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": FILE}},
        **{"MCP-Protocol-Version": "2025-06-18"},
    )
    [row] = rows()
    assert (row.surface, row.method, row.kind, row.target, row.facet) == (
        "mcp-http",
        "resources/read",
        "fs",
        FILE,
        "",
    )
    assert (row.protocol, row.outcome, row.status) == ("2025-06-18", "ok", 200)
    assert row.bytes == len(reply.content)
    assert row.duration_us > 0
    assert abs(row.at - datetime.now(UTC)) < timedelta(minutes=1)


@pytest.mark.django_db
def test_refusals_and_errors_are_recorded_by_reason_or_code() -> None:
    client = Client()
    missing = "tm://tinymachines/fs/docs/nothing-here.md?as=stat"
    post(
        client, {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": missing}}
    )
    post(client, {"jsonrpc": "2.0", "id": 2, "method": "no/such"})
    post(
        client,
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "piece", "arguments": {"key": "no-such-piece"}},
        },
    )
    post(
        client,
        {"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": "http://x/"}},
    )
    client.post("/api/mcp", "{}", content_type="text/plain")
    client.get("/api/mcp")
    post(client, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    client.get("/api/v1/resolve", {"uri": missing})
    found = [(r.surface, r.method, r.kind, r.target, r.facet, r.outcome, r.status) for r in rows()]
    assert found == [
        ("mcp-http", "resources/read", "fs", missing, "stat", "not-found", 200),
        ("mcp-http", "no/such", "protocol", "", "", "rpc-32601", 200),
        ("mcp-http", "tools/call", "tool:piece", "piece", "", "not-found", 200),
        ("mcp-http", "resources/read", "bad-uri", "", "", "bad-uri", 200),
        ("mcp-http", "", "", "", "", "rpc-32600", 415),
        ("mcp-http", "", "", "", "", "rpc-32600", 405),
        ("mcp-http", "", "", "", "", "accepted", 202),
        ("rest", "GET resolve", "fs", missing, "stat", "not-found", 404),
    ]


@pytest.mark.django_db
def test_a_tool_call_keeps_the_tool_and_not_its_arguments() -> None:
    post(
        Client(),
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "resolve", "arguments": {"uri": FILE + "?lines=1-2"}},
        },
    )
    [row] = rows()
    assert (row.method, row.kind, row.target, row.facet, row.outcome) == (
        "tools/call",
        "fs",
        "resolve",
        "",
        "ok",
    )
    assert "lines" not in json.dumps([getattr(row, c) for c in COLUMNS - {"at"}])


@pytest.mark.django_db
def test_a_batch_is_one_row_per_request() -> None:
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": FILE}},
    ]
    post(Client(), batch)
    assert [(r.method, r.outcome, r.status) for r in rows()] == [
        ("ping", "ok", 200),
        ("resources/read", "ok", 200),
    ]


@pytest.mark.django_db
def test_stdio_requests_are_recorded_too() -> None:
    session = StdioSession()
    line = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18"},
    }
    reply = session.handle_line(json.dumps(line).encode())
    assert reply is not None
    [row] = rows()
    assert (row.surface, row.method, row.protocol, row.outcome) == (
        "mcp-stdio",
        "initialize",
        "2025-06-18",
        "ok",
    )
    assert row.bytes == len(reply.encode())


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("asked", "recorded"),
    [("2025-11-25", "2025-11-25"), ("2024-11-05", "2024-11-05"), ("1999-01-01", "2025-11-25")],
)
def test_a_handshake_is_recorded_in_the_version_it_negotiates(asked: str, recorded: str) -> None:
    """No header comes with ``initialize``: the row says what the answer agreed, not 2025-03-26."""
    reply = post(
        Client(),
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": asked}},
    )
    assert reply.json()["result"]["protocolVersion"] == recorded
    [row] = rows()
    assert (row.method, row.protocol, row.outcome) == ("initialize", recorded, "ok")


@pytest.mark.django_db
def test_rows_are_written_in_batches(settings: Any, django_assert_num_queries: Any) -> None:
    """Forty-nine requests cost no database write; the fiftieth writes all fifty at once."""
    settings.TM_LOG_FLUSH_ROWS = 50
    settings.TM_LOG_FLUSH_SECONDS = 3600
    recorder._state["last_purge"] = 1e18  # keep the purge out of the count
    now = datetime.now(UTC)
    try:
        with django_assert_num_queries(0):
            for _ in range(49):
                recorder.record(Row(at=now, surface="rest", method="GET templates"))
        assert recorder.pending() == 49
        with django_assert_num_queries(1):
            recorder.record(Row(at=now, surface="rest", method="GET templates"))
    finally:
        recorder._state["last_purge"] = 0.0
    assert recorder.pending() == 0
    assert RequestLog.objects.count() == 50


@pytest.mark.django_db
def test_rows_that_waited_long_enough_are_written_on_the_next_request(settings: Any) -> None:
    settings.TM_LOG_FLUSH_ROWS = 1000
    settings.TM_LOG_FLUSH_SECONDS = 3600
    now = datetime.now(UTC)
    recorder.record(Row(at=now, surface="rest"))
    with recorder._lock:
        recorder._buffer[0].queued -= 3600
    recorder.record(Row(at=now, surface="rest"))
    assert recorder.pending() == 0
    assert RequestLog.objects.count() == 2


# --- retention --------------------------------------------------------------------------------

NOW = datetime(2026, 6, 30, 12, 0, 0, tzinfo=UTC)
AGES = {
    "31 days": timedelta(days=31),
    "30 days and a second": timedelta(days=30, seconds=1),
    "30 days and a microsecond": timedelta(days=30, microseconds=1),
    "exactly 30 days": timedelta(days=30),
    "30 days less a second": timedelta(days=30) - timedelta(seconds=1),
    "a day": timedelta(days=1),
    "now": timedelta(0),
}


def _aged() -> None:
    RequestLog.objects.bulk_create(
        RequestLog(at=NOW - age, surface="rest", method=name, outcome="ok")
        for name, age in AGES.items()
    )


@pytest.mark.django_db
def test_retention_deletes_exactly_the_rows_past_30_days() -> None:
    _aged()
    assert recorder.purge(NOW).deleted == 3
    assert sorted(RequestLog.objects.values_list("method", flat=True)) == sorted(
        ["exactly 30 days", "30 days less a second", "a day", "now"]
    )
    assert recorder.purge(NOW).deleted == 0


@pytest.mark.django_db
def test_the_purge_command(monkeypatch: pytest.MonkeyPatch) -> None:
    _aged()
    monkeypatch.setattr(recorder.timezone, "now", lambda: NOW)
    out = io.StringIO()
    call_command("tm_purge_log", stdout=out)
    assert out.getvalue().splitlines()[0] == "deleted 3 request log rows older than 30 days"
    assert RequestLog.objects.count() == 4


@pytest.mark.django_db
def test_writing_rows_purges_old_ones_at_most_hourly(monkeypatch: pytest.MonkeyPatch) -> None:
    RequestLog.objects.create(at=datetime.now(UTC) - timedelta(days=40), surface="rest")
    monkeypatch.setitem(recorder._state, "last_purge", 0.0)
    recorder.record(Row(at=datetime.now(UTC), surface="rest"))
    recorder.flush()
    assert RequestLog.objects.count() == 1  # the old row went, the new one is there
    RequestLog.objects.create(at=datetime.now(UTC) - timedelta(days=40), surface="rest")
    recorder.record(Row(at=datetime.now(UTC), surface="rest"))
    recorder.flush()
    assert RequestLog.objects.count() == 3  # within the hour: not purged again


# --- admin, namespace, log lines --------------------------------------------------------------


@pytest.mark.django_db
def test_the_admin_shows_aggregates_and_no_rows() -> None:
    day = datetime(2026, 6, 29, 10, tzinfo=UTC)
    RequestLog.objects.bulk_create(
        [
            RequestLog(at=day, surface="mcp-http", kind="fs", outcome="ok", bytes=100),
            RequestLog(at=day, surface="mcp-http", kind="fs", outcome="ok", bytes=50),
            RequestLog(at=day, surface="rest", kind="http", outcome="rate-limited", bytes=10),
            RequestLog(at=day + timedelta(days=1), surface="rest", kind="fs", outcome="ok"),
        ]
    )
    admin = User.objects.create_superuser("maintainer", "m@example.org", "pw")
    client = Client()
    client.force_login(admin)
    page = client.get("/admin/tm_oplog/requestlog/")
    assert page.status_code == 200
    html = page.content.decode()
    table = html[html.index('id="tm-oplog-aggregates"') :]
    cells = [
        [cell.split(">", 1)[1] for cell in row.split("<td")[1:]] for row in table.split("<tr>")[2:]
    ]
    cells = [[c.split("<", 1)[0] for c in row] for row in cells]
    assert cells == [
        ["2026-06-30", "fs", "ok", "1", "0", "0.0"],
        ["2026-06-29", "fs", "ok", "2", "150", "0.0"],
        ["2026-06-29", "http", "rate-limited", "1", "10", "0.0"],
    ]
    row_id = RequestLog.objects.first().pk  # type: ignore[union-attr]
    assert client.get(f"/admin/tm_oplog/requestlog/{row_id}/change/").status_code == 404
    assert client.get("/admin/tm_oplog/requestlog/add/").status_code == 404
    assert Client().get("/admin/tm_oplog/requestlog/").status_code == 302  # login first


@pytest.mark.django_db
def test_the_log_is_not_in_the_namespace() -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "resources/read",
        "params": {"uri": "tm://tinymachines/"},
    }
    root = post(Client(), body).json()["result"]["contents"][0]["text"]
    for word in ("oplog", "request log", "requestlog", "tm_oplog"):
        assert word not in root.lower()
    body["params"] = {"uri": "tm://tinymachines/oplog/"}
    refused = post(Client(), body).json()["error"]["data"]
    assert refused["reason"] == "not-found"


def test_json_lines_carry_timing_and_no_caller() -> None:
    record = logging.LogRecord("tmsite.requests", logging.INFO, __file__, 1, "request", (), None)
    record.__dict__.update(
        {
            "event": "request",
            "method": "ping",
            "duration_ms": 1.25,
            "outcome": "ok",
            "remote_addr": "192.0.2.1",
            "user_agent": "X",
        }
    )
    line = json.loads(JsonFormatter().format(record))
    assert line["method"] == "ping" and line["duration_ms"] == 1.25 and line["outcome"] == "ok"
    assert "remote_addr" not in line and "user_agent" not in line
    assert set(line) == {
        "ts",
        "level",
        "logger",
        "pid",
        "msg",
        "event",
        "method",
        "duration_ms",
        "outcome",
    }
