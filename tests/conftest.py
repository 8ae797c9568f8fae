"""Fixtures every test gets."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.spec_marks import pytest_collection_modifyitems  # noqa: F401  (the spec marker)
from tmsite.kinds.counter import COUNTER
from tmsite.oplog import recorder


def _forget_what_the_process_buffered() -> None:
    with recorder._lock:
        recorder._buffer.clear()
    COUNTER.reset()


@pytest.fixture(autouse=True)
def batched_writes_stay_in_their_test(settings: Any) -> Iterator[None]:
    """What a test buffers for the database (request-log rows, kind counts) lands in that test.

    Both are kept per process and written in batches, so without this one test's leftovers
    would be written during a later test — after the first test's database was rolled back or
    truncated, and from the request log's background thread, beside the later test's own
    writes. So each test starts and ends with nothing buffered, and the request log's
    age-based flush is off (rows go when a batch is full or a test flushes); a test of the
    timing sets its own value.
    """
    settings.TM_LOG_FLUSH_SECONDS = 3600
    _forget_what_the_process_buffered()
    yield
    _forget_what_the_process_buffered()
