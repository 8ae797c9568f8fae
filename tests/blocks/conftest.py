"""The process namespace over this checkout, every registered mount, the shipped records loaded;
an MCP server record for the demo server (a real child process) when a test asks for one; and a
walk of the namespace that reports every kind it served and every kind a listing declared."""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tests.peers.processes import assert_none_left, children
from tmsite.blocks.assemble import blocks_uri
from tmsite.blocks.schema import SCHEMA
from tmsite.core.uri import parse
from tmsite.entities.loaders import load_checkout
from tmsite.mounts import registry
from tmsite.mounts.namespace import Namespace

ROOT = Path(__file__).resolve().parents[2]
HOST = "tinymachines"
T = f"tm://{HOST}"
VALIDATOR = Draft202012Validator(SCHEMA)


def valid(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` if it validates against the published schema (else the first error, raised)."""
    errors = sorted(VALIDATOR.iter_errors(body), key=lambda e: list(e.absolute_path))
    assert not errors, f"{body.get('uri')}: {errors[0].message} at {list(errors[0].absolute_path)}"
    return body


#: Every mount the blocks audit covers: the registry's full list, written out.
MOUNTS = (
    "entity",
    "fs",
    "git",
    "http",
    "kinds",
    "manifest",
    "mcp",
    "offbox",
    "proposals",
    "renderers",
    "trail",
)


@pytest.fixture
def space(db: None, settings: Any) -> Iterator[Namespace]:
    """The namespace every surface reads: all registered mounts, this checkout, records loaded."""
    settings.TM_HOST = HOST
    settings.TM_CHECKOUT = ROOT
    if hasattr(settings, "TM_MOUNTS"):
        del settings.TM_MOUNTS
    load_checkout(ROOT)
    registry.reset()
    ns = registry.namespace()
    # What these tests expect is fixed: a mount unregistered (or left out) fails here, instead of
    # quietly taking its kinds out of what is expected.
    assert sorted(ns.mounts) == list(MOUNTS), f"the mounts served are {sorted(ns.mounts)}"
    yield ns
    registry.reset()


def blocks_of(space: Namespace, uri: str) -> dict[str, Any]:
    """The blocks read of ``uri``, validated."""
    content = space.read(uri)
    assert content.mime_type == "application/vnd.tm.blocks+json"
    body = content.body
    assert isinstance(body, dict)
    json.dumps(body)  # it is JSON as it stands
    return valid(body)


@pytest.fixture
def elements(space: Namespace) -> Iterator[str]:
    """The demo MCP server (``python -m tmsite.demo.mcp_server``, stdio) probed, its map derived.

    Yields its record's address; every child process it started is gone afterwards."""
    from tmsite.servers import pool
    from tmsite.servers.connect import probe_record
    from tmsite.servers.index import rederive
    from tmsite.servers.models import McpServer

    before = children()
    record = McpServer.objects.create(
        name="elements",
        transport="stdio",
        program="elements",
        start_timeout=10.0,
        call_timeout=10.0,
        description="The chemical elements.",
        sources=["IUPAC standard atomic weights"],
        licence_basis="Facts of nature: public domain.",
    )
    try:
        outcome = probe_record(record)
        assert outcome.outcome == "answered", outcome
        rederive(record)
        yield f"tm://{HOST}/mcp/elements/"
    finally:
        pool.close_all()
        assert_none_left(before)


_VND = re.compile(r"application/vnd\.tm\.([a-z][a-z0-9-]*)\+json")


@dataclass
class Walk:
    """What a walk read: per kind served, the first address (facet included) that served it;
    and every kind a listing declared for a child (its ``application/vnd.tm.<kind>+json``)."""

    served: dict[str, str] = field(default_factory=dict)
    declared: dict[str, str] = field(default_factory=dict)
    reads: int = 0


def _hrefs(body: dict[str, Any]) -> list[str]:
    out = []
    for block in body["blocks"]:
        if block["kind"] == "table":
            out += [c["href"] for row in block["rows"] for c in row if isinstance(c, dict)]
        elif block["kind"] == "link":
            out.append(block["href"])
        elif block["kind"] == "kv":
            out += [item["href"] for item in block["items"] if "href" in item]
    return out


#: Addresses each mount is read at, past what a walk finds (a mount's own first things).
SEEDS = [
    "tm://",
    f"{T}/",
    f"{T}/fs/docs/mcp.md",
    f"{T}/fs/data/pieces.json",
    f"{T}/fs/docs/nosuch.md",
    f"{T}/manifest",
    f"{T}/manifest/",
    f"{T}/renderers/text/markdown",
    f"{T}/kinds/",
    f"{T}/git/tmsite/docs/mcp.md",
    f"{T}/trail/page-to-history",
    f"{T}/offbox/",
    f"{T}/entity/pattern/",
    f"{T}/entity/game/",
    f"{T}/entity/lesson/",
    f"{T}/entity/game/72f469219b30/routine/",
    f"{T}/entity/game/72f469219b30/routine/b0-816C",
    f"{T}/entity/pattern/pad-poll?as=set&rel=tm:found-in",
    f"{T}/mcp/",
]


def walk(
    space: Namespace, seeds: Iterable[str], per_mount: int = 30, skip: Iterable[str] = ("http",)
) -> Walk:
    """Read ``seeds`` and what their blocks link to as blocks (each facet too), validating every
    body, at most ``per_mount`` addresses per mount."""
    found = Walk()
    per: dict[str, int] = {}
    queue = deque(seeds)
    done: set[str] = set()
    skipped = set(skip)
    while queue:
        uri = queue.popleft()
        if uri in done or not uri.startswith("tm://"):
            continue
        done.add(uri)
        parsed = parse(uri)
        mount = parsed.mount or ""
        if mount in skipped or (mount and mount not in space.mounts):
            continue
        if per.get(mount, 0) >= per_mount:
            continue
        per[mount] = per.get(mount, 0) + 1
        body = blocks_of(space, str(blocks_uri(parsed)))
        found.reads += 1
        found.served.setdefault(body["kind"], uri)
        for block in body["blocks"]:
            if block["kind"] == "table":
                for row in block["rows"]:
                    for cell in row:
                        match = _VND.fullmatch(cell) if isinstance(cell, str) else None
                        if match:
                            found.declared.setdefault(match[1], block["from"])
        for facet in body["facets"]:
            if facet != "raw":
                target = str(parsed.with_params({"as": facet}))
                facet_body = blocks_of(space, str(blocks_uri(parse(target))))
                found.reads += 1
                found.served.setdefault(facet_body["kind"], target)
        queue.extend(h for h in _hrefs(body) if h not in done)
    return found
