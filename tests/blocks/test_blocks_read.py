"""?as=blocks on real addresses: shapes per kind, refusals as findings, parts, paging, facets."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tests.blocks.conftest import HOST, blocks_of
from tmsite.blocks import registry as assemblers
from tmsite.blocks.registry import AssemblerClash, assembles
from tmsite.blocks.schema import SCHEMA
from tmsite.core.errors import BadUri
from tmsite.mounts.namespace import Namespace

pytestmark = pytest.mark.spec("BLOCKS", "MANIFEST")

T = f"tm://{HOST}"


def kinds(body: dict[str, Any]) -> list[str]:
    return [block["kind"] for block in body["blocks"]]


def test_the_schema_is_a_valid_2020_12_schema_published_in_the_manifest(space: Namespace) -> None:
    Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    published = space.read(f"{T}/manifest?pointer=/blocks/schema")
    assert published.body == SCHEMA
    body = blocks_of(space, f"{T}/fs/docs/mcp.md?as=blocks")
    assert body["schema"] == f"{T}/manifest?pointer=/blocks/schema"


def test_a_markdown_file_is_code_of_its_type_with_its_links_and_reads(space: Namespace) -> None:
    body = blocks_of(space, f"{T}/fs/docs/mcp.md?as=blocks")
    assert body["source"] == f"{T}/fs/docs/mcp.md"
    assert body["kind"] == "file" and body["mimeType"] == "text/markdown"
    code = next(b for b in body["blocks"] if b["kind"] == "code")
    assert code["mediaType"] == "text/markdown" and code["text"].startswith("# MCP")
    assert code["from"] == f"{T}/fs/docs/mcp.md"
    links = {(b["rel"], b["href"]) for b in body["blocks"] if b["kind"] == "link"}
    assert ("up", f"{T}/fs/docs/") in links
    assert body["reads"][0] == f"{T}/fs/docs/mcp.md"
    assert {"raw", "stat", "links"} <= set(body["facets"])
    assert all(block["from"].startswith("tm://") for block in body["blocks"])


def test_a_part_keeps_its_address_and_numbers_its_lines(space: Namespace) -> None:
    body = blocks_of(space, f"{T}/fs/docs/mcp.md?as=blocks&lines=3-4")
    assert body["uri"] == f"{T}/fs/docs/mcp.md?as=blocks&lines=3-4"
    code = next(b for b in body["blocks"] if b["kind"] == "code")
    assert code["firstLine"] == 3 and code["from"] == f"{T}/fs/docs/mcp.md?lines=3-4"
    assert code["text"].count("\n") <= 2


def test_of_names_the_facet_and_a_listing_is_a_table(space: Namespace) -> None:
    stat = blocks_of(space, f"{T}/fs/docs/mcp.md?as=blocks&of=stat")
    assert stat["kind"] == "stat" and stat["source"] == f"{T}/fs/docs/mcp.md?as=stat"
    kv = next(b for b in stat["blocks"] if b["kind"] == "kv")
    assert {"key": "mimeType", "value": "text/markdown"} in kv["items"]
    listing = blocks_of(space, f"{T}/fs/docs/?as=blocks")
    table = next(b for b in listing["blocks"] if b["kind"] == "table")
    names = [row[0]["text"] for row in table["rows"]]
    assert "mcp.md" in names
    assert {"text": "mcp.md", "href": f"{T}/fs/docs/mcp.md"} in [row[0] for row in table["rows"]]


def test_a_long_listing_pages_through_next(space: Namespace) -> None:
    space.mounts["fs"].page_size = 3
    first = blocks_of(space, f"{T}/fs/docs/?as=blocks")
    table = next(b for b in first["blocks"] if b["kind"] == "table")
    assert len(table["rows"]) == 3 and table["next"].startswith(f"{T}/fs/docs/?cursor=")
    second = blocks_of(space, table["next"].replace("?cursor=", "?as=blocks&cursor="))
    rows = next(b for b in second["blocks"] if b["kind"] == "table")["rows"]
    assert rows and rows[0] != table["rows"][0]


@pytest.mark.parametrize(
    ("uri", "reason", "first"),
    [
        (f"{T}/fs/docs/mcpp.md", "not-found", f"{T}/fs/docs/mcp.md"),
        (f"{T}/fs/docs/mcp.md?as=blame&of=x", None, None),
        (f"{T}/fs/private/key.txt", "out-of-root", f"{T}/fs/data/"),
        (f"{T}/fsx/", "not-found", f"{T}/fs/"),
    ],
)
def test_a_refused_address_reads_as_a_finding_with_its_nearest(
    space: Namespace, uri: str, reason: str | None, first: str | None
) -> None:
    if reason is None:  # as=blocks given twice over: of= must not name blocks itself
        body = blocks_of(space, f"{T}/fs/docs/mcp.md?as=blocks&of=blocks")
        assert body["refused"] and kinds(body)[:2] == ["heading", "finding"]
        assert body["blocks"][1]["reason"] == "bad-facet"
        return
    body = blocks_of(space, uri + "?as=blocks")
    assert body["refused"] is True and body["kind"] == "refusal"
    finding = next(b for b in body["blocks"] if b["kind"] == "finding")
    assert finding["reason"] == reason and finding["data"]["reason"] == reason
    question = next(b for b in body["blocks"] if b["kind"] == "question")
    hrefs = [option["href"] for option in question["options"]]
    assert first in hrefs and uri not in hrefs


def test_a_bad_facet_offers_the_valid_ones_as_choices(space: Namespace) -> None:
    body = blocks_of(space, f"{T}/fs/docs/mcp.md?as=blocks&of=tree")
    question = next(b for b in body["blocks"] if b["kind"] == "question")
    assert f"{T}/fs/docs/mcp.md?as=stat" in [o["href"] for o in question["options"]]


def test_only_an_unparsable_uri_is_still_refused(space: Namespace) -> None:
    with pytest.raises(BadUri):
        space.read("http://elsewhere/?as=blocks")


def test_the_root_and_the_hosts_are_tables_of_what_they_hold(space: Namespace) -> None:
    root = blocks_of(space, f"{T}/?as=blocks")
    table = next(b for b in root["blocks"] if b["kind"] == "table")
    assert table["columns"] == ["name", "what"]
    mounts = {row[0]["text"] for row in table["rows"]}
    assert {"fs/", "kinds/", "renderers/"} <= mounts
    hosts = blocks_of(space, "tm://?as=blocks")
    assert hosts["source"] == "tm://"


def test_links_read_as_a_table_and_a_trail_as_a_trail(space: Namespace) -> None:
    links = blocks_of(space, f"{T}/fs/docs/mcp.md?as=blocks&of=links")
    assert links["kind"] == "links"
    table = next(b for b in links["blocks"] if b["kind"] == "table")
    assert table["columns"][0] == "rel" and table["total"] >= 3
    trail = blocks_of(space, f"{T}/trail/page-to-history?as=blocks")
    drawn = next(b for b in trail["blocks"] if b["kind"] == "trail")
    assert drawn["steps"][0]["n"] == 1 and drawn["steps"][0]["href"].startswith("tm://")


def test_a_git_log_is_a_timeline_and_blame_is_annotated_code(space: Namespace) -> None:
    md = space.read(f"{T}/fs/docs/mcp.md")
    history = [link.href for link in md.links if link.rel == "version-history"]
    assert history, "an fs file links version-history to its log in git"
    log = blocks_of(space, history[0].replace("?as=log", "?as=blocks&of=log"))
    timeline = next(b for b in log["blocks"] if b["kind"] == "timeline")
    assert timeline["events"] and all(e["href"].startswith("tm://") for e in timeline["events"])
    assert "?at=" in timeline["events"][0]["href"]
    blame_uri = history[0].replace("?as=log", "?as=blocks&of=blame&lines=2-4")
    blame = blocks_of(space, blame_uri)
    code = next(b for b in blame["blocks"] if b["kind"] == "code")
    assert code["firstLine"] == 2 and code["annotations"][0]["line"] == 2
    assert "at=" in code["annotations"][0]["href"]


def test_a_read_at_a_revision_carries_a_diff_against_now(space: Namespace) -> None:
    log = space.read(f"{T}/git/tmsite/docs/mcp.md?as=log").body
    oldest = log["commits"][-1]["commit"]
    body = blocks_of(space, f"{T}/git/tmsite/docs/mcp.md?at={oldest}&as=blocks")
    assert f"{T}/git/tmsite/docs/mcp.md" in body["reads"]  # now, read to compare
    assert {"diff", "note"} & set(kinds(body))


def test_an_assembler_clash_is_a_loud_error() -> None:
    def other(ctx: Any, content: Any) -> list[Any]:
        return []

    with pytest.raises(AssemblerClash, match="kind:log"):
        assembles(kinds=("log",), yields=("timeline",))(other)
    assert assemblers.ASSEMBLERS["kind:log"].fn is not other


def test_long_code_is_cut_with_the_way_to_read_on(space: Namespace, tmp_path: Any) -> None:
    from tmsite.mounts.fs.mount import FsMount

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "big.txt").write_text("".join(f"line {n}\n" for n in range(1, 20001)))
    space.mounts["fs"] = fs = FsMount(HOST, tmp_path, ["docs"])
    fs.attach(space)
    body = blocks_of(space, f"{T}/fs/docs/big.txt?as=blocks&range=0-200000")
    code = next(b for b in body["blocks"] if b["kind"] == "code")
    assert code["text"].startswith("line 1\n") and len(code["text"]) < 100_000
    question = next(b for b in body["blocks"] if b["kind"] == "question")
    assert "lines=1501-3000" in question["options"][0]["href"]
