"""The box served by the ASGI application (``tmsite.serve.app``) in this process, for the SDK
clients run as subprocesses, over a temporary checkout each test may change."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.clients.sdk_clients import HOST
from tests.serve.inthread import served
from tmsite.mounts import registry
from tmsite.serve.app import Application


@pytest.fixture(scope="module")
def asgi_url() -> Iterator[str]:
    with served(Application()) as url:
        yield url


@pytest.fixture
def mcp_endpoint(asgi_url: str, transactional_db: None) -> str:
    return f"{asgi_url}/api/mcp"


@pytest.fixture
def box(tmp_path: Path, settings: Any) -> Iterator[Path]:
    """A checkout of its own: ``docs/a.md``, a denied ``docs/.env``, served as ``fs/docs``."""
    root = tmp_path / "box"
    (root / "docs" / "guide").mkdir(parents=True)
    (root / "docs" / "a.md").write_text("# a\n\nThe first file.\n")
    (root / "docs" / "guide" / "b.md").write_text("# b\n")
    (root / "docs" / ".env").write_text("SECRET=1\n")
    settings.TM_CHECKOUT = root
    settings.TM_FS_ROOTS = ["docs"]
    settings.TM_HOST = HOST
    registry.reset()
    yield root
    registry.reset()
