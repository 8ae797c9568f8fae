"""SQLite shared by processes: a transaction that reads before it writes waits for another
writer rather than failing.

In write-ahead-log mode a deferred transaction reads from a snapshot; if another connection
commits after that read, the transaction's first write is refused at once ("database is
locked"), whatever the busy timeout. The box's SQLite connections begin every transaction
``IMMEDIATE`` (its write lock taken at ``BEGIN``, waiting up to the timeout), so two servers on
one file, as ``make run`` beside a second server or the two-server tests run them, never
answer such a race with a 500.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from django.db import OperationalError, connections
from django.db.backends.sqlite3.base import DatabaseWrapper

from tmsite.settings import database_from_url

pytestmark = pytest.mark.spec("OP5")


def _connection(name: str, path: Path) -> DatabaseWrapper:
    """A connection to ``path`` made with the box's own SQLite settings."""
    settings = {**connections["default"].settings_dict}
    settings.update({"NAME": str(path), "OPTIONS": {**settings["OPTIONS"], "timeout": 10}})
    return DatabaseWrapper(settings, alias=name)


@pytest.mark.parametrize("deferred", [False, True], ids=["immediate", "deferred"])
def test_a_read_then_a_write_waits_for_the_other_writer(
    tmp_path: Path, deferred: bool, django_db_blocker: Any
) -> None:
    if connections["default"].vendor != "sqlite":
        pytest.skip("SQLite's transactions")
    with django_db_blocker.unblock():  # its own file, not the tests' database
        _race(tmp_path, deferred)


def _race(tmp_path: Path, deferred: bool) -> None:
    path = tmp_path / "two.sqlite3"
    one = _connection("one", path)
    if deferred:  # what a connection without the setting does
        one.settings_dict["OPTIONS"] = {**one.settings_dict["OPTIONS"], "transaction_mode": None}
    with one.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("CREATE TABLE t (n INTEGER)")
    wrote: list[float] = []

    def other_writer() -> None:
        two = _connection("two", path)  # a connection is its thread's
        with two.cursor() as cursor:
            cursor.execute("INSERT INTO t VALUES (2)")  # committed at once
        wrote.append(time.monotonic())
        two.close()

    one.set_autocommit(False, force_begin_transaction_with_broken_autocommit=True)
    with one.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM t")
        assert cursor.fetchone() == (0,)
    writer = threading.Thread(target=other_writer)
    writer.start()
    time.sleep(0.3)
    try:
        with one.cursor() as cursor:
            if deferred:
                with pytest.raises(OperationalError, match="database is locked"):
                    cursor.execute("INSERT INTO t VALUES (1)")
                one.rollback()
                return
            cursor.execute("INSERT INTO t VALUES (1)")
        assert not wrote, "the other writer waits for this transaction"
        one.commit()
    finally:
        one.set_autocommit(True)
        writer.join(15)
        one.close()
    assert wrote
    with one.cursor() as cursor:
        cursor.execute("SELECT n FROM t ORDER BY rowid")
        assert cursor.fetchall() == [(1,), (2,)]


def test_every_sqlite_database_begins_immediate(tmp_path: Path) -> None:
    config = database_from_url(f"sqlite:///{tmp_path / 'x.sqlite3'}")
    assert config["OPTIONS"] == {"timeout": 20, "transaction_mode": "IMMEDIATE"}
    assert connections["default"].settings_dict["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
