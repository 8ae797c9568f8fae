"""Fixtures for the fs mount under hostile input."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fs.tree import Box, build


@pytest.fixture
def box(tmp_path: Path) -> Box:
    return build(tmp_path)
