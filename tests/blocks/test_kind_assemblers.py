"""Every kind the namespace serves has its own assembler, and what each one draws.

The kinds are not listed here: they come from a walk of the namespace (what reads served) and
from the media types listings declare for their children, so a kind a mount starts serving is
checked without this file changing.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.blocks.conftest import SEEDS, T, blocks_of, walk
from tmsite.blocks.assemble import SCHEMA_POINTER
from tmsite.blocks.registry import ASSEMBLERS, GENERIC, find, mount_of
from tmsite.blocks.schema import SCHEMA
from tmsite.core.uri import parse
from tmsite.mounts.namespace import Namespace

pytestmark = pytest.mark.spec("BLOCKS")

#: What is not a kind of thing but how a read went, or a file drawn by its media type.
NOT_KINDS = {"refusal", "blocks"}


def assembler_for(space: Namespace, uri: str) -> str:
    """The registry key of the assembler that draws the thing at ``uri``."""
    return find(space.read(uri)).key


def assert_own_assemblers(space: Namespace, served: dict[str, str], declared: set[str]) -> None:
    generic = f"kind:{GENERIC}"
    for kind, uri in sorted(served.items()):
        if kind in NOT_KINDS:
            continue
        key = assembler_for(space, uri)
        assert key != generic, f"{kind} (read at {uri}) falls back to the generic assembler"
        if kind != "file":  # a file is drawn by its media type (text, JSON, bytes)
            own = {f"kind:{kind}", f"mount:{mount_of(uri)}"}
            assert key in own, f"{kind} at {uri} is drawn by {key}"
    for kind in declared - NOT_KINDS:
        assert f"kind:{kind}" in ASSEMBLERS, f"a listing declares {kind}, which has no assembler"


def test_every_kind_served_has_its_own_assembler(space: Namespace) -> None:
    found = walk(space, SEEDS)
    # The walk reached the kinds of every mount this audit covers (all registered: see
    # ``space``).
    for mount, kinds in (
        ("entity", {"pattern", "game", "routine", "lesson", "set"}),
        ("offbox", {"offbox"}),
        ("kinds", {"kind"}),
        ("manifest", {"manifest"}),
        ("renderers", {"renderer"}),
    ):
        missing = kinds - set(found.served)
        assert not missing, f"{mount}: never reached {sorted(missing)}"
    assert {"game", "routine", "offbox", "renderer"} <= set(found.declared)
    assert_own_assemblers(space, found.served, set(found.declared))


@pytest.mark.slow
def test_mcp_kinds_assemble_from_a_real_server(space: Namespace, elements: str) -> None:
    thing = f"{elements}element/Fe"
    found = walk(space, [elements, thing], per_mount=40)
    served = ("server", "tool", "prompt", "resource", "resource-template", "map", "element")
    for kind in (*served, "peer-resource"):
        assert kind in found.served, f"never served {kind}: {sorted(found.served)}"
    # A resource is listed as what it reads as (the server's own type), its declaration linked.
    assert {"server", "tool", "prompt", "resource-template", "map"} <= set(found.declared)
    assert_own_assemblers(space, found.served, set(found.declared))
    assert assembler_for(space, thing) == "mount:mcp"

    # The map: one row per entry, path template → tool (followable), kind, confidence.
    body = blocks_of(space, f"{elements}map?as=blocks")
    assert body["kind"] == "map"
    table = next(b for b in body["blocks"] if b["kind"] == "table")
    assert table["from"] == f"{elements}map"
    assert table["columns"][:4] == ["path", "tool", "kind", "confidence"]
    assert [row[:4] for row in table["rows"]] == [
        [
            "element/{symbol}",
            {"text": "get_element", "href": f"{elements}tools/get_element"},
            "element",
            "exact",
        ]
    ]

    # A tool: its description as a note, its inputSchema as JSON code, equal to the declared one.
    tool_uri = f"{elements}tools/get_element"
    declared = space.read(tool_uri).body
    body = blocks_of(space, f"{tool_uri}?as=blocks")
    kinds = [b["kind"] for b in body["blocks"]]
    assert kinds[0] == "heading" and "get_element" in body["blocks"][0]["text"]
    assert {"note", "code"} <= set(kinds)
    codes = [b for b in body["blocks"] if b["kind"] == "code"]
    assert json.loads(codes[0]["text"]) == declared["inputSchema"]
    assert codes[0]["mediaType"] == "application/json" and codes[0]["from"] == tool_uri

    # A prompt: its arguments as a table.
    prompt = blocks_of(space, f"{elements}prompts/explain_element?as=blocks")
    args = next(b for b in prompt["blocks"] if b["kind"] == "table")
    assert args["columns"] == ["name", "required", "description"] and args["rows"]

    # The server: its record, what it declared (counts), its collections and map.
    server = blocks_of(space, f"{elements}?as=blocks")
    facts = {
        item["key"]: item["value"]
        for block in server["blocks"]
        if block["kind"] == "kv"
        for item in block["items"]
    }
    assert facts["outcome"] == "answered" and facts["tools"] == 3 and facts["prompts"] == 1
    listed = next(b for b in server["blocks"] if b["kind"] == "table")
    assert [row[0]["text"] for row in listed["rows"]] == [
        "prompts/",
        "resources/",
        "tools/",
        "map",
    ]

    # The mapped thing: the tool's answer, then how it was read, each address followable.
    mapped = blocks_of(space, f"{thing}?as=blocks")
    assert mapped["kind"] == "element" and mapped["source"] == thing
    read_with: dict[str, Any] = {
        item["key"]: item
        for block in mapped["blocks"]
        if block["kind"] == "kv"
        for item in block["items"]
    }
    assert read_with["tool"]["href"] == tool_uri
    assert read_with["server"]["href"] == elements
    assert read_with["map entry"] == {
        "key": "map entry",
        "value": "element/{symbol}",
        "href": f"{elements}map",
    }
    assert read_with["confidence"]["value"] == "exact"
    assert any("Fe" in json.dumps(b) for b in mapped["blocks"] if b["kind"] in {"kv", "heading"})


def _table_after(body: dict[str, Any], title: str) -> dict[str, Any]:
    blocks = body["blocks"]
    at = next(i for i, b in enumerate(blocks) if b["kind"] == "heading" and title in b["text"])
    return next(b for b in blocks[at:] if b["kind"] == "table")


def test_a_game_lists_its_routines_in_record_order_and_its_patterns_with_counts(
    space: Namespace,
) -> None:
    game = f"{T}/entity/game/72f469219b30"
    body = blocks_of(space, f"{game}?as=blocks")
    heading = body["blocks"][0]
    assert heading == {
        "kind": "heading",
        "from": game,
        "text": "game 72f469219b30 — Lantern Drift",
        "level": 1,
    }
    routines = _table_after(body, "Routines")
    listing = space.read(f"{game}/routine/").body["children"]
    assert [row[0]["text"] for row in routines["rows"]] == [c["name"] for c in listing]
    assert [row[0]["href"] for row in routines["rows"]] == [c["uri"] for c in listing]
    routine_set = f"{game}?as=set&rel=routine"
    assert routines["from"] == routine_set and routines["total"] == len(listing)
    assert routine_set in body["reads"]
    first = space.read(listing[0]["uri"]).body["fields"]
    assert routines["rows"][0][2:5] == [first["kind"], first["bank"], first["entered"]]

    patterns = _table_after(body, "Patterns it exhibits")
    counts = space.read(game).body["fields"]["patterns"]
    assert {row[0]["text"]: row[1] for row in patterns["rows"]} == counts
    assert patterns["columns"] == ["pattern", "count", "description"]
    record = next(
        item
        for b in body["blocks"]
        if b["kind"] == "kv"
        for item in b["items"]
        if item["key"] == "record"
    )
    assert record["href"] == f"{T}/fs/data/autopsy.json?pointer=/games/0"


def test_a_pattern_a_lesson_and_a_routine(space: Namespace) -> None:
    pattern = f"{T}/entity/pattern/pad-poll"
    body = blocks_of(space, f"{pattern}?as=blocks")
    note = next(b for b in body["blocks"] if b["kind"] == "note")
    assert note["text"] == space.read(pattern).body["fields"]["description"]
    games = _table_after(body, "Found in games")
    links = [lk for lk in space.read(pattern).links if lk.rel == "tm:found-in"]
    assert {row[0]["href"]: row[2] for row in games["rows"]} == {lk.href: lk.count for lk in links}
    assert games["columns"] == ["game", "name", "count"]
    instances = _table_after(body, "Routines showing it")
    assert instances["total"] == space.read(pattern).body["related"]["tm:instance"]["total"]
    assert all("pad-poll" in row[5] for row in instances["rows"])

    lesson = f"{T}/entity/lesson/jump"
    body = blocks_of(space, f"{lesson}?as=blocks")
    demonstrates = _table_after(body, "Patterns it demonstrates")
    fields = space.read(lesson).body["fields"]
    assert {row[0]["text"]: row[1] for row in demonstrates["rows"]} == fields["patterns"]
    measures = _table_after(body, "Games it measures")
    assert measures["rows"][0][0]["href"] == f"{T}/entity/game/{fields['game']}"

    routine = f"{T}/entity/game/72f469219b30/routine/b0-816C"
    body = blocks_of(space, f"{routine}?as=blocks")
    items = {i["key"]: i for b in body["blocks"] if b["kind"] == "kv" for i in b["items"]}
    assert items["game"]["href"] == f"{T}/entity/game/72f469219b30"
    assert body["blocks"][0]["text"] == "routine b0-816C — b0_routine_816C"
    assert items["kind"]["value"] == "dispatch" and items["bank"]["value"] == "prg0"
    of = _table_after(body, "Instance of patterns")
    assert [row[0]["href"] for row in of["rows"]] == [f"{T}/entity/pattern/random-byte"]


def test_an_offbox_node_names_why_it_is_not_here_and_its_scripts(space: Namespace) -> None:
    listed = space.read(f"{T}/offbox/").body["children"]
    uri = listed[0]["uri"]
    node = space.read(uri).body
    body = blocks_of(space, f"{uri}?as=blocks")
    assert body["blocks"][0]["kind"] == "heading" and node["name"] in body["blocks"][0]["text"]
    warnings = [b for b in body["blocks"] if b["kind"] == "note" and b["tone"] == "warning"]
    assert warnings and node["why"] in warnings[0]["text"]
    scripts = next(b for b in body["blocks"] if b["kind"] == "table")
    assert [(row[0]["href"], row[1]) for row in scripts["rows"]] == [
        *((href, "makes it") for href in node["generatedBy"]),
        *((href, "reads it") for href in node["inputOf"]),
    ]
    items = {i["key"]: i for b in body["blocks"] if b["kind"] == "kv" for i in b["items"]}
    assert items["exposed"]["value"] is False
    record = space.read(items["record"]["href"])  # the record part it names resolves
    assert record.body is not None


def test_the_manifest_kinds_and_renderers(space: Namespace) -> None:
    body = blocks_of(space, f"{T}/manifest?as=blocks")
    handles = _table_after(body, "Handles of each kind")
    by_kind = {row[0]: row for row in handles["rows"]}
    for key, assembler in ASSEMBLERS.items():
        name = key.split(":", 1)[1]
        if key.startswith("kind:") and name != GENERIC:
            assert by_kind[name][3] == assembler.module, name
    assert by_kind["game"][3] == "tmsite.mounts.entity.blocks"
    assert by_kind["map"][3] == "tmsite.mounts.mcp.blocks"
    assert by_kind["mount:mcp"][3] == "tmsite.mounts.mcp.blocks"
    mounts = _table_after(body, "Mounts")
    assert {row[0]["text"] for row in mounts["rows"]} == set(space.mounts)
    relations = _table_after(body, "Link relations")
    assert len(relations["rows"]) == len(space.read(f"{T}/manifest").body["relations"])

    schema = blocks_of(space, f"{T}/manifest?pointer={SCHEMA_POINTER}&as=blocks")
    code = next(b for b in schema["blocks"] if b["kind"] == "code")
    assert json.loads(code["text"]) == SCHEMA and code["mediaType"] == "application/json"

    section = blocks_of(space, f"{T}/manifest/relations?as=blocks")
    assert section["blocks"][0]["text"] == "Manifest: relations"
    assert {"Link relations", "Colour families", "Confidences"} <= {
        b["text"] for b in section["blocks"] if b["kind"] == "heading"
    }

    space.read(f"{T}/entity/pattern/pad-poll")  # counted: the kind is served now
    kind = blocks_of(space, f"{T}/kinds/pattern?as=blocks")
    served = space.read(f"{T}/kinds/pattern").body
    items = {i["key"]: i for b in kind["blocks"] if b["kind"] == "kv" for i in b["items"]}
    assert items["served"]["value"] == served["count"] >= 1
    assert items["kind"]["href"] == f"{T}/manifest/kinds?pointer=/kinds/pattern"
    media = _table_after(kind, "Media types")
    assert {row[0]: row[1] for row in media["rows"]} == served["mediaTypes"]

    renderer = f"{T}/renderers/text/markdown"
    body = blocks_of(space, f"{renderer}?as=blocks")
    facts = {i["key"]: i["value"] for b in body["blocks"] if b["kind"] == "kv" for i in b["items"]}
    assert facts == {k: v for k, v in space.read(renderer).body.items() if k != "uri"}
    assert parse(body["blocks"][0]["from"]) == parse(renderer)
