"""Fixtures for the prompts: a box whose site is served live, and its MCP endpoint on loopback.

The box is ``testbox``: the ``fs`` mount over a temporary checkout (the http mount tests' own,
:func:`tests.http.conftest.build_checkout`) and the ``http`` mount reading this project's site
from the live server, which renders that checkout. The prompts, the completion and the
resource methods are asked over real HTTP at the same live server::

    <checkout>/docs/nes/pile.md  ──renders as──►  tm://testbox/http/tinymachines.ai/docs/nes/pile
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.http.conftest import HOST, SITE, build_checkout, configure
from tmsite.mounts import registry

PAGE = f"tm://{HOST}/http/{SITE}/docs/nes/pile"
SOURCE = f"tm://{HOST}/fs/docs/nes/pile.md"
FS_TEMPLATE = f"tm://{HOST}/fs/{{+path}}"


@pytest.fixture
def box(live_server: Any, settings: Any, tmp_path: Path) -> Iterator[str]:
    """The box's MCP endpoint URL, the namespace configured over the live site."""
    configure(settings, live_server.url, None, build_checkout(tmp_path / "checkout"))
    registry.reset()
    yield f"{live_server.url}/api/mcp"
    registry.reset()


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as client:
        yield client
