"""Writes request log rows in batches, and deletes the rows past their retention.

A request appends its row to this process's buffer; the buffer goes to the database in one
``bulk_create`` when it holds ``TM_LOG_FLUSH_ROWS`` rows or its oldest row has waited
``TM_LOG_FLUSH_SECONDS`` — checked on each request and by a small background thread, so an
idle worker still writes its last rows; a row recorded in an event loop, where the database
must not be written, wakes that thread instead — and when the process exits. A
request therefore costs a list append, not a database write (``bench/load.py`` measures
both); the batch is written as one parameterized ``INSERT`` run over every row
(``executemany``, in one transaction), so no model instance is made for a row.

A row is written only to the database it was recorded against (the name is noted with the
row). The log never fails a request, and a database blip loses no row: a batch that cannot be
written goes back to the front of the buffer, and is tried again by the background thread
(and by requests) after ``RETRY_SECONDS``, doubling to ``MAX_RETRY_SECONDS`` while it keeps
failing; an explicit ``flush`` tries at once. The buffer holds at most ``MAX_BUFFER`` rows: past
that the oldest are dropped and counted (``status()``, in ``/api/v1/health`` as
``requestLog.dropped``, and in one log line a minute through ``tmsite.oplog.failures``). One
write runs at a time; a request that finds one running does not wait for it.

Exit: the rows still buffered are written when the process exits — ``atexit`` (registered by
the app's ``ready``; it runs after the threads still answering requests have finished) and
gunicorn's ``worker_exit`` hook in ``deploy/gunicorn.conf.py``, which runs in the worker when
SIGTERM, SIGQUIT or SIGINT stops it and when ``max_requests`` recycles it. A write already
running at exit is waited for. What a ``kill -9`` (or gunicorn's SIGKILL after
``graceful_timeout``) still loses: the rows in that process's buffer (fewer than
``TM_LOG_FLUSH_ROWS`` or ``TM_LOG_FLUSH_SECONDS``' worth while the database answers; up to
``MAX_BUFFER`` while it does not), the rows of the requests in flight, and a batch whose
transaction had not committed.

Retention: after a flush, at most once an hour per process, rows older than
``TM_LOG_RETENTION_DAYS`` are deleted; ``manage.py tm_purge_log`` does the same on demand. On
PostgreSQL the log is partitioned by day, and the purge makes the days ahead and drops whole
days instead (:mod:`tmsite.oplog.partitions`).

Every row recorded is counted first (``tmsite.oplog.metrics.observe``), kept or not.

Spec: OP2, OBS1.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from django.conf import settings
from django.db import connections, models, transaction
from django.utils import timezone

from tmsite.core.settled import settled
from tmsite.oplog import failures, metrics, partitions, process

if TYPE_CHECKING:
    from django.db.models import Field

logger = logging.getLogger("tmsite.oplog")

#: Rows a process keeps at most while the database cannot take them.
MAX_BUFFER = 10_000
PURGE_EVERY_SECONDS = 3600.0
#: Seconds before a failed batch is tried again, doubled on each failure up to the maximum.
RETRY_SECONDS = 0.5
MAX_RETRY_SECONDS = 8.0
#: Seconds without a batch after which the flusher closes its database connection.
KEEP_CONNECTION_SECONDS = 0.5
#: Seconds the exit flush waits for a write already running.
EXIT_WAIT_SECONDS = 10.0


@dataclass(slots=True)
class Row:
    """One request, as the log keeps it (the columns of ``RequestLog``; nothing else)."""

    at: datetime
    surface: str
    method: str = ""
    kind: str = ""
    target: str = ""
    facet: str = ""
    protocol: str = ""
    outcome: str = "ok"
    status: int = 200
    bytes: int = 0
    duration_us: int = 0


#: The row's fields, in order: each is the ``RequestLog`` field of the same name.
COLUMNS: tuple[str, ...] = tuple(item.name for item in fields(Row))


@dataclass
class _Pending:
    row: Row
    database: str
    queued: float


_lock = threading.Lock()
#: Held while a batch is written: one write at a time.
_writing = threading.Lock()
#: Set when a row recorded in an event loop made a batch due: the flusher writes it at once.
_wake = threading.Event()
_buffer: list[_Pending] = []
_state = {
    "last_purge": 0.0,
    "last_warning": 0.0,
    "flusher_pid": -1.0,
    "retry_at": 0.0,
    "failures": 0.0,
    "dropped": 0.0,
}


def _database_name() -> str:
    # the settings the connections are made from (the test runner renames the same dict),
    # without reaching this thread's connection
    return str(connections.settings["default"].get("NAME"))


def record(row: Row) -> None:
    """Count one row (``metrics``), queue it; flush when the batch is full or old enough."""
    metrics.observe(row)
    if not _thresholds()[0]:
        return
    now = time.monotonic()
    with _lock:
        _buffer.append(_Pending(row, _database_name(), now))
        _bound()
        due = _due(now)
    _ensure_flusher()
    if due and asyncio._get_running_loop() is not None:
        _wake.set()  # the flusher writes it now: an event loop never writes the database
    elif due:
        flush(wait=False)


def _bound() -> None:
    """Drop (and count) the oldest rows past ``MAX_BUFFER``; called under ``_lock``."""
    over = len(_buffer) - MAX_BUFFER
    if over > 0:
        del _buffer[:over]
        _state["dropped"] += over
        metrics.dropped(over)
        failures.report("request log", BufferFull(int(_state["dropped"])))


class BufferFull(Exception):
    """Rows were dropped: the database has not taken any for longer than the buffer lasts."""

    def __init__(self, dropped: int) -> None:
        super().__init__(
            f"{dropped} request log rows dropped since start: the buffer holds at most "
            f"{MAX_BUFFER} while the database cannot take them"
        )


@settled
def _thresholds() -> tuple[bool, int, float]:
    """``TM_LOG_REQUESTS``, ``TM_LOG_FLUSH_ROWS`` and ``TM_LOG_FLUSH_SECONDS``."""
    return (
        bool(settings.TM_LOG_REQUESTS),
        int(settings.TM_LOG_FLUSH_ROWS),
        float(settings.TM_LOG_FLUSH_SECONDS),
    )


def _due(now: float) -> bool:
    _, rows, seconds = _thresholds()
    return (
        bool(_buffer)
        and now >= _state["retry_at"]
        and (len(_buffer) >= rows or now - _buffer[0].queued >= seconds)
    )


def pending() -> int:
    """Rows waiting in this process's buffer."""
    with _lock:
        return len(_buffer)


def may_defer() -> bool:
    """Whether a row may be recorded where the database must not be written (an event loop).

    Always, where a flusher thread writes the batches that fall due; without one
    (``TM_LOG_FLUSH_SECONDS`` 0), only while the next ``record`` would not write the batch
    itself (full or old enough).
    """
    logged, rows, seconds = _thresholds()
    if seconds > 0 or not logged:
        return True
    now = time.monotonic()
    with _lock:
        return len(_buffer) + 1 < rows and not _due(now)


def status() -> dict[str, int]:
    """This process's buffer for the health report: rows waiting, rows dropped since start."""
    return {
        "pending": pending(),
        "dropped": int(_state["dropped"]),
        "failedWrites": int(_state["failures"]),
    }


def flush(wait: bool = True) -> int:
    """Write every buffered row now; returns how many were written.

    A batch that cannot be written goes back into the buffer (in front of the rows recorded
    meanwhile) and is tried again after a pause. ``wait=False`` (a request) returns at once
    when another write is running.
    """
    if not _writing.acquire(blocking=wait):
        return 0
    try:
        return _flush_locked()
    finally:
        _writing.release()


def _flush_locked() -> int:
    with _lock:
        batch = list(_buffer)
        _buffer.clear()
    if not batch:
        return 0
    here = _database_name()
    mine = [item for item in batch if item.database == here]
    if not mine:
        return 0
    try:
        _insert([item.row for item in mine])
    except Exception as exc:  # the log never fails a request: keep the rows, try again later
        with _lock:
            _buffer[:0] = mine
            _bound()
            _state["failures"] += 1
            pause = min(MAX_RETRY_SECONDS, RETRY_SECONDS * 2 ** (_state["failures"] - 1))
            _state["retry_at"] = time.monotonic() + pause
        _forget_broken_connection()
        failures.report("request log", exc)
        return 0
    with _lock:
        _state["failures"] = 0.0
        _state["retry_at"] = 0.0
    maybe_purge()
    return len(mine)


def _forget_broken_connection() -> None:
    """Close this thread's connection when the failure broke it (outside any transaction)."""
    connection = connections["default"]
    try:
        if not connection.in_atomic_block:
            connection.close_if_unusable_or_obsolete()
    except Exception:  # closing a broken connection may fail too; the next use reconnects
        pass


#: Columns whose value is the row's ``str`` or ``int`` unchanged.
_PLAIN_FIELDS = (models.CharField, models.IntegerField)


def _preparer(
    field: Field[Any, Any], connection: Any, adapt_time: Callable[[Any], Any]
) -> Callable[[Any], Any] | None:
    """How a column's value is made ready for the database (None: it is ready)."""
    if isinstance(field, _PLAIN_FIELDS):
        return None
    if isinstance(field, models.DateTimeField):
        return lambda value: (
            adapt_time(value)
            if isinstance(value, datetime) and timezone.is_aware(value)
            else field.get_db_prep_save(value, connection)
        )
    return lambda value: field.get_db_prep_save(value, connection)


def _insert(rows: list[Row]) -> None:
    """Write ``rows`` to ``RequestLog``'s table: one statement, every row's values bound."""
    from tmsite.oplog.models import RequestLog

    connection = connections["default"]
    meta = RequestLog._meta
    model_fields = [cast("Field[Any, Any]", meta.get_field(name)) for name in COLUMNS]
    quote = connection.ops.quote_name
    sql = (
        f"INSERT INTO {quote(meta.db_table)} "
        f"({', '.join(quote(str(field.column)) for field in model_fields)}) "
        f"VALUES ({', '.join(['%s'] * len(model_fields))})"
    )
    # A text or whole-number column takes the row's str or int as it is (``Row``'s types); the
    # time, always aware, goes to the backend's own adapter, as ``DateTimeField`` hands it on
    # (its other steps only warn of a naive time); anything else as the model prepares it.
    adapt_time = connection.ops.adapt_datetimefield_value
    prepare = [_preparer(field, connection, adapt_time) for field in model_fields]
    params: list[tuple[Any, ...]] = [
        tuple(
            value if how is None else how(value)
            for how, value in zip(prepare, (getattr(row, n) for n in COLUMNS), strict=True)
        )
        for row in rows
    ]
    with transaction.atomic(using="default", savepoint=False), connection.cursor() as cursor:
        for start in range(0, len(params), 500):
            cursor.executemany(sql, params[start : start + 500])


def flush_quietly() -> None:
    """``flush`` for exit hooks: never raises.

    Waits at most ``EXIT_WAIT_SECONDS`` for a write already running, and says in the log how
    many rows it could not write.
    """
    try:
        if not _writing.acquire(timeout=EXIT_WAIT_SECONDS):
            logger.warning("request log: a write still running at exit; %d rows lost", pending())
            return
        try:
            _flush_locked()
        finally:
            _writing.release()
        left = pending()
        if left:
            logger.warning("request log: %d rows could not be written at exit", left)
    except Exception as exc:
        logger.warning("request log: the flush at exit failed: %s", exc)


def cutoff(now: datetime | None = None) -> datetime:
    """Rows before this instant are past retention."""
    return (now or timezone.now()) - timedelta(days=settings.TM_LOG_RETENTION_DAYS)


def purge(now: datetime | None = None) -> partitions.Maintained:
    """Take the rows past the retention period out of the log.

    SQLite deletes them. A request log partitioned by day (PostgreSQL) has its partitions made
    ahead and drops each day past the retention whole (:mod:`tmsite.oplog.partitions`).
    """
    from tmsite.oplog.models import RequestLog

    now = now or timezone.now()
    if partitions.partitioned():
        return partitions.maintain(now, cutoff(now))
    deleted, _ = RequestLog.objects.filter(at__lt=cutoff(now)).delete()
    return partitions.Maintained(deleted=deleted)


def maybe_purge() -> None:
    """``purge``, at most once an hour per process (called after each flush)."""
    now = time.monotonic()
    if _state["last_purge"] and now - _state["last_purge"] < PURGE_EVERY_SECONDS:
        return
    _state["last_purge"] = now
    try:
        purge()
    except Exception as exc:
        warned = time.monotonic()
        if warned - _state["last_warning"] >= 60:  # one line a minute at most
            _state["last_warning"] = warned
            logger.warning(f"request log: purge failed: {exc}")


def _ensure_flusher() -> None:
    """Start this process's background flusher once (again after a fork)."""
    if _thresholds()[2] <= 0 or _state["flusher_pid"] == process.pid():
        return
    with _lock:
        if _state["flusher_pid"] == process.pid():
            return
        _state["flusher_pid"] = process.pid()
    thread = threading.Thread(target=_flusher, name="tm-oplog-flusher", daemon=True)
    thread.start()


def _flusher() -> None:
    """Write what falls due: woken by an event loop's row, or every half the flush period.

    Its database connection is kept while batches keep coming and closed once a
    ``KEEP_CONNECTION_SECONDS`` pass without one, so a busy event loop's rows do not pay for a
    connection each batch and an idle process holds none.
    """
    pid = os.getpid()
    connected = False
    while _state["flusher_pid"] == pid:
        tick = min(max(0.05, float(settings.TM_LOG_FLUSH_SECONDS) / 2), MAX_RETRY_SECONDS)
        woken = _wake.wait(min(tick, KEEP_CONNECTION_SECONDS) if connected else tick)
        _wake.clear()
        failures.summarize()
        with _lock:
            due = _due(time.monotonic())
        if due:
            try:
                flush()
            finally:
                connected = True
        elif connected and not woken:
            connections.close_all()
            connected = False
