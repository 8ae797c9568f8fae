"""Every kind the namespace serves assembles into blocks that validate against the schema, and
every entry of the vocabulary is produced by at least one kind."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from tests.blocks.conftest import HOST, SEEDS, T, blocks_of, walk
from tmsite.blocks.registry import ASSEMBLERS
from tmsite.blocks.vocabulary import BLOCK_KINDS
from tmsite.core.errors import NotFound
from tmsite.core.types import Content, Request
from tmsite.core.uri import parse
from tmsite.mounts.fs.mount import FsMount
from tmsite.mounts.memory.mount import MemoryMount
from tmsite.mounts.namespace import Namespace

pytestmark = pytest.mark.spec("BLOCKS")


def test_every_kind_served_validates(space: Namespace) -> None:
    seen_kinds = walk(space, SEEDS).served
    expected = {
        "hosts",
        "mounts",
        "listing",
        "file",
        "stat",
        "links",
        "manifest",
        "renderer",
        "refusal",
        "kind",
        "log",
        "blame",
        "trail",
        "offbox",
        "pattern",
        "game",
        "set",
    }
    missing = expected - set(seen_kinds)
    assert not missing, f"kinds never reached: {sorted(missing)} (seen {sorted(seen_kinds)})"


class VersionedMount(MemoryMount):
    """A memory tree with revisions: ``?at=<name>`` reads a file as it was."""

    name = "versions"

    def __init__(self, host: str, versions: dict[str, dict[str, str]], now: dict[str, str]):
        super().__init__(host, now)
        self.versions = versions

    def read(self, req: Request) -> Content:
        at = req.facets.at
        if at is None:
            return super().read(req)
        if at not in self.versions:
            raise NotFound(req.text, f"no revision {at!r}")
        old = MemoryMount(self.host, self.versions[at])
        old.name = self.name
        plain = req.uri.with_params(at=None)
        from tmsite.core.facets import parse_facets

        content = old.read(Request(plain, parse_facets(plain)))
        content.uri = req.text
        return content


PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def test_every_vocabulary_entry_is_produced_by_some_kind(space: Namespace, tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    (checkout / "docs").mkdir(parents=True)
    (checkout / "docs" / "dot.png").write_bytes(PNG)
    (checkout / "docs" / "record.json").write_text(json.dumps({"name": "r", "tags": ["a", "b"]}))
    extra = {
        "files": FsMount(HOST, checkout, ["docs"]),
        "versions": VersionedMount(HOST, {"v1": {"a.md": "one\ntwo\n"}}, {"a.md": "one\nthree\n"}),
    }
    extra["files"].name = "files"  # type: ignore[misc]
    world = Namespace(HOST, {**space.mounts, **extra}, space.assemblers)
    produced: dict[str, str] = {}
    addresses = [
        f"{T}/files/docs/dot.png?as=blocks",  # media
        f"{T}/files/docs/record.json?as=blocks",  # heading, kv, list
        f"{T}/versions/a.md?at=v1&as=blocks",  # diff
        f"{T}/fs/docs/mcp.md?as=blocks",  # code, link
        f"{T}/fs/docs/?as=blocks",  # table
        f"{T}/fs/docs/mcpp.md?as=blocks",  # finding, question
        f"{T}/offbox/models?as=blocks",  # note
    ]
    if "git" in world.mounts:
        addresses.append(f"{T}/git/tmsite/docs/mcp.md?as=blocks&of=log")  # timeline
    if "trail" in world.mounts:
        addresses.append(f"{T}/trail/page-to-history?as=blocks")  # trail
    for uri in addresses:
        body = blocks_of(world, uri)
        for block in body["blocks"]:
            produced.setdefault(block["kind"], uri)
    assert set(produced) == set(BLOCK_KINDS), sorted(set(BLOCK_KINDS) - set(produced))
    declared = {kind for assembler in ASSEMBLERS.values() for kind in assembler.yields}
    assert declared | {"diff", "finding", "question", "link"} == set(BLOCK_KINDS)


#: One sample read per kind the walk above cannot reach here (pages need a front door, MCP
#: servers a peer): the shapes their mounts serve, assembled and validated the same way.
SAMPLES = [
    Content(f"{T}/http/site/docs/x", "text/vnd.tm.page", "The title\n\nSome text.\n", kind="page"),
    Content(f"{T}/http/site/docs/x?as=rendered", "text/html", "<h1>x</h1>", kind="rendered"),
    Content(
        f"{T}/mcp/demo/",
        "application/vnd.tm.server+json",
        {
            "uri": f"{T}/mcp/demo/",
            "server": {"name": "demo", "answered": True, "description": "A demo server."},
            "children": [{"uri": f"{T}/mcp/demo/tools/", "name": "tools/", "isCollection": True}],
        },
        kind="server",
    ),
    Content(
        f"{T}/mcp/demo/tools/echo",
        "application/vnd.tm.tool+json",
        {"name": "echo", "inputSchema": {"type": "object", "properties": {"x": {}}}},
        kind="tool",
    ),
    Content(
        f"{T}/git/tmsite/vendor/lib",
        "application/vnd.tm.submodule+json",
        {"path": "vendor/lib", "commit": "a" * 40, "pins": f"{T}/git/lib/?at={'a' * 40}"},
        kind="submodule",
    ),
    Content(f"{T}/fs/docs/a.bin", "application/octet-stream", b"\x00\x01", kind="file", size=2),
    Content(
        f"{T}/git/tmsite/docs/a.md?as=blame",
        "text/plain",
        f"{'b' * 40} (Someone 2026-11-30 1) # Title\n{'b' * 40} (Someone 2026-11-30 2) text",
        kind="blame",
    ),
]


def test_every_assembler_yields_valid_blocks_for_its_kind(space: Namespace) -> None:
    from tests.blocks.conftest import valid
    from tmsite.blocks.assemble import Context
    from tmsite.blocks.registry import find

    ctx = Context(space, parse(f"{T}/?as=blocks"))
    used = set()
    for content in SAMPLES:
        assembler = find(content)
        used.add(assembler.key)
        blocks = assembler.fn(ctx, content)
        assert blocks, content.uri
        assert {b["kind"] for b in blocks} <= set(assembler.yields), assembler.key
        valid(
            {
                "uri": content.uri,
                "source": content.uri,
                "kind": content.kind,
                "refused": False,
                "facets": [],
                "reads": [content.uri],
                "blocks": blocks,
            }
        )
    blame = find(SAMPLES[-1]).fn(ctx, SAMPLES[-1])
    code = next(b for b in blame if b["kind"] == "code")
    assert code["text"] == "# Title\ntext" and code["annotations"][0]["line"] == 1
    assert {"kind:page", "kind:blame", "type:text/html", "type:application/octet-stream"} <= used
