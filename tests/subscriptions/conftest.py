"""The box served by the ASGI application (``tmsite.serve.app``) in this process, for streams."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.serve.inthread import served
from tests.subscriptions.helpers import stream_client
from tmsite.serve.app import Application


@pytest.fixture(scope="module")
def asgi_url() -> Iterator[str]:
    with served(Application()) as url:
        yield url


@pytest.fixture
def listen_url(asgi_url: str, transactional_db: None) -> str:
    return f"{asgi_url}/api/mcp"


@pytest.fixture
def http_client() -> Iterator[httpx.Client]:
    """A client for streams: a read waits 20 s for the next bytes."""
    with stream_client() as http:
        yield http
