"""Fixtures for the transport tests: the live endpoint's URL and an HTTP client."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest


@pytest.fixture
def mcp_url(live_server: Any) -> str:
    return f"{live_server.url}/api/mcp"


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as client:
        yield client


@pytest.fixture
def streams_served() -> bool:
    """Whether the server under test holds subscription streams (Django's live server: no)."""
    return False
