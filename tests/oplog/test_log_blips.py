"""No request-log row lost to a database blip, nor to a worker that exits; errors right end to end.

The faults are real: the request log's table renamed away and back (the insert fails), a SQLite
file locked by another process's connection, gunicorn workers stopped by SIGTERM and recycled
by ``max_requests``, the entity table dropped under a running gunicorn and under
``manage.py mcp_stdio``. (A PostgreSQL outage is ``tests/manymachines/test_database_blip.py``.)
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from tests.oplog.servers import ROOT, gunicorn, migrate, server_env
from tmsite.entities.models import Pattern
from tmsite.oplog import recorder
from tmsite.oplog.models import RequestLog
from tmsite.oplog.recorder import Row

pytestmark = pytest.mark.spec("OP2")

TABLE = RequestLog._meta.db_table
FILE = "tm://tinymachines/fs/docs/index.md"
ENTITY = "tm://tinymachines/entity/pattern/bank-switch"
STATELESS = "2026-07-28"


def row(i: int) -> Row:
    return Row(at=timezone.now(), surface="mcp-http", method=f"m{i}")


@pytest.fixture
def log_table_gone(transactional_db: None) -> Iterator[None]:
    """The request log's table renamed away (inserts fail) until the test puts it back."""
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE {quote(TABLE)} RENAME TO {quote(TABLE + '_away')}")
    yield
    if TABLE + "_away" in connection.introspection.table_names():
        put_back()


def put_back() -> None:
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE {quote(TABLE + '_away')} RENAME TO {quote(TABLE)}")


def test_a_batch_that_cannot_be_written_waits_in_the_buffer(
    log_table_gone: None, caplog: Any
) -> None:
    for i in range(30):
        recorder.record(row(i))
    assert recorder.flush() == 0
    assert recorder.pending() == 30
    assert recorder._state["retry_at"] > time.monotonic()  # requests do not retry at once
    for i in range(30, 35):
        recorder.record(row(i))
    put_back()
    assert recorder.flush() == 35
    assert [r.method for r in RequestLog.objects.order_by("id")] == [f"m{i}" for i in range(35)]
    assert recorder.status() == {"pending": 0, "dropped": 0, "failedWrites": 0}
    [line] = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert line.getMessage().startswith("internal failure in request log: ")


def test_past_the_bound_the_oldest_rows_are_dropped_counted_and_told(
    log_table_gone: None, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    monkeypatch.setattr(recorder, "MAX_BUFFER", 5)
    for i in range(3):
        recorder.record(row(i))
    assert recorder.flush() == 0
    for i in range(3, 8):
        recorder.record(row(i))
    assert recorder.status() == {"pending": 5, "dropped": 3, "failedWrites": 1}
    health = Client().get("/api/v1/health").json()
    assert health["requestLog"] == {"pending": 5, "dropped": 3, "failedWrites": 1}
    told = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
    assert told == [
        "internal failure in request log: tmsite.oplog.recorder.BufferFull: 1 request log rows "
        "dropped since start: the buffer holds at most 5 while the database cannot take them "
        "(further ones are counted, one line a minute)"
    ]
    put_back()
    assert recorder.flush() == 5
    assert [r.method for r in RequestLog.objects.order_by("id")] == [f"m{i}" for i in range(3, 8)]


LOCKED = textwrap.dedent(
    """
    import json, os, sys
    import django
    os.environ["DJANGO_SETTINGS_MODULE"] = "tmsite.settings"
    django.setup()
    from django.db import connections
    from django.utils import timezone
    from tmsite.oplog import recorder
    from tmsite.oplog.recorder import Row

    connections["default"].settings_dict["OPTIONS"]["timeout"] = 0.3  # seconds for a lock
    for i in range(30):
        recorder.record(Row(at=timezone.now(), surface="mcp-stdio", method=f"m{i}"))
    print(json.dumps([recorder.flush(), recorder.pending()]), flush=True)
    sys.stdin.readline()  # the other connection lets go
    print(json.dumps([recorder.flush(), recorder.pending()]), flush=True)
    for i in range(30, 37):
        recorder.record(Row(at=timezone.now(), surface="mcp-stdio", method=f"m{i}"))
    # exits with 7 rows buffered: the exit flush writes them
    """
)


def test_a_locked_sqlite_file_delays_rows_and_loses_none(tmp_path: Path) -> None:
    env = server_env(
        tmp_path / "var",
        TM_LOG_FLUSH_ROWS="1000",
        TM_LOG_FLUSH_SECONDS="0",
    )
    migrate(env)
    holder = sqlite3.connect(tmp_path / "var" / "tmsite.sqlite3", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    child = subprocess.Popen(
        [sys.executable, "-c", LOCKED],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdin is not None
        first = child.stdout.readline()
        assert first, child.communicate(timeout=30)[1]
        assert json.loads(first) == [0, 30]  # locked: nothing written, kept
        holder.execute("COMMIT")
        child.stdin.write("\n")
        child.stdin.flush()
        assert json.loads(child.stdout.readline()) == [30, 0]
        _, errors = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        holder.close()
    assert child.returncode == 0, errors
    assert "database is locked" in errors
    assert methods(tmp_path / "var") == [f"m{i}" for i in range(37)]


def methods(var: Path) -> list[str]:
    with sqlite3.connect(var / "tmsite.sqlite3") as db:
        return [m for (m,) in db.execute(f"SELECT method FROM {TABLE} ORDER BY id")]


def rows_of(var: Path) -> list[tuple[str, str, str, str, int]]:
    with sqlite3.connect(var / "tmsite.sqlite3") as db:
        query = f"SELECT surface, method, kind, outcome, status FROM {TABLE} ORDER BY id"
        return list(db.execute(query))


def drop_entity_table(var: Path) -> None:
    with sqlite3.connect(var / "tmsite.sqlite3") as db:
        db.execute(f"DROP TABLE {Pattern._meta.db_table}")


def mcp(base: str, rid: Any, uri: str, modern: bool = False) -> httpx.Response:
    params: dict[str, Any] = {"uri": uri}
    headers = {"MCP-Protocol-Version": "2025-11-25"}
    if modern:
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": STATELESS,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        headers = {
            "MCP-Protocol-Version": STATELESS,
            "Mcp-Method": "resources/read",
            "Mcp-Name": uri,
        }
    body = {"jsonrpc": "2.0", "id": rid, "method": "resources/read", "params": params}
    return httpx.post(f"{base}/api/mcp", json=body, headers=headers, timeout=30)


@pytest.mark.slow
def test_workers_write_their_rows_when_stopped_and_when_recycled(tmp_path: Path) -> None:
    """SIGTERM to the master, then workers recycled by ``max_requests`` (7).

    Nothing but an exit writes a row here (a batch is 1,000 rows or an hour old): no row is in
    the database while the workers run, and every row is once they have gone.
    """
    var = tmp_path / "var"
    env = server_env(var, TM_LOG_FLUSH_ROWS="1000", TM_LOG_FLUSH_SECONDS="3600")
    migrate(env)
    log = tmp_path / "gunicorn.log"
    with gunicorn(env, workers=2, log=log, threads=2) as base:
        for rid in range(10):
            assert mcp(base, rid, FILE).json()["id"] == rid
        time.sleep(0.5)
        assert methods(var) == []
    assert methods(var) == ["resources/read"] * 10  # SIGTERM: each worker wrote its own
    with gunicorn({**env, "GUNICORN_MAX_REQUESTS": "7"}, workers=1, log=log) as base:
        for rid in range(17):
            assert mcp(base, rid, FILE).json()["id"] == rid
        deadline = time.monotonic() + 20
        while len(methods(var)) < 17 and time.monotonic() < deadline:
            time.sleep(0.1)
        # at least two workers were recycled in 17 reads (and the health checks): the rows of
        # each are written as it goes, the live one's when gunicorn stops
        assert len(methods(var)) >= 10 + 7
    assert methods(var) == ["resources/read"] * 27


@pytest.mark.slow
def test_a_table_gone_under_gunicorn_is_answered_right_and_logged_once(tmp_path: Path) -> None:
    var = tmp_path / "var"
    env = server_env(var, TM_LOG_FLUSH_ROWS="1000", TM_LOG_FLUSH_SECONDS="3600")
    migrate(env)
    drop_entity_table(var)
    log = tmp_path / "gunicorn.log"
    with gunicorn(env, workers=1, log=log, threads=4) as base:
        for rid in range(15):
            reply = mcp(base, rid, ENTITY, modern=rid % 2 == 1)
            assert reply.status_code == 200
            assert reply.json() == {
                "jsonrpc": "2.0",
                "id": rid,
                "error": {"code": -32603, "message": "Internal error."},
            }
        for _ in range(15):
            reply = httpx.get(f"{base}/api/v1/resolve", params={"uri": ENTITY}, timeout=30)
            assert reply.status_code == 500
            assert reply.headers["content-type"] == "application/json"
            assert reply.json()["reason"] == "internal"
        assert mcp(base, 99, FILE).json()["id"] == 99
    text = log.read_text(errors="replace")
    assert re.findall(r"internal failure in ([a-z -]+):", text) == [
        "mcp-http request",
        "rest request",
    ]
    assert "Internal Server Error" not in text
    assert text.count("Traceback (most recent call last)") <= 4  # two, each chained once
    assert rows_of(var) == [
        *[("mcp-http", "resources/read", "entity", "internal", 200)] * 15,
        *[("rest", "GET resolve", "entity", "internal", 500)] * 15,
        ("mcp-http", "resources/read", "fs", "ok", 200),
    ]


def test_stdio_answers_a_failure_with_the_id_and_logs_it_once(tmp_path: Path) -> None:
    var = tmp_path / "var"
    env = server_env(var, TM_LOG_FLUSH_ROWS="1000", TM_LOG_FLUSH_SECONDS="0")
    migrate(env)
    drop_entity_table(var)
    meta = {
        "io.modelcontextprotocol/protocolVersion": STATELESS,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    lines = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}]
    for rid in range(1, 9):
        params: dict[str, Any] = {"uri": ENTITY}
        if rid > 4:
            params["_meta"] = meta
        lines.append({"jsonrpc": "2.0", "id": rid, "method": "resources/read", "params": params})
    done = subprocess.run(
        [sys.executable, "manage.py", "mcp_stdio"],
        cwd=ROOT,
        env=env,
        input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a["id"] for a in answers] == list(range(9))
    assert all(a["error"]["code"] == -32603 for a in answers[1:])
    assert re.findall(r"internal failure in ([a-z -]+):", done.stderr) == ["mcp-stdio request"]
    assert rows_of(var) == [
        ("mcp-stdio", "initialize", "protocol", "ok", 200),
        *[("mcp-stdio", "resources/read", "entity", "internal", 200)] * 8,
    ]
