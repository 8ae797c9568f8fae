"""Writes request log rows in batches, and deletes the rows past their retention.

A request appends its row to this process's buffer; the buffer goes to the database in one
``bulk_create`` when it holds ``TM_LOG_FLUSH_ROWS`` rows or its oldest row has waited
``TM_LOG_FLUSH_SECONDS`` — checked on each request and by a small background thread, so an
idle worker still writes its last rows — and when the process exits. A request therefore costs
a list append, not a database write (``bench/load.py`` measures both); the batch is written as
one parameterized ``INSERT`` run over every row (``executemany``, in one transaction), so no
model instance is made for a row.

A row is written only to the database it was recorded against (the name is noted with the
row), and a failed write is dropped with a warning: the log never fails a request.

Retention: after a flush, at most once an hour per process, rows older than
``TM_LOG_RETENTION_DAYS`` are deleted; ``manage.py tm_purge_log`` does the same on demand.

Spec: OP2.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from django.conf import settings
from django.db import connections, transaction
from django.utils import timezone

if TYPE_CHECKING:
    from django.db.models import Field

logger = logging.getLogger("tmsite.oplog")

#: Rows a process keeps at most while the database cannot take them.
MAX_BUFFER = 10_000
PURGE_EVERY_SECONDS = 3600.0


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
_DEFERRED: ContextVar[bool] = ContextVar("tm_oplog_deferred", default=False)
_buffer: list[_Pending] = []
_state = {"last_purge": 0.0, "last_warning": 0.0, "flusher_pid": -1.0}


def _database_name() -> str:
    return str(connections["default"].settings_dict.get("NAME"))


def record(row: Row) -> None:
    """Queue one row; flush when the batch is full or old enough."""
    if not settings.TM_LOG_REQUESTS:
        return
    now = time.monotonic()
    with _lock:
        _buffer.append(_Pending(row, _database_name(), now))
        if len(_buffer) > MAX_BUFFER:
            del _buffer[: len(_buffer) - MAX_BUFFER]
        due = _due(now)
    _ensure_flusher()
    if due and not _DEFERRED.get():
        flush()


@contextmanager
def deferred() -> Iterator[None]:
    """Rows recorded inside are only queued, even when the batch is due.

    For code that must not write the database where it runs (an event loop): the batch is
    written by this process's flusher thread or by the next ``record`` outside.
    """
    token = _DEFERRED.set(True)
    try:
        yield
    finally:
        _DEFERRED.reset(token)


def _due(now: float) -> bool:
    return bool(_buffer) and (
        len(_buffer) >= settings.TM_LOG_FLUSH_ROWS
        or now - _buffer[0].queued >= settings.TM_LOG_FLUSH_SECONDS
    )


def pending() -> int:
    """Rows waiting in this process's buffer."""
    with _lock:
        return len(_buffer)


def would_flush() -> bool:
    """Whether the next ``record`` would write the batch itself (full or old enough).

    A caller that must not write the database where it runs (an event loop) asks first.
    """
    if not settings.TM_LOG_REQUESTS:
        return False
    now = time.monotonic()
    with _lock:
        if len(_buffer) + 1 >= settings.TM_LOG_FLUSH_ROWS:
            return True
        return _due(now)


def flush() -> int:
    """Write every buffered row now; returns how many were written."""
    with _lock:
        batch = list(_buffer)
        _buffer.clear()
    if not batch:
        return 0
    here = _database_name()
    rows = [item.row for item in batch if item.database == here]
    if not rows:
        return 0
    try:
        _insert(rows)
    except Exception as exc:  # the log never fails a request
        _warn(f"request log: {len(rows)} rows dropped: {exc}")
        return 0
    maybe_purge()
    return len(rows)


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
    params: list[tuple[Any, ...]] = [
        tuple(
            field.get_db_prep_save(value, connection)
            for field, value in zip(model_fields, (getattr(row, n) for n in COLUMNS), strict=True)
        )
        for row in rows
    ]
    with transaction.atomic(using="default", savepoint=False), connection.cursor() as cursor:
        for start in range(0, len(params), 500):
            cursor.executemany(sql, params[start : start + 500])


def flush_quietly() -> None:
    """``flush`` for exit hooks: never raises."""
    try:
        flush()
    except Exception as exc:
        _warn(f"request log: flush at exit failed: {exc}")


def _warn(message: str) -> None:
    now = time.monotonic()
    if now - _state["last_warning"] >= 60:
        _state["last_warning"] = now
        logger.warning(message)


def cutoff(now: datetime | None = None) -> datetime:
    """Rows before this instant are past retention."""
    return (now or timezone.now()) - timedelta(days=settings.TM_LOG_RETENTION_DAYS)


def purge(now: datetime | None = None) -> int:
    """Delete every row older than the retention period; returns how many."""
    from tmsite.oplog.models import RequestLog

    deleted, _ = RequestLog.objects.filter(at__lt=cutoff(now)).delete()
    return deleted


def maybe_purge() -> None:
    """``purge``, at most once an hour per process (called after each flush)."""
    now = time.monotonic()
    if _state["last_purge"] and now - _state["last_purge"] < PURGE_EVERY_SECONDS:
        return
    _state["last_purge"] = now
    try:
        purge()
    except Exception as exc:
        _warn(f"request log: purge failed: {exc}")


def _ensure_flusher() -> None:
    """Start this process's background flusher once (again after a fork)."""
    if settings.TM_LOG_FLUSH_SECONDS <= 0 or _state["flusher_pid"] == os.getpid():
        return
    with _lock:
        if _state["flusher_pid"] == os.getpid():
            return
        _state["flusher_pid"] = os.getpid()
    thread = threading.Thread(target=_flusher, name="tm-oplog-flusher", daemon=True)
    thread.start()


def _flusher() -> None:
    pid = os.getpid()
    while _state["flusher_pid"] == pid:
        time.sleep(max(0.05, float(settings.TM_LOG_FLUSH_SECONDS) / 2))
        with _lock:
            due = _due(time.monotonic())
        if due:
            try:
                flush()
            finally:
                connections.close_all()
