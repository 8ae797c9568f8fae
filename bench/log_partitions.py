"""The request log's retention on PostgreSQL: ``DELETE`` against dropping day partitions.

Two fresh databases on the same PostgreSQL server, filled alike: ``--expired-days`` days past
the retention (30 days) and ``--live-days`` days within it, ``--rows-per-day`` rows a day
(spread over the day, as the log writes them: one ``INSERT … SELECT generate_series`` a day).

* ``delete`` — the request log as one plain table (migrated to ``tm_oplog 0002``, before the
  partitioning): the purge is the ``DELETE … WHERE at < cutoff`` it always was;
* ``partitions`` — the table partitioned by day (every migration), each day in its own
  partition as the purge would have made it ahead: the purge drops the expired days whole.

Each side is vacuumed and analysed once filled (a log that has run for weeks), then runs
``tmsite.oplog.recorder.purge`` once, timed, in a process of its own with ``TM_DATABASE_URL``
set to its database, and measures the insert rate of the log's own write path
(``recorder._insert``: ``--insert-rows`` rows in batches of 500, the best of three rounds)
before the purge and after it. It prints rows deleted or dropped, the purge's time, the
table's size before and after (a ``DELETE`` leaves its dead rows to vacuum), and the insert
rates.

    .venv/bin/python bench/log_partitions.py                         # the full size: 1M rows a day
    .venv/bin/python bench/log_partitions.py --rows-per-day 50000    # scaled down

PostgreSQL from ``--database-url`` (a role that may create databases), else
``TM_TEST_DATABASE_URL`` (``source .ci/services.sh``). The databases are dropped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.services import own_database  # noqa: E402

SIDES = ("delete", "partitions")
RETENTION_DAYS = 30
BATCH = 500


def _fill(cursor: Any, side: str, days: list[datetime], rows: int) -> None:
    from tmsite.oplog import partitions

    step = 86_400 / rows
    for start in days:
        if side == "partitions":
            name = partitions.name_of(start.date())
            cursor.execute("SELECT to_regclass(%s)", [name])
            if cursor.fetchone()[0] is None:
                cursor.execute(
                    f"CREATE TABLE {name} PARTITION OF {partitions.TABLE} "
                    "FOR VALUES FROM (%s) TO (%s)",
                    [start, start + timedelta(days=1)],
                )
        cursor.execute(
            f"INSERT INTO {partitions.TABLE} (at, surface, method, kind, target, facet, protocol, "
            "outcome, status, bytes, duration_us) "
            "SELECT %s + g * make_interval(secs => %s), 'mcp-http', 'resources/read', 'file', "
            "'tm://tinymachines/fs/docs/mcp.md', '', '2025-11-25', 'ok', 200, 4096, 900 "
            "FROM generate_series(0, %s - 1) AS g",
            [start, step, rows],
        )


def _size(cursor: Any) -> int:
    from tmsite.oplog import partitions

    cursor.execute(
        "SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
        "WHERE c.oid = to_regclass(%s) OR c.oid IN "
        "(SELECT inhrelid FROM pg_inherits WHERE inhparent = to_regclass(%s))",
        [partitions.TABLE, partitions.TABLE],
    )
    return int(cursor.fetchone()[0])


def _insert_rate(count: int, rounds: int = 3) -> float:
    """Rows a second through the log's own write path: the best of ``rounds`` (a shared box)."""
    return max(_insert_round(count) for _ in range(rounds))


def _insert_round(count: int) -> float:
    from tmsite.oplog import recorder

    now = datetime.now(UTC)
    rows = [
        recorder.Row(at=now, surface="mcp-http", method="resources/read", kind="file",
                     target="tm://tinymachines/fs/docs/mcp.md", protocol="2025-11-25",
                     bytes=4096, duration_us=900)
        for _ in range(BATCH)
    ]  # fmt: skip
    started = time.perf_counter()
    for _ in range(max(1, count // BATCH)):
        recorder._insert(rows)
    return max(1, count // BATCH) * BATCH / (time.perf_counter() - started)


def child(side: str, args: argparse.Namespace) -> dict[str, Any]:
    """One side, in its own process (Django set up on its database)."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tmsite.settings")
    django.setup()
    from django.db import connection

    from tmsite.oplog import partitions, recorder

    assert partitions.partitioned() == (side == "partitions")
    now = datetime.now(UTC)
    today = datetime.combine(now.date(), datetime.min.time(), tzinfo=UTC)
    expired = [today - timedelta(days=RETENTION_DAYS + 1 + k) for k in range(args.expired_days)]
    live = [today - timedelta(days=k) for k in range(args.live_days)]
    started = time.perf_counter()
    with connection.cursor() as cursor:
        _fill(cursor, side, expired + live, args.rows_per_day)
        size_before = _size(cursor)
    # as a log that has run for weeks: vacuumed and analysed, so no autovacuum of the fresh
    # rows holds a lock the purge then waits on
    connection.close()
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM ANALYZE {partitions.TABLE}")
    filled = time.perf_counter() - started
    rate_before = _insert_rate(args.insert_rows)
    started = time.perf_counter()
    purged = recorder.purge(now)
    took = time.perf_counter() - started
    rate_after = _insert_rate(args.insert_rows)
    with connection.cursor() as cursor:
        size_after = _size(cursor)
        cursor.execute(f"SELECT count(*) FROM {partitions.TABLE}")
        left = int(cursor.fetchone()[0])
    return {
        "side": side,
        "filled_seconds": round(filled, 1),
        "purge_seconds": round(took, 3),
        "deleted": purged.deleted,
        "dropped": len(purged.dropped),
        "rows_left": left,
        "size_before_mb": round(size_before / 2**20, 1),
        "size_after_mb": round(size_after / 2**20, 1),
        "insert_rows_per_s_before": round(rate_before),
        "insert_rows_per_s_after": round(rate_after),
    }


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    admin = args.database_url
    results = []
    for side in SIDES:
        with own_database(admin, f"tm_bench_log_{side}") as url:
            env = {k: v for k, v in os.environ.items() if not k.startswith("TM_")}
            env.update(
                TM_DATABASE_URL=url,
                TM_SECRET_KEY="bench",
                TM_VAR_DIR=str(Path(args.var) / side),
                TM_LOG_RETENTION_DAYS=str(RETENTION_DAYS),
                PYTHONPATH=str(ROOT),
            )
            target = ["tm_oplog", "0002"] if side == "delete" else ["tm_oplog"]
            subprocess.run(
                [sys.executable, "manage.py", "migrate", *target, "--noinput", "-v", "0"],
                cwd=ROOT, env=env, check=True, timeout=600,
            )  # fmt: skip
            done = subprocess.run(
                [sys.executable, __file__, "--child", side, *sys.argv[1:]],
                cwd=ROOT, env=env, capture_output=True, text=True, timeout=7200,
            )  # fmt: skip
            if done.returncode != 0:
                sys.exit(f"the {side} side failed:\n{done.stderr[-3000:]}")
            results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--database-url", default=os.environ.get("TM_TEST_DATABASE_URL", ""))
    parser.add_argument("--rows-per-day", type=int, default=1_000_000)
    parser.add_argument("--expired-days", type=int, default=30)
    parser.add_argument("--live-days", type=int, default=30)
    parser.add_argument("--insert-rows", type=int, default=100_000)
    parser.add_argument("--var", default="/tmp/tm-bench-log-partitions")
    parser.add_argument("--child", choices=SIDES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args)))
        return
    if not args.database_url:
        sys.exit("no PostgreSQL: pass --database-url or set TM_TEST_DATABASE_URL")
    print(
        f"{args.expired_days} days past retention + {args.live_days} days within it, "
        f"{args.rows_per_day:,} rows a day; insert rate over {args.insert_rows:,} rows"
    )
    results = run(args)
    columns = [key for key in results[0] if key != "side"]
    print(f"{'':28}" + "".join(f"{r['side']:>14}" for r in results))
    for key in columns:
        print(f"{key:28}" + "".join(f"{r[key]:>14}" for r in results))
    delete, drop = results
    if drop["purge_seconds"] > 0:
        ratio = delete["purge_seconds"] / drop["purge_seconds"]
        print(
            f"purge: DELETE {delete['purge_seconds']:.2f} s, dropping the days "
            f"{drop['purge_seconds']:.2f} s: DELETE / drop = {ratio:.1f}"
        )


if __name__ == "__main__":
    main()
