"""The box served by the ASGI application (``tmsite.serve.app``) in this process, for streams."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.serve.inthread import served
from tmsite.serve.app import Application


@pytest.fixture(scope="module")
def asgi_url() -> Iterator[str]:
    with served(Application()) as url:
        yield url


@pytest.fixture
def listen_url(asgi_url: str, transactional_db: None) -> str:
    return f"{asgi_url}/api/mcp"
