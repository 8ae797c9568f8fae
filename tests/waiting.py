"""Waiting in a test until something holds, the one way."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.db import OperationalError


def wait_until(
    predicate: Callable[[], Any], seconds: float = 10.0, what: str = "", step: float = 0.02
) -> None:
    """Return once ``predicate()`` is true; fail after ``seconds`` saying ``what`` was awaited.

    A predicate that reads the database while the server's own thread writes the same table
    meets the shared in-memory test database's table lock ("database table is locked": it
    locks rather than waits); that read counts as not yet.
    """
    message = f"timed out waiting: {what}" if what else "timed out waiting"
    deadline = time.monotonic() + seconds
    while not _holds(predicate):
        assert time.monotonic() < deadline, message
        time.sleep(step)


def _holds(predicate: Callable[[], Any]) -> bool:
    try:
        return bool(predicate())
    except OperationalError as exc:
        if "locked" not in str(exc):
            raise
        return False
