"""JSON lines for the request log's stream: one object per line, no personal data.

``hooks`` logs each request on the ``tmsite.requests`` logger with the fields in ``extra``
(``event``, ``surface``, ``method``, ``kind``, ``facet``, ``protocol``, ``outcome``,
``status``, ``bytes``, ``duration_ms``, ``cost``); the formatter writes them after the time,
level, logger and process id. Nothing that names a caller is ever passed in.

A line is written by orjson where it writes what ``json`` would (:func:`dumps_line`).

``BackgroundStreamHandler`` is the stream handler the settings give the request log: a request
only queues its record, and one writer thread per process formats the line and writes it, so no
request pays for ``json.dumps`` or the write. The writer wakes for a record, lets the next ones
gather for ``GATHER_SECONDS`` and writes them all at once: at a thousand requests a second that
is fifty wake-ups and writes, not a thousand. The queue is drained at exit.

``OneLineEvery`` is the filter the settings put on a logger a client can make speak at will
(``django.security.DisallowedHost``: every request with a ``Host`` not served): one short line
at most every so many seconds, saying how many it left out, never a traceback.
"""

from __future__ import annotations

import atexit
import collections
import json
import logging
import os
import threading
import time
import weakref
from datetime import UTC, datetime
from typing import Any

import orjson
from typing_extensions import override

from tmsite.oplog import process

#: The fields a record may carry into a line; anything else on the record is ignored.
FIELDS = (
    "event",
    "surface",
    "method",
    "kind",
    "target",
    "facet",
    "protocol",
    "outcome",
    "status",
    "bytes",
    "duration_ms",
    "cost",
    "remaining",
    "rows",
)


class JsonFormatter(logging.Formatter):
    """One compact JSON object per record: time, level, logger, pid, message, ``FIELDS``."""

    @override
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "pid": record.process,
            "msg": record.getMessage(),
        }
        for name in FIELDS:
            if name in record.__dict__:
                line[name] = record.__dict__[name]
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return dumps_line(line)


def dumps_line(line: dict[str, object]) -> str:
    """``line`` as ``json.dumps`` writes it compactly (UTF-8 kept, ``str`` of the unknown).

    orjson writes the same text for a line of strings, whole numbers, booleans, nulls and
    floats from 1e-4 to 1e16, in a tenth of the time; any other line, or one orjson refuses
    (a lone surrogate, an integer past 64 bits), is written by ``json``.
    """
    if all(_orjson_writes_alike(value) for value in line.values()):
        try:
            return orjson.dumps(line).decode("utf-8")
        except (TypeError, ValueError):
            pass
    return json.dumps(line, ensure_ascii=False, separators=(",", ":"), default=str)


def _orjson_writes_alike(value: object) -> bool:
    if isinstance(value, float):
        size = abs(value)
        return size == 0 or 1e-4 <= size < 1e16  # json's exponents and NaN are its own
    return type(value) in _PLAIN_TYPES


_PLAIN_TYPES = frozenset({str, int, bool, type(None)})


#: How long the writer lets records gather after the first (the most a line waits, about).
GATHER_SECONDS = 0.02
#: The most records written at once.
GATHER_MOST = 1024


#: Every background handler of this process, for :func:`drain_all`.
_HANDLERS: weakref.WeakSet[BackgroundStreamHandler] = weakref.WeakSet()


def drain_all() -> None:
    """Write every pending line of every background handler now (a granian worker's exit)."""
    for handler in list(_HANDLERS):
        handler.drain()


class BackgroundStreamHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A ``StreamHandler`` whose records are formatted and written by a writer thread.

    ``emit`` appends the record to the pending ones and wakes the thread (started on the first
    record, and again in a forked child), which formats and writes what is pending. A record is
    either pending or being written under ``_write_lock``, never held anywhere else, so the exit
    hook (``drain``), taking the same lock, writes every record before the process ends.
    """

    def __init__(self, stream: Any = None) -> None:
        super().__init__(stream)
        self._pending: collections.deque[logging.LogRecord] = collections.deque()
        self._wake = threading.Event()
        self._write_lock = threading.Lock()
        self._writer_pid = -1
        self._start_lock = threading.Lock()
        atexit.register(self.drain)
        _HANDLERS.add(self)

    @override
    def emit(self, record: logging.LogRecord) -> None:
        if self._writer_pid != process.pid():
            self._start_writer()
        self._pending.append(record)
        wake = self._wake
        if not wake.is_set():  # set already: the writer has yet to clear it and drain
            wake.set()

    def _start_writer(self) -> None:
        with self._start_lock:
            if self._writer_pid == os.getpid():
                return
            # A forked child inherits neither the parent's pending records nor its thread.
            self._pending = collections.deque()
            self._wake = threading.Event()
            self._write_lock = threading.Lock()
            self._writer_pid = os.getpid()
            thread = threading.Thread(target=self._write_all, name="tm-log-writer", daemon=True)
            thread.start()

    def _write_all(self) -> None:
        wake = self._wake
        while True:
            wake.wait()
            # Let a busy moment's records gather: one wake-up and one write for all of them,
            # not a thread switch and a write per request.
            time.sleep(GATHER_SECONDS)
            wake.clear()
            self.drain()

    def drain(self) -> None:
        """Write every pending record, ``GATHER_MOST`` at a time (exit hooks, tests, the writer)."""
        pending = self._pending
        with self._write_lock:
            while pending:
                batch = [pending.popleft() for _ in range(min(len(pending), GATHER_MOST))]
                self._write_batch(batch)

    def _write_batch(self, records: list[logging.LogRecord]) -> None:
        """Format ``records`` and write their lines at once (a record that fails is skipped)."""
        lines = []
        for record in records:
            try:
                lines.append(self.format(record) + self.terminator)
            except Exception:  # as StreamHandler.emit: reported, the others written
                self.handleError(record)
        if not lines:
            return
        try:
            self.stream.write("".join(lines))
            self.flush()
        except Exception:
            self.handleError(records[-1])


class OneLineEvery(logging.Filter):
    """At most one record every ``seconds``, as one line of at most ``chars`` characters.

    A record let through loses its traceback and stack (``exc_info``, ``stack_info``), its
    message is cut at ``chars`` and, when records were left out since the last one, ends with
    how many. The others are dropped and counted. On a logger, so every handler it reaches
    (the root's ``stderr``, Django's own) gets the short line.
    """

    def __init__(self, seconds: float = 60.0, chars: int = 300) -> None:
        super().__init__()
        self.seconds, self.chars = float(seconds), int(chars)
        self._lock = threading.Lock()
        self._next = 0.0  # when the next line may be written (time.monotonic)
        self._dropped = 0

    @override
    def filter(self, record: logging.LogRecord) -> bool:
        now = time.monotonic()
        with self._lock:
            if now < self._next:
                self._dropped += 1
                return False
            self._next = now + self.seconds
            dropped, self._dropped = self._dropped, 0
        text = record.getMessage()
        if len(text) > self.chars:
            text = text[: self.chars] + "…"
        if dropped:
            text += f" ({dropped} more like it since the last such line, not written)"
        record.msg, record.args = text, None
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        return True
