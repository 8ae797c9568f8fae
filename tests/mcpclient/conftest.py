"""Fixtures: real peers as real processes (stdio children, HTTP servers on loopback)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.peers.processes import (
    HttpPeer,
    assert_none_left,
    children,
    peer,
    sdk_sessions,
    sdk_stateless,
    sdk_token,
    start_http_peer,
    stop_http_peer,
)

__all__ = ["sdk_sessions", "sdk_stateless", "sdk_token"]


@pytest.fixture(scope="module")
def http_faults() -> Iterator[HttpPeer]:
    p = start_http_peer(peer("http_fault_peer.py"))
    yield p
    stop_http_peer(p)


@pytest.fixture(autouse=True)
def no_process_left_behind() -> Iterator[None]:
    """Every child a test starts is gone when it ends (shared HTTP peers excepted)."""
    before = children()
    yield
    assert_none_left(before)
