"""The request log partitioned by day on PostgreSQL: made ahead, dropped whole past retention.

On PostgreSQL the request log's table is partitioned by range of ``at`` (migration
``0003_partition_request_log_by_day``): one partition per UTC day, ``<table>_pYYYYMMDD``, and a
``<table>_default`` partition that takes a row no day partition holds, so a row is never
refused for want of one. Retention (:func:`maintain`, run by the request log's purge: at most
hourly in each process, and by ``manage.py tm_purge_log``) then costs a few statements whatever
the volume:

* the days from today to ``AHEAD_DAYS`` ahead get their partitions (a day whose rows already
  went to the default partition has them moved into its own, so it can be made at all);
* a day partition whose whole day is past the retention is dropped — its rows go together, so
  on PostgreSQL a row is kept from ``TM_LOG_RETENTION_DAYS`` to a day more;
* rows of the default partition past the retention are deleted one by one (it holds only what
  came while no day partition did).

Maintenance takes a transaction-level advisory lock, so the workers of every machine never make
or drop the same partition at once. SQLite keeps its one table and the purge's ``DELETE``.

Spec: OBS5.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.db import connections, transaction

TABLE = "tm_oplog_requestlog"
DEFAULT = f"{TABLE}_default"
PREFIX = f"{TABLE}_p"
#: Days after today whose partitions the purge makes ahead (a purge a week late still finds one).
AHEAD_DAYS = 7
#: ``pg_advisory_xact_lock`` key of the request log's maintenance ("tm-log").
LOCK_KEY = 0x746D2D6C6F67


@dataclass
class Maintained:
    """What a purge did: rows deleted one by one; on PostgreSQL, day partitions made and dropped."""

    created: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    deleted: int = 0


def name_of(day: date) -> str:
    """The partition of one UTC day."""
    return f"{PREFIX}{day:%Y%m%d}"


def day_of(name: str) -> date | None:
    """The day a partition's name stands for, or None for any other table."""
    digits = name.removeprefix(PREFIX)
    if digits == name or len(digits) != 8 or not digits.isdigit():
        return None
    try:
        return datetime.strptime(digits, "%Y%m%d").replace(tzinfo=UTC).date()
    except ValueError:
        return None


def bounds(day: date) -> tuple[datetime, datetime]:
    """The UTC instants a day's partition holds: from its midnight up to the next."""
    start = datetime.combine(day, time(0), tzinfo=UTC)
    return start, start + timedelta(days=1)


def partitioned(using: str = "default") -> bool:
    """Whether the request log is a partitioned table here (PostgreSQL after the migration)."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT relkind FROM pg_class WHERE oid = to_regclass(%s)", [TABLE])
        row = cursor.fetchone()
    return row is not None and row[0] == "p"


def day_partitions(cursor: Any) -> dict[date, str]:
    """The day partitions the table has, by day."""
    cursor.execute(
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "WHERE i.inhparent = to_regclass(%s)",
        [TABLE],
    )
    found = {}
    for (name,) in cursor.fetchall():
        day = day_of(name)
        if day is not None:
            found[day] = name
    return found


def _create(cursor: Any, day: date) -> None:
    name, (start, end) = name_of(day), bounds(day)
    cursor.execute(f"SELECT 1 FROM {DEFAULT} WHERE at >= %s AND at < %s LIMIT 1", [start, end])
    if cursor.fetchone() is None:
        cursor.execute(
            f"CREATE TABLE {name} PARTITION OF {TABLE} FOR VALUES FROM (%s) TO (%s)", [start, end]
        )
        return
    # Rows of that day came while it had no partition: a partition is refused while the default
    # holds rows of its range, so they move into the new table before it is attached.
    cursor.execute(f"CREATE TABLE {name} (LIKE {TABLE} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)")
    cursor.execute(
        f"WITH moved AS (DELETE FROM {DEFAULT} WHERE at >= %s AND at < %s RETURNING *) "
        f"INSERT INTO {name} SELECT * FROM moved",
        [start, end],
    )
    cursor.execute(
        f"ALTER TABLE {TABLE} ATTACH PARTITION {name} FOR VALUES FROM (%s) TO (%s)", [start, end]
    )


def maintain(now: datetime, cutoff: datetime, using: str = "default") -> Maintained:
    """Make the partitions ahead, drop the days past ``cutoff``, purge the default partition."""
    done = Maintained()
    today = now.astimezone(UTC).date()
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [LOCK_KEY])
        have = day_partitions(cursor)
        for offset in range(AHEAD_DAYS + 1):
            day = today + timedelta(days=offset)
            if day not in have:
                _create(cursor, day)
                done.created.append(name_of(day))
        for day, name in sorted(have.items()):
            if bounds(day)[1] <= cutoff:
                cursor.execute(f"DROP TABLE {name}")
                done.dropped.append(name)
        cursor.execute(f"DELETE FROM {DEFAULT} WHERE at < %s", [cutoff])
        done.deleted = max(0, cursor.rowcount)
    return done
