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
    "allow_program",
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


@pytest.fixture(autouse=True)
def loopback_peers_allowed(settings: Any) -> None:
    """The HTTP peers here listen on loopback: allowed as an operator allows a host."""
    settings.TM_MCP_ALLOWED_HOSTS = ["127.0.0.1"]


@pytest.fixture
def ns() -> Namespace:
    return Namespace(HOST, {"mcp": McpMount(HOST)})


def allow_program(
    settings: Any, name: str, argv: list[str], cwd: str = "", env_allow: list[str] | None = None
) -> None:
    """Let the box run ``argv`` as the program ``name``, as an operator's programs file would."""
    held = settings.TM_STDIO_PROGRAMS
    current = dict(held) if isinstance(held, dict) else {}
    spec: dict[str, Any] = {"argv": list(argv), "cwd": cwd}
    if env_allow is not None:
        spec["env_allow"] = env_allow
    settings.TM_STDIO_PROGRAMS = {**current, name: spec}


@pytest.fixture
def stdio_server(db: None, settings: Any) -> Callable[..., McpServer]:
    """Make a stdio server record running an allowed program of its name: ``(name, argv, …)``.

    ``cwd`` and ``env_allow`` are the program's (the operator's); the other fields the record's.
    """

    def make(
        name: str, argv: list[str], cwd: str = "", env_allow: list[str] | None = None, **fields: Any
    ) -> McpServer:
        allow_program(settings, name, argv, cwd, env_allow)
        values: dict[str, Any] = {"start_timeout": 10.0, "call_timeout": 10.0, **fields}
        return McpServer.objects.create(name=name, transport="stdio", program=name, **values)

    return make


@pytest.fixture
def fault(stdio_server: Callable[..., McpServer]) -> Callable[..., McpServer]:
    """A record for ``fault_peer.py MODE`` with short deadlines."""

    def make(mode: str, **fields: Any) -> McpServer:
        values = {"start_timeout": 3.0, "call_timeout": 2.0, **fields}
        return stdio_server(f"fault-{mode}", peer("fault_peer.py", mode), **values)

    return make
