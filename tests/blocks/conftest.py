"""The process namespace over this checkout, every registered mount, the shipped records loaded."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tmsite.blocks.schema import SCHEMA
from tmsite.entities.loaders import load_checkout
from tmsite.mounts import registry
from tmsite.mounts.namespace import Namespace

ROOT = Path(__file__).resolve().parents[2]
HOST = "tinymachines"
VALIDATOR = Draft202012Validator(SCHEMA)


def valid(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` if it validates against the published schema (else the first error, raised)."""
    errors = sorted(VALIDATOR.iter_errors(body), key=lambda e: list(e.absolute_path))
    assert not errors, f"{body.get('uri')}: {errors[0].message} at {list(errors[0].absolute_path)}"
    return body


@pytest.fixture
def space(db: None, settings: Any) -> Iterator[Namespace]:
    """The namespace every surface reads: all registered mounts, this checkout, records loaded."""
    settings.TM_HOST = HOST
    settings.TM_CHECKOUT = ROOT
    if hasattr(settings, "TM_MOUNTS"):
        del settings.TM_MOUNTS
    load_checkout(ROOT)
    registry.reset()
    yield registry.namespace()
    registry.reset()


def blocks_of(space: Namespace, uri: str) -> dict[str, Any]:
    """The blocks read of ``uri``, validated."""
    content = space.read(uri)
    assert content.mime_type == "application/vnd.tm.blocks+json"
    body = content.body
    assert isinstance(body, dict)
    json.dumps(body)  # it is JSON as it stands
    return valid(body)
