"""Fixtures: real peers (stdio children, HTTP servers on loopback), server records, the mount.

No test leaves a process behind: warm clients are closed after each test, and every child
started during it must be gone (shared HTTP peers excepted).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.peers.processes import (
    PEERS,
    ROOT,
    HttpPeer,
    assert_none_left,
    children,
    peer,
    sdk_sessions,
    sdk_stateless,
    sdk_token,
)
from tmsite.mounts.mcp.mount import McpMount
from tmsite.mounts.namespace import Namespace
from tmsite.servers import pool
from tmsite.servers.models import McpServer

HOST = "test"
DEMO = [sys.executable, "-m", "tmsite.demo.mcp_server"]
BASE = f"tm://{HOST}/mcp/"

__all__ = [
    "BASE",
    "DEMO",
    "HOST",
    "PEERS",
    "ROOT",
    "HttpPeer",
    "peer",
    "sdk_sessions",
    "sdk_stateless",
    "sdk_token",
]


@pytest.fixture(autouse=True)
def no_process_left_behind() -> Iterator[None]:
    """Warm clients are closed after each test; every child it started is gone."""
    before = children()
    yield
    pool.close_all()
    assert_none_left(before)


@pytest.fixture
def ns() -> Namespace:
    return Namespace(HOST, {"mcp": McpMount(HOST)})


@pytest.fixture
def stdio_server(db: None) -> Callable[..., McpServer]:
    """Make a stdio server record: ``stdio_server(name, argv, **fields)``."""

    def make(name: str, argv: list[str], **fields: Any) -> McpServer:
        values: dict[str, Any] = {"start_timeout": 10.0, "call_timeout": 10.0, **fields}
        return McpServer.objects.create(
            name=name, transport="stdio", command=argv[0], args=argv[1:], **values
        )

    return make


@pytest.fixture
def fault(stdio_server: Callable[..., McpServer]) -> Callable[..., McpServer]:
    """A record for ``fault_peer.py MODE`` with short deadlines."""

    def make(mode: str, **fields: Any) -> McpServer:
        values = {"start_timeout": 3.0, "call_timeout": 2.0, **fields}
        return stdio_server(f"fault-{mode}", peer("fault_peer.py", mode), **values)

    return make
