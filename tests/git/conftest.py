"""Fixtures for the git mount: one scenario built per module (read-only), the caches emptied."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.git.scenario import Scenario, build
from tmsite import gitstore
from tmsite.mounts.namespace import Namespace


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    return build(tmp_path_factory.mktemp("gitmount"))


@pytest.fixture
def ns(scenario: Scenario) -> Iterator[Namespace]:
    gitstore.clear_caches()
    yield scenario.namespace()


@pytest.fixture
def fresh(tmp_path: Path) -> Scenario:
    """A private scenario, for tests that change files."""
    return build(tmp_path)
