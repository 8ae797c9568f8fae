"""JSON lines for the request log's stream: one object per line, no personal data.

``hooks`` logs each request on the ``tmsite.requests`` logger with the fields in ``extra``
(``event``, ``surface``, ``method``, ``kind``, ``facet``, ``protocol``, ``outcome``,
``status``, ``bytes``, ``duration_ms``, ``cost``); the formatter writes them after the time,
level, logger and process id. Nothing that names a caller is ever passed in.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

from typing_extensions import override

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
        return json.dumps(line, ensure_ascii=False, separators=(",", ":"), default=str)
