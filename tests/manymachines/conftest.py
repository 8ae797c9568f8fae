"""The many-machine setup against real services: PostgreSQL and Redis.

These tests run when ``TM_TEST_DATABASE_URL`` (a role that may create databases) and
``TM_TEST_REDIS_URL`` are set — ``.ci/services.sh`` installs, starts and exports both — and
skip only when they are absent. Each test run makes its own database and drops it after.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator

import pytest

from tests.services import missing, own_database


@pytest.fixture(scope="session")
def redis_url() -> str:
    url = os.environ.get("TM_TEST_REDIS_URL")
    if not url:
        missing("no Redis: TM_TEST_REDIS_URL is not set", "source .ci/services.sh as root")
    return url


@pytest.fixture
def database_url() -> Iterator[str]:
    """A fresh PostgreSQL database for this test, dropped afterwards: what a test counts in it
    (request-log rows) is its own, whichever tests ran before it in the worker."""
    url = os.environ.get("TM_TEST_DATABASE_URL")
    if not url:
        missing("no PostgreSQL: TM_TEST_DATABASE_URL is not set", "source .ci/services.sh as root")
    with own_database(url, "tm_mm") as own:
        yield own


@pytest.fixture
def cache_prefix() -> str:
    """A key prefix of this test's own: buckets and day secrets another test (or an earlier run
    against the same Redis) left are not this test's."""
    return f"tm-test-{secrets.token_hex(4)}"
