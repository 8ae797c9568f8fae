"""One search, three doors: the ``search`` tool, ``GET /api/v1/search``, ``?as=search``.

Spec: SRCH1, SRCH2, SRCH3.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
from django.test import Client

from tests.namespace.conftest import process_namespace  # noqa: F401  (fixture)
from tests.namespace.world import HOST, SECRET, build_checkout
from tests.rest.test_rest_routes import Mcp, rest_ok, rest_refused
from tests.search.conftest import write_docs
from tmsite.core.uri import parse
from tmsite.mcp.protocol import RESOURCE_NOT_FOUND
from tmsite.mounts import registry
from tmsite.mounts.namespace import Namespace
from tmsite.search import engines, index

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.spec("SRCH1", "SRCH2", "SRCH3"),
]
SEARCH = "/api/v1/search"
ROOT = f"tm://{HOST}/"


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    built = build_checkout(tmp_path)
    write_docs(built)
    return built


@pytest.fixture
def indexed(process_namespace: Namespace) -> Namespace:  # noqa: F811
    index.sync(process_namespace.mounts)
    return process_namespace


@pytest.fixture
def mcp(client: Client) -> Mcp:
    return Mcp(client)


def test_the_tool_answers_as_its_schema_says_and_the_rest_twin_alike(
    indexed: Namespace, mcp: Mcp, client: Client
) -> None:
    schema = mcp.tools()["search"]["outputSchema"]
    answer = mcp.tool("search", {"query": "connecting"})
    jsonschema.validate(answer, schema)
    (first, *_) = answer["hits"]
    assert first["document"] == f"{ROOT}fs/docs/connect.md"
    assert first["uri"].startswith(f"{ROOT}fs/docs/connect.md?lines=")
    assert "«connect»" in first["snippet"] or "«Connecting»" in first["snippet"]
    assert first["mimeType"] == "text/markdown" and first["kind"] == "file"
    assert {"rel": "collection", "href": f"{ROOT}fs/docs/"} in first["links"]
    assert answer["uri"] == f"{ROOT}?as=search&q=connecting"
    assert rest_ok(client, SEARCH, {"q": "connecting"}) == answer


def test_a_hit_reads_as_its_passage(indexed: Namespace, mcp: Mcp) -> None:
    answer = mcp.tool("search", {"query": "zebra"})
    (hit,) = answer["hits"]
    read = mcp.tool("resolve", {"uri": hit["uri"]})
    assert read["text"].rstrip("\n").endswith("zebra")
    assert "«zebra»" in hit["snippet"]


def test_the_address_door_searches_below_its_collection(indexed: Namespace, mcp: Mcp) -> None:
    everywhere = mcp.tool("resolve", {"uri": f"{ROOT}?as=search&q=接続"})
    assert everywhere["mimeType"] == "application/vnd.tm.search+json"
    below = indexed.read(f"{ROOT}fs/docs/ja/?as=search&q=transport")
    assert below.body["hits"] == []
    found = indexed.read(f"{ROOT}fs/docs/ja/?as=search&q=検索")
    assert [hit["document"] for hit in found.body["hits"]] == [f"{ROOT}fs/docs/ja/connect.md"]
    assert {"rel": "collection", "href": f"{ROOT}fs/docs/ja/"} in [
        link.to_json() for link in found.links
    ]


def test_a_cursor_pages_across_doors(indexed: Namespace, mcp: Mcp, client: Client) -> None:
    first = mcp.tool("search", {"query": "connect transport bresenham zebra", "limit": 1})
    assert len(first["hits"]) == 1 and first["nextCursor"]
    second = rest_ok(
        client,
        SEARCH,
        {"q": "connect transport bresenham zebra", "limit": "1", "cursor": first["nextCursor"]},
    )
    assert second["hits"][0]["document"] != first["hits"][0]["document"]
    by_address = indexed.read(first["next"]).body
    assert by_address["hits"] == second["hits"]
    other = mcp.tool_refusal("search", {"query": "zebra", "cursor": first["nextCursor"]})
    assert other["reason"] == "bad-cursor"


def test_denied_things_are_never_hits(indexed: Namespace, mcp: Mcp) -> None:
    for words in (SECRET, "secretword", "env", "key"):
        answer = mcp.tool("search", {"query": words})
        assert SECRET not in str(answer["hits"]) and "SECRETWORD" not in str(answer["hits"])
        assert all(".env" not in hit["uri"] for hit in answer["hits"])


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ({"query": ""}, "no words"),
        ({"query": "a\x00b"}, "NUL"),
        ({"query": "x" * 300}, "longer than"),
        ({"query": "connect", "limit": 51}, "limit"),
        ({"query": "connect", "limit": 0}, "limit"),
        ({"query": "connect", "scope": f"{ROOT}fs/docs/connect.md"}, "scope"),
        ({"query": "connect", "scope": "tm://elsewhere/"}, "scope"),
        ({"query": "connect", "scope": "http://example.com/"}, "scope"),
        ({"query": "connect", "kinds": ["FS; drop"]}, "kinds"),
        ({"query": "connect", "sort": "date"}, "sort"),
        ({}, "query"),
    ],
)
def test_bad_arguments_are_refused_naming_what_is_wrong(
    indexed: Namespace, mcp: Mcp, arguments: dict[str, Any], why: str
) -> None:
    refusal = mcp.tool_refusal("search", arguments)
    assert refusal["reason"] == "bad-argument"
    assert why in refusal["error"]


@pytest.mark.parametrize(
    ("query", "why"),
    [
        ({"q": ""}, "no words"),
        ({"q": "connect", "limit": "many"}, "limit"),
        ({"q": "connect", "scope": "tm://elsewhere/"}, "scope"),
    ],
)
def test_the_rest_twin_refuses_as_the_tool_does(
    indexed: Namespace, client: Client, query: dict[str, str], why: str
) -> None:
    status, body = rest_refused(client, SEARCH, query)
    assert status == 400 and body["reason"] == "bad-argument" and why in body["error"]


@pytest.mark.parametrize(
    ("address", "why"),
    [
        (f"{ROOT}?as=search", "needs q"),
        (f"{ROOT}?as=search&q=connect&sort=date", "'sort'"),
        (f"{ROOT}?as=search&q=connect&limit=-1", "limit"),
        (f"{ROOT}?as=search&q=connect&limit=99", "limit"),
        (f"{ROOT}?as=search&q=%22%22", "no words"),
    ],
)
def test_a_bad_search_address_is_refused(
    indexed: Namespace, mcp: Mcp, address: str, why: str
) -> None:
    refusal = mcp.tool_refusal("resolve", {"uri": address})
    assert refusal["reason"] == "bad-argument" and why in refusal["error"]
    assert refusal["uri"] == str(parse(address))


def test_the_index_follows_what_the_namespace_serves(indexed: Namespace, mcp: Mcp) -> None:
    assert registry.namespace() is indexed
    assert index.status()["documents"] == {"fs": len(list(indexed.mounts["fs"].documents()))}


def test_the_explorer_search_box_draws_the_search_as_blocks(
    indexed: Namespace, client: Client
) -> None:
    page = client.get("/explore", {"q": "zebra"})
    assert page.status_code == 200
    start = f"{ROOT}?as=search&amp;q=zebra"
    assert f'data-start="{start}"' in page.content.decode()
    drawn = indexed.read(f"{ROOT}?as=blocks&of=search&q=zebra").body
    heading, hits = drawn["blocks"][:2]
    assert heading["text"] == "Search: zebra"
    (item,) = hits["items"]
    assert item["href"] == f"{ROOT}fs/docs/long.txt?lines=81-120"
    assert "«zebra»" in item["text"]


def test_search_is_not_offered_as_a_facet_that_reads_alone(indexed: Namespace, mcp: Mcp) -> None:
    for uri in (f"{ROOT}fs/docs/connect.md?as=nothing", f"{ROOT}fs/docs/?as=nothing"):
        refusal = mcp.tool_refusal("resolve", {"uri": uri})
        assert "blocks" in refusal["valid"] and "search" not in refusal["valid"]


def test_a_search_past_its_bound_is_refused_timeout_at_every_door(
    indexed: Namespace, mcp: Mcp, client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index, "BOUND_SECONDS", 0.0)
    monkeypatch.setattr(engines, "PROGRESS_STEPS", 1)
    address = f"{ROOT}?as=search&q=connect"
    refusal = mcp.tool_refusal("search", {"query": "connect"})
    assert (refusal["reason"], refusal["seconds"], refusal["uri"]) == ("timeout", 0, address)
    assert "rarer words" in refusal["error"]
    error = mcp.error("resources/read", {"uri": address})
    assert error["code"] == RESOURCE_NOT_FOUND  # this era's code for a backend that failed
    assert error["data"] == {"reason": "timeout", "uri": address, "seconds": 0}
    status, body = rest_refused(client, SEARCH, {"q": "connect"})
    assert status == 504 and body["reason"] == "timeout" and body["seconds"] == 0
    monkeypatch.undo()
    assert mcp.tool("search", {"query": "connect"})["hits"]
