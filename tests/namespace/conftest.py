"""Fixtures for the namespace core: a real checkout on disk and the process namespace over it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.namespace.world import HOST, build_checkout
from tmsite.mounts import registry
from tmsite.mounts.namespace import Namespace


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    return build_checkout(tmp_path)


@pytest.fixture
def process_namespace(settings: Any, checkout: Path) -> Iterator[Namespace]:
    """The process namespace (what MCP methods and tools read) over ``checkout``."""
    settings.TM_CHECKOUT = checkout
    settings.TM_FS_ROOTS = ["docs", "data", "notes"]
    settings.TM_HOST = HOST
    settings.TM_MOUNTS = ["fs"]
    registry.reset()
    yield registry.namespace()
    registry.reset()
