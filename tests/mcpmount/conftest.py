"""Fixtures: real peers (stdio children, HTTP servers on loopback), server records, the mount.

No test leaves a process behind: warm clients are closed after each test, and every child
started during it must be gone (shared HTTP peers excepted).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.mcpclient.conftest import (
    _SHARED_PEERS,
    HttpPeer,
    _children,
    gone,
    peer,
    start_http_peer,
    stop_http_peer,
)
from tmsite.mounts.mcp import McpMount
from tmsite.mounts.namespace import Namespace
from tmsite.servers import pool
from tmsite.servers.models import McpServer

HOST = "test"
ROOT = Path(__file__).resolve().parents[2]
PEERS = ROOT / "tests" / "peers"
DEMO = [sys.executable, "-m", "tmsite.demo_server"]
BASE = f"tm://{HOST}/mcp/"

__all__ = ["BASE", "DEMO", "HOST", "PEERS", "ROOT", "HttpPeer", "peer"]


@pytest.fixture(autouse=True)
def no_process_left_behind() -> Iterator[None]:
    """Warm clients are closed after each test; every child it started is gone."""
    before = _children()
    yield
    pool.close_all()
    left = {pid for pid in _children() - before - _SHARED_PEERS if not gone(pid, timeout=5)}
    assert not left, f"processes left behind: {sorted(left)}"


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


@pytest.fixture(scope="module")
def sdk_stateless() -> Iterator[HttpPeer]:
    p = start_http_peer(peer("sdk_http_peer.py", "--stateless"))
    yield p
    stop_http_peer(p)


@pytest.fixture(scope="module")
def sdk_sessions() -> Iterator[HttpPeer]:
    p = start_http_peer(peer("sdk_http_peer.py"))
    yield p
    stop_http_peer(p)


@pytest.fixture(scope="module")
def sdk_token() -> Iterator[HttpPeer]:
    p = start_http_peer(
        peer("sdk_http_peer.py", "--stateless", "--json", "--token-env", "ELEMENTS_TOKEN"),
        env={"ELEMENTS_TOKEN": "s3cret-token"},
    )
    yield p
    stop_http_peer(p)
