"""The request log partitioned by day on a real PostgreSQL: the migration keeps every row, the
purge (``manage.py tm_purge_log``) makes the days ahead and drops the days past retention whole,
and a day's rows that came before its partition are moved into it."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.oplog.servers import ROOT, migrate, server_env
from tmsite.oplog import partitions

pytestmark = pytest.mark.spec("OBS5")

TABLE = partitions.TABLE


def _manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=180, check=True,
    )  # fmt: skip
    return done.stdout


def _insert(db: Any, at: datetime, method: str) -> None:
    db.execute(
        f"INSERT INTO {TABLE} (at, surface, method, kind, target, facet, protocol, outcome, "
        "status, bytes, duration_us) VALUES (%s, 'rest', %s, '', '', '', '', 'ok', 200, 0, 0)",
        (at, method),
    )


def _where(db: Any) -> dict[str, str]:
    """Each row's method → the partition holding it."""
    found = db.execute(f"SELECT method, tableoid::regclass::text FROM {TABLE}").fetchall()
    return {method: table for method, table in found}


def _day_partitions(db: Any) -> set[date]:
    names = db.execute(
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "WHERE i.inhparent = to_regclass(%s)",
        (TABLE,),
    ).fetchall()
    return {day for (name,) in names if (day := partitions.day_of(name)) is not None}


@pytest.mark.slow
def test_partitioned_by_day_made_ahead_and_dropped_whole(database_url: str, tmp_path: Path) -> None:
    import psycopg

    env = server_env(tmp_path / "var", TM_DATABASE_URL=database_url)
    _manage(env, "migrate", "tm_oplog", "0002", "--noinput", "-v", "0")
    now = datetime.now(UTC)
    today = now.date()
    with psycopg.connect(database_url, autocommit=True) as db:
        _insert(db, now - timedelta(days=40), "forty days")
        gone = today - timedelta(days=31)  # the oldest day the migration makes
        _insert(db, datetime(gone.year, gone.month, gone.day, 12, tzinfo=UTC), "thirty-one days")
        _insert(db, now - timedelta(days=2), "two days")
        _insert(db, now, "now")
        before_ids = {m: i for i, m in db.execute(f"SELECT id, method FROM {TABLE}")}
    migrate(env)  # the rest: the table is made again, partitioned by day

    with psycopg.connect(database_url, autocommit=True) as db:
        kind = db.execute("SELECT relkind FROM pg_class WHERE oid = to_regclass(%s)", (TABLE,))
        assert kind.fetchone() == ("p",)
        assert {m: i for i, m in db.execute(f"SELECT id, method FROM {TABLE}")} == before_ids
        where = _where(db)
        assert where["forty days"] == partitions.DEFAULT  # before the first day made
        assert where["thirty-one days"] == partitions.name_of(gone)
        assert where["two days"] == partitions.name_of(today - timedelta(days=2))
        assert where["now"] == partitions.name_of(today)
        assert _day_partitions(db) >= {today + timedelta(days=d) for d in range(8)}
        # ids go on from the old table's
        _insert(db, now, "after")
        after = db.execute(f"SELECT id FROM {TABLE} WHERE method = 'after'").fetchone()
        assert after is not None and after[0] > max(before_ids.values())
        # a day whose partition is missing: its rows go to the default partition, not refused
        missing = today + timedelta(days=3)
        db.execute(f"DROP TABLE {partitions.name_of(missing)}")
        _insert(db, datetime(missing.year, missing.month, missing.day, 5, tzinfo=UTC), "early")
        assert _where(db)["early"] == partitions.DEFAULT

    out = _manage(env, "tm_purge_log")

    with psycopg.connect(database_url, autocommit=True) as db:
        where = _where(db)
        assert set(where) == {"two days", "now", "after", "early"}, (
            "forty days deleted from the default partition, day -31 dropped whole"
        )
        assert where["early"] == partitions.name_of(missing), "moved into its own day"
        days = _day_partitions(db)
        assert missing in days
        assert min(days) == today - timedelta(days=30), "every day past retention dropped"
    lines = out.splitlines()
    assert lines[0] == "deleted 1 request log rows older than 30 days"
    assert lines[1] == f"dropped 1 day partitions past 30 days: {partitions.name_of(gone)}"
    assert lines[2] == "made 1 day partitions ahead"

    # and back: the migration reversed keeps the rows in one plain table
    _manage(env, "migrate", "tm_oplog", "0002", "--noinput", "-v", "0")
    with psycopg.connect(database_url, autocommit=True) as db:
        kind = db.execute("SELECT relkind FROM pg_class WHERE oid = to_regclass(%s)", (TABLE,))
        assert kind.fetchone() == ("r",)
        assert len(_where(db)) == 4
        _insert(db, now, "plain again")
