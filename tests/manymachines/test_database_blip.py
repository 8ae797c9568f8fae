"""A PostgreSQL outage of a few seconds under load: every request answered, no request-log row lost.

The outage is real and this test's database's alone (the server is shared with other tests):
the server terminates every connection to it — "terminating connection due to administrator
command", what a restart does to them — and refuses new ones for four seconds
(``ALLOW_CONNECTIONS false``), then takes them again. The default server (``python -m
tmsite.serve``) serves it with two workers; reads
of files need no database and are answered throughout, entity reads fail while it is away and
are answered -32603 with their id; the rows that could not be written wait in each worker's
buffer and land after, so the rows in the database equal the requests answered.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.oplog.servers import migrate, serve, server_env
from tmsite.oplog.models import RequestLog

pytestmark = pytest.mark.spec("OP2", "OP5")

FILE = "tm://tinymachines/fs/docs/index.md"
ENTITY = "tm://tinymachines/entity/pattern/bank-switch"


@contextmanager
def outage(database_url: str, seconds: float) -> Iterator[None]:
    """The database refuses connections and drops the ones it has, for ``seconds``."""
    import psycopg

    name = urlsplit(database_url).path.lstrip("/")
    with psycopg.connect(database_url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        try:
            admin.execute(
                # The server's own connections: an autovacuum worker on this database runs as
                # the superuser, and a role without it may not end that one.
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid() AND usename = current_user",
                (name,),
            )
            yield
            time.sleep(seconds)
        finally:
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')


def rows(database_url: str) -> Counter[tuple[str, str, int]]:
    import psycopg

    with psycopg.connect(database_url) as db:
        found = db.execute(f"SELECT kind, outcome, status FROM {RequestLog._meta.db_table}")
        return Counter((kind, outcome, status) for kind, outcome, status in found)


@contextmanager
def serving(env: dict[str, str], log: Path) -> Iterator[str]:
    """The default server, two workers of two threads; a start that fails shows its log."""
    try:
        with serve(env, workers=2, log=log, threads=2) as base:
            yield base
    except TimeoutError as exc:
        pytest.fail(f"{exc}; the server's log ends:\n{log.read_text(errors='replace')[-3000:]}")


@pytest.mark.slow
def test_a_database_outage_loses_no_row(database_url: str, tmp_path: Path) -> None:
    env = server_env(
        tmp_path / "var",
        TM_DATABASE_URL=database_url,
        TM_LOG_FLUSH_ROWS="10",
        TM_LOG_FLUSH_SECONDS="0.5",
    )
    migrate(env)
    log = tmp_path / "serve.log"
    answered: Counter[tuple[str, str, int]] = Counter()
    lock = threading.Lock()
    stop = threading.Event()
    wrong: list[str] = []

    def load(worker: int) -> None:
        with httpx.Client(timeout=30) as client:
            rid = 0
            while not stop.is_set():
                rid += 1
                uri = ENTITY if rid % 3 == 0 else FILE
                body = {
                    "jsonrpc": "2.0",
                    "id": f"{worker}-{rid}",
                    "method": "resources/read",
                    "params": {"uri": uri},
                }
                reply = client.post(f"{base}/api/mcp", json=body)
                answer = reply.json()
                if answer.get("id") != body["id"]:
                    wrong.append(reply.text)
                error = answer.get("error")
                outcome = "ok"
                if error is not None:
                    outcome = error.get("data", {}).get("reason") or (
                        "internal" if error["code"] == -32603 else str(error["code"])
                    )
                with lock:
                    answered["entity" if uri == ENTITY else "fs", outcome, reply.status_code] += 1

    with serving(env, log) as base:
        threads = [threading.Thread(target=load, args=(n,)) for n in range(3)]
        for thread in threads:
            thread.start()
        time.sleep(1.5)
        with outage(database_url, 4.0):
            pass
        time.sleep(2.0)
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
        during = sum(answered.values())
    assert not wrong, wrong[:3]
    assert during > 50
    assert all(status == 200 for _, _, status in answered)
    assert answered["fs", "ok", 200] > 0 and answered["entity", "internal", 200] > 0
    assert answered["entity", "not-found", 200] > 0  # before and after the outage
    text = log.read_text(errors="replace")
    assert "internal failure in request log" in text  # the outage did meet a batch
    assert rows(database_url) == answered
