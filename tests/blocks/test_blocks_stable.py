"""Two blocks reads of a thing that did not change are the same blocks, on a real MCP server:
a mapped thing (a tool's answer) and a resource read through it, each read twice with time
passing between. The explorer compares them on each listen to tell a change; the moment of a
call is the read's own provenance (``_meta``), not part of what is drawn.

Spec: BLOCKS, MCP.
"""

from __future__ import annotations

import time

import pytest

from tests.blocks.conftest import blocks_of
from tmsite.mounts.mcp.map import PROVENANCE
from tmsite.mounts.namespace import Namespace

pytestmark = [pytest.mark.slow, pytest.mark.spec("BLOCKS", "MCP")]


def test_an_unchanged_mcp_thing_draws_the_same_blocks_twice(
    space: Namespace, elements: str
) -> None:
    thing = f"{elements}element/Fe"
    resource = f"{elements}resources/elements:%2F%2Fabout"
    for uri, clock in ((thing, "calledAt"), (resource, "readAt")):
        first = blocks_of(space, f"{uri}?as=blocks")
        time.sleep(0.05)
        second = blocks_of(space, f"{uri}?as=blocks")
        assert not first["refused"], first
        assert first == second, uri
        # the moment is still said where a client reads the thing itself
        read = space.read(uri)
        meta = read.body.get("_meta", {}) if isinstance(read.body, dict) else (read.meta or {})
        assert meta[PROVENANCE][clock]
