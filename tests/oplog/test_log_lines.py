"""The request log off the request thread: each request's row and JSON line say the same, the
rows are inserted as they were recorded, and the line is written by the writer thread in the
shape the formatter gives it."""

from __future__ import annotations

import io
import json
import logging
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from django.test import Client

from tmsite.oplog import recorder
from tmsite.oplog.logs import BackgroundStreamHandler, JsonFormatter
from tmsite.oplog.models import RequestLog
from tmsite.oplog.recorder import Row

pytestmark = pytest.mark.spec("OP2")

ROOT = "tm://tinymachines/"
FILE = "tm://tinymachines/fs/docs/index.md"
SAME = ("surface", "method", "kind", "target", "facet", "protocol", "outcome", "status", "bytes")


@pytest.fixture
def written() -> Iterator[io.StringIO]:
    """What the request log's own handler, on its writer thread, writes for this test."""
    stream = io.StringIO()
    handler = BackgroundStreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("tmsite.requests")
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    yield stream
    logger.removeHandler(handler)
    logger.setLevel(level)
    handler.drain()


def lines_of(stream: io.StringIO, count: int) -> list[dict[str, Any]]:
    end = time.monotonic() + 10
    while stream.getvalue().count("\n") < count and time.monotonic() < end:
        time.sleep(0.01)
    return [json.loads(line) for line in stream.getvalue().splitlines()]


@pytest.mark.django_db
def test_each_requests_row_and_line_say_the_same(written: io.StringIO) -> None:
    client = Client()
    sent = [
        ("ping", {}),
        ("tools/list", {}),
        ("resources/read", {"uri": ROOT}),
        ("resources/read", {"uri": FILE}),
        ("resources/read", {"uri": "tm://tinymachines/fs/docs/nope.md"}),
        ("no/such", {}),
    ]
    replies = []
    for rid, (method, params) in enumerate(sent):
        body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        replies.append(
            client.post(
                "/api/mcp",
                json.dumps(body),
                content_type="application/json",
                headers={"MCP-Protocol-Version": "2025-11-25"},
            )
        )
    recorder.flush()
    rows = list(RequestLog.objects.order_by("id"))
    lines = lines_of(written, len(sent))
    assert len(rows) == len(lines) == len(sent)
    assert [row.method for row in rows] == [method for method, _ in sent]
    assert [row.outcome for row in rows] == ["ok", "ok", "ok", "ok", "not-found", "rpc-32601"]
    for row, line, reply in zip(rows, lines, replies, strict=True):
        assert {name: line[name] for name in SAME} == {name: getattr(row, name) for name in SAME}
        assert row.bytes == len(reply.content)
        assert line["duration_ms"] == round(row.duration_us / 1000, 3)
        assert (line["event"], line["msg"], line["logger"], line["level"]) == (
            "request",
            "request",
            "tmsite.requests",
            "info",
        )
        assert line["pid"] == os.getpid()
    assert [line["target"] for line in lines][2:4] == [ROOT, FILE]


@pytest.mark.django_db
def test_rows_are_inserted_as_they_were_recorded(settings: Any) -> None:
    settings.TM_LOG_FLUSH_ROWS = 1000
    at = datetime(2026, 7, 1, 8, 30, 15, 123456, tzinfo=UTC)
    recorded = [
        Row(at, "mcp-http", "resources/read", "fs", FILE, "lines", "2025-06-18", "ok", 200, 9, 7),
        Row(at, "rest", "GET resolve", "git", "tm://tinymachines/git/", "", "", "x", 404, 0, 1),
        Row(at, "mcp-stdio", "ping", "protocol", "", "", "2025-11-25", "ok", 200, 36, 70_000),
    ]
    for row in recorded:
        recorder.record(row)
    assert recorder.flush() == 3
    columns = [name for name in recorder.COLUMNS]
    stored = list(RequestLog.objects.order_by("id").values_list(*columns))
    assert stored == [tuple(getattr(row, name) for name in columns) for row in recorded]


def test_the_writer_thread_writes_what_the_formatter_gives() -> None:
    stream = io.StringIO()
    handler = BackgroundStreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    record = logging.LogRecord("tmsite.requests", logging.INFO, "", 0, "request", (), None)
    record.__dict__.update({"event": "request", "method": "ping", "status": 200})
    handler.handle(record)
    [line] = [json.loads(text) for text in lines_text(stream, 1)]
    assert line == json.loads(JsonFormatter().format(record))
    assert handler._writer_pid == os.getpid()


def test_records_still_queued_are_written_by_drain() -> None:
    stream = io.StringIO()
    handler = BackgroundStreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler._writer_pid = os.getpid()  # as if the writer were started: nothing takes the queue
    for n in range(3):
        handler.handle(logging.LogRecord("tmsite.requests", logging.INFO, "", 0, f"m{n}", (), None))
    assert stream.getvalue() == ""
    handler.drain()
    assert [json.loads(text)["msg"] for text in stream.getvalue().splitlines()] == [
        "m0",
        "m1",
        "m2",
    ]


def lines_text(stream: io.StringIO, count: int) -> list[str]:
    end = time.monotonic() + 10
    while stream.getvalue().count("\n") < count and time.monotonic() < end:
        time.sleep(0.01)
    return stream.getvalue().splitlines()


@pytest.mark.parametrize(
    "value",
    [
        "plain",
        "é — 日本",
        "\ud800",  # a lone surrogate: orjson refuses it, json writes it
        0,
        -7,
        2**70,  # past 64 bits
        True,
        None,
        0.0,
        -0.0,
        0.001,
        13.282,
        123456.789,
        1e-05,  # json's exponent
        1e16,
        float("nan"),
        float("inf"),
        datetime(2026, 12, 5, tzinfo=UTC),  # not JSON: its str
    ],
)
def test_a_line_is_written_as_json_writes_it(value: object) -> None:
    from tmsite.oplog.logs import dumps_line

    line = {"event": "request", "value": value, "status": 200}
    assert dumps_line(line) == json.dumps(
        line, ensure_ascii=False, separators=(",", ":"), default=str
    )
