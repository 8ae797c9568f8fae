"""Fixtures for the entity, offbox and trail mounts: the shipped records, a namespace over them,
generated large records, and real repositories with three record revisions."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.entities.conftest import dump, make_large
from tmsite.entities.loaders import Records, fill, parse_records, read_checkout
from tmsite.mounts import registry
from tmsite.mounts.entity.mount import EntityMount
from tmsite.mounts.fs.mount import FsMount
from tmsite.mounts.namespace import Namespace
from tmsite.mounts.offbox.mount import OffboxMount
from tmsite.mounts.trail.mount import TrailMount

ROOT = Path(__file__).resolve().parents[2]
HOST = "tinymachines"
SITE = "tinymachines.ai"


def make_space(checkout: Path, host: str = HOST) -> Namespace:
    """The mounts these tests read, over one checkout."""
    return Namespace(
        host,
        {
            "entity": EntityMount(host, checkout, "tmsite", SITE),
            "fs": FsMount(host, checkout, ["docs", "data", "notes"]),
            "offbox": OffboxMount(host, checkout, "tmsite"),
            "trail": TrailMount(host, checkout),
        },
    )


@pytest.fixture
def shipped(db: None) -> Records:
    """The shipped records, loaded into the tables."""
    records = read_checkout(ROOT)
    fill(records)
    return records


@pytest.fixture
def shipped_json() -> tuple[dict[str, Any], dict[str, Any]]:
    return (
        json.loads((ROOT / "data/autopsy.json").read_text()),
        json.loads((ROOT / "data/lessons.json").read_text()),
    )


@pytest.fixture
def ns(shipped: Records) -> Namespace:
    """A namespace over this checkout, the shipped records loaded."""
    return make_space(ROOT)


@pytest.fixture(scope="session")
def large_json() -> tuple[dict[str, Any], dict[str, Any]]:
    """5,000 routines in 10 games; pad-poll in 2,000 of them."""
    return make_large(games=10, per_game=500, hot="pad-poll", hot_count=2000)


@pytest.fixture
def large(db: None, large_json: tuple[dict[str, Any], dict[str, Any]]) -> Records:
    autopsy, lessons = large_json
    records = parse_records(dump(autopsy), dump(lessons))
    fill(records)
    return records


@pytest.fixture
def large_ns(large: Records, tmp_path: Path, large_json: tuple[Any, Any]) -> Namespace:
    checkout = tmp_path / "large"
    (checkout / "data").mkdir(parents=True)
    (checkout / "data" / "autopsy.json").write_bytes(dump(large_json[0]))
    (checkout / "data" / "lessons.json").write_bytes(dump(large_json[1]))
    return make_space(checkout)


@pytest.fixture
def process_space(settings: Any) -> Iterator[Callable[[Path], Namespace]]:
    """Point the process namespace (what system checks read) at a checkout."""

    def use(checkout: Path) -> Namespace:
        settings.TM_CHECKOUT = checkout
        settings.TM_HOST = HOST
        settings.TM_FS_ROOTS = ["docs", "data", "notes"]
        settings.TM_MOUNTS = ["entity", "fs", "offbox", "trail"]
        registry.reset()
        return registry.namespace()

    yield use
    registry.reset()
