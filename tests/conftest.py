"""Fixtures every test gets."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tmsite.oplog import recorder


def _discard_buffered_rows() -> None:
    with recorder._lock:
        recorder._buffer.clear()


@pytest.fixture(autouse=True)
def request_log_stays_in_its_test(settings: Any) -> Iterator[None]:
    """Each test's request-log rows reach the database only inside that test.

    The background flusher writes rows that waited ``TM_LOG_FLUSH_SECONDS``; in a test run it
    would write one test's rows in the middle of a later test, after the first test's database
    was rolled back or truncated. So rows are flushed only when a batch is full or a test
    flushes, and whatever a test leaves in the buffer is dropped when it ends. A test that
    tests the timing sets its own value.
    """
    settings.TM_LOG_FLUSH_SECONDS = 3600
    _discard_buffered_rows()
    yield
    _discard_buffered_rows()
