"""Fixtures every test gets, and the rules every test runs under (:mod:`tests.audit`, and the
protocol schema every MCP answer is checked against, :mod:`tests.wire_schema`).

``TM_TEST_REVERSE=1`` runs the collected tests in reverse order, to show that no test leans on
what an earlier one left behind. The run's own ``var/`` and the check that the checkout's is left
alone are :mod:`tests.own_var`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Generator, Iterator
from typing import Any

import pytest

from tests import audit, wire_schema
from tests.git_oracle import git_cli
from tests.spec_marks import check_spec_marks

audit.install()
wire_schema.install()

from tmsite.core import sharedcache  # noqa: E402
from tmsite.kinds.counter import COUNTER  # noqa: E402  (after the revision parsers are guarded)
from tmsite.mcp import prepared  # noqa: E402
from tmsite.mounts import registry  # noqa: E402
from tmsite.oplog import failures, recorder  # noqa: E402


def _fail_on_what_the_audit_found() -> Generator[None, object, object]:
    try:
        return (yield)
    finally:
        if found := audit.take_found() + wire_schema.take_found():
            pytest.fail("\n".join(found), pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _fail_on_what_the_audit_found())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _fail_on_what_the_audit_found())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _fail_on_what_the_audit_found())


def pytest_sessionfinish(session: pytest.Session) -> None:
    # broken outside any test (collection, session fixtures)
    if found := audit.take_found() + wire_schema.take_found():
        print("\n".join(found), file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    check_spec_marks(items)
    if os.environ.get("TM_TEST_REVERSE") == "1":
        items.reverse()


def _forget_what_the_process_buffered() -> None:
    with recorder._lock:
        recorder._buffer.clear()
        recorder._state.update(retry_at=0.0, failures=0.0, dropped=0.0)
    COUNTER.reset()
    failures.reset()  # each test's first failure of a kind is logged with its traceback


@pytest.fixture(autouse=True)
def change_sources_stay_in_their_test() -> Iterator[None]:
    """The change sources a listen stream installs (``sources.install``, once a process) are
    removed after the test: a later test's listeners would otherwise also hear the sources
    built over an earlier test's settings. So are the 2025-11-25 sessions a process watches."""
    yield
    from tmsite.streams import sessionstream
    from tmsite.subscriptions import sources

    if sources.installed():
        sources.uninstall()
    sessionstream.forget()  # a session watched after its test would poll the next one's database


@pytest.fixture(autouse=True)
def batched_writes_stay_in_their_test(settings: Any) -> Iterator[None]:
    """What a test buffers for the database (request-log rows, kind counts) lands in that test.

    Both are kept per process and written in batches, so without this one test's leftovers
    would be written during a later test — after the first test's database was rolled back or
    truncated, and from the request log's background thread, beside the later test's own
    writes. So each test starts and ends with nothing buffered, and the age-based flushes are
    off (log rows go when a batch is full or a test flushes, kind counts when a test flushes);
    a test of the timing sets its own value. The kind counts' flush runs on
    ``request_finished``, after the answer reached the client: in a live-server test it would
    write from the server's thread while the test's teardown empties the database.
    """
    settings.TM_LOG_FLUSH_SECONDS = 3600
    _forget_what_the_process_buffered()
    every, seconds = COUNTER.every, COUNTER.seconds
    COUNTER.every, COUNTER.seconds = 10**9, 3600.0
    try:
        yield
    finally:
        COUNTER.every, COUNTER.seconds = every, seconds
        _forget_what_the_process_buffered()


@pytest.fixture(autouse=True)
def trails_version_asked_on_every_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """The trails a process read are checked against the corrections' version on every read.

    A process trusts the version it read for a second; across tests that second would carry
    trails read from a database since rolled back. A test of the window sets its own value.
    """
    from tmsite.trails import index  # models: after Django is set up, not at plugin load

    monkeypatch.setattr(index, "VERSION_RECHECK_SECONDS", 0.0)


@pytest.fixture(autouse=True)
def curated_version_asked_on_every_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """The curated links a process read are checked against their version on every read.

    As for the trails: a second's trust across tests would carry links from a database since
    rolled back or flushed, and so would what a test of the window (which sets its own value)
    read. Each test starts with nothing read.
    """
    from tmsite.proposals import curated  # models: after Django is set up, not at plugin load

    monkeypatch.setattr(curated, "VERSION_RECHECK_SECONDS", 0.0)
    curated.forget()


@pytest.fixture(autouse=True)
def shared_cache_circuits_start_closed() -> None:
    """A circuit another test opened (a cache made to fail) is not this test's."""
    sharedcache.reset()


@pytest.fixture(autouse=True)
def namespace_from_this_tests_settings() -> None:
    """Each test reads the namespace its own settings build.

    The namespace (and the answers prepared from it) is built once per process and kept; a test
    that changed ``TM_HOST`` or the mounts and read it would otherwise leave that namespace to
    whichever test the process runs next. Building one costs about 2 ms.
    """
    registry.reset()
    prepared.clear()


@pytest.fixture
def git_oracle() -> str:
    """The git CLI, for a test that compares with it (see :mod:`tests.git_oracle`)."""
    return git_cli()
