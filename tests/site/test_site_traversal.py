"""Page slugs are never paths: nothing outside docs/ is read, whatever the address says."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

pytestmark = [pytest.mark.urls("tests.site.urls"), pytest.mark.spec("OP3")]

#: Files opened while recording (every ``open`` in this process, via an audit hook).
_opened: list[str] | None = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _opened is not None and event == "open" and isinstance(args[0], str | Path):
        _opened.append(str(args[0]))


sys.addaudithook(_audit)


@pytest.fixture
def opened() -> Iterator[list[str]]:
    """Every file the process opens during the test."""
    global _opened
    _opened = []
    try:
        yield _opened
    finally:
        _opened = None


ATTACKS = [
    "/docs/../settings",
    "/docs/../secret.txt",
    "/docs/nes/../../settings",
    "/ja/docs/../../settings",
    "/ja/docs/../docs/../settings",
    "/docs/..",
    "/docs/.",
    "/docs/./nes/pile",
    "/docs/nes/./pile",
    "/docs/%2e%2e/settings",
    "/docs/%2E%2E/%2E%2E/settings",
    "/docs/..%2fsettings",
    "/docs/%2e%2e%2fsettings",
    "/docs/..%5csettings",
    "/docs/nes%5c..%5c..%5csettings",
    "/docs/%5c..%5csettings",
    "/docs/%252e%252e/settings",
    "/docs/nes/pile%00",
    "/docs/nes/pile.md%00",
    "/docs/%00/../settings",
    "/docs//settings",
    "/docs/nes//pile",
    "/docs/%2fsettings",
    "/docs/nes/pile.md/x",  # /docs/nes/pile.md is the page's markdown (test_discovery.py)
    "/docs/nes/pile.md.md",
    "/docs/escape.md",
    "/docs/../settings.md",
    "/docs/_draft.md",
    "/docs/_draft",
    "/docs/README",
    "/docs/ja/nes/pile",
    "/ja/docs/ja/nes/pile",
    "/docs/styles/x",
    "/docs/escape",
    "/docs/C:%5csettings",
    "/docs/~/settings",
    "/docs/nes/pile%0a",
]


@pytest.mark.parametrize("path", ATTACKS)
def test_no_read_outside_docs(
    client: Client, checkout: Path, secret: str, opened: list[str], path: str
) -> None:
    (checkout / "docs" / "escape.md").symlink_to(checkout / "settings.md")
    response = client.get(path)
    assert response.status_code == 404, path
    assert secret.encode() not in response.content
    docs = str(checkout / "docs") + "/"
    touched = [p for p in opened if p.startswith(str(checkout))]
    assert [p for p in touched if not p.startswith(docs)] == []
    # and an address that names no page reads no document either
    assert touched == []


def test_the_recorder_sees_reads(client: Client, checkout: Path, opened: list[str]) -> None:
    """The audit hook does see a page's source being read (so the test above means something)."""
    assert client.get("/docs/nes/pile").status_code == 200
    assert str(checkout / "docs" / "nes" / "pile.md") in opened
