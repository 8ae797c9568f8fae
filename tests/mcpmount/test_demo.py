"""The mcp mount over the demo server (official SDK, stdio), run as a real child process."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from tests.mcpmount.conftest import BASE, DEMO
from tmsite.core.errors import BadArgument, BadFacet, NotFound, Unreachable
from tmsite.core.types import vnd
from tmsite.mounts.namespace import Namespace
from tmsite.servers import pool
from tmsite.servers.connect import probe_record
from tmsite.servers.index import rederive
from tmsite.servers.models import MapEntry, McpServer

pytestmark = [pytest.mark.slow, pytest.mark.django_db, pytest.mark.spec("MCP")]
E = BASE + "elements/"


@pytest.fixture
def elements(stdio_server: Callable[..., McpServer]) -> McpServer:
    server = stdio_server(
        "elements",
        DEMO,
        description="The chemical elements.",
        sources=["IUPAC standard atomic weights"],
        licence_basis="Facts of nature: public domain.",
    )
    outcome = probe_record(server)
    assert outcome.outcome == "answered", outcome
    rederive(server)
    server.refresh_from_db()
    return server


def links(content: object, rel: str) -> list[tuple[str, str | None]]:
    return [(lk.href, lk.confidence) for lk in content.links if lk.rel == rel]  # type: ignore[attr-defined]


def test_probe_records_what_it_declared_and_when(elements: McpServer) -> None:
    assert elements.last_outcome == "answered"
    assert elements.last_failure == ""
    assert elements.last_asked_at is not None
    assert elements.last_answered_at is not None
    declared = elements.latest_declaration()
    assert declared is not None
    assert declared.era == "discover" and declared.protocol_version == "2026-07-28"
    assert [t["name"] for t in declared.tools] == [
        "get_element",
        "search_elements",
        "list_elements",
    ]
    assert {r["uri"] for r in declared.resources} == {"elements://about", "elements://table"}
    assert [t["uriTemplate"] for t in declared.resource_templates] == [
        "elements://element/{symbol}"
    ]
    assert [p["name"] for p in declared.prompts] == ["explain_element"]
    assert declared.listing_errors == {} and declared.dropped == {}


def test_the_derived_map(elements: McpServer) -> None:
    entries = list(MapEntry.objects.filter(server=elements))
    assert [(e.path_template, e.tool, e.kind, e.confidence, e.origin) for e in entries] == [
        ("element/{symbol}", "get_element", "element", "exact", "derived")
    ]
    assert entries[0].arguments == {"symbol": "{symbol}"}


def test_reading_the_namespace_never_starts_a_peer(ns: Namespace, elements: McpServer) -> None:
    servers = ns.read(BASE)
    assert [c["name"] for c in servers.body["children"]] == ["elements/"]
    assert servers.body["children"][0]["mimeType"] == vnd("server")
    record = ns.read(E)
    assert record.mime_type == vnd("server")
    body = record.body["server"]
    assert body["answered"] is True and body["outcome"] == "answered"
    assert body["program"] and "/" not in body["program"]  # no machine path
    assert body["declared"]["serverInfo"]["name"] == "tmsite-elements"
    assert body["declared"]["instructions"].startswith("Facts about the 118")
    assert body["declared"]["capabilities"]["tools"] is not None
    assert [c["name"] for c in record.body["children"]] == [
        "prompts/",
        "resources/",
        "tools/",
        "map",
    ]
    tool = ns.read(E + "tools/get_element")
    assert tool.mime_type == "application/vnd.tm.tool+json"
    assert tool.body["name"] == "get_element"
    schema = ns.read(E + "tools/get_element?pointer=/inputSchema")
    assert schema.body["required"] == ["symbol"]
    assert schema.uri == E + "tools/get_element?pointer=/inputSchema"
    resources = ns.read(E + "resources/").body["children"]
    assert [c["name"] for c in resources] == [
        "elements://about",
        "elements://table",
        "elements://element/{symbol}",
    ]
    assert resources[0]["uri"] == E + "resources/elements:%2F%2Fabout"
    assert resources[2]["mimeType"] == vnd("resource-template")
    assert resources[0]["mimeType"] == "text/plain"  # a resource reads as its server's content
    about = ns.read(resources[0]["uri"] + "?as=declaration")
    assert about.mime_type == vnd("resource") and about.body["uri"] == "elements://about"
    prompt = ns.read(E + "prompts/explain_element")
    assert prompt.mime_type == vnd("prompt")
    the_map = ns.read(E + "map")
    assert the_map.mime_type == "application/vnd.tm.map+json"
    [entry] = the_map.body["entries"]
    assert entry["confidence"] == "exact" and entry["uriTemplate"] == E + "element/{symbol}"
    assert links(the_map, "tm:read-with") == [(E + "tools/get_element", "exact")]
    assert pool.pids() == {}, "no read above may start the server"


def test_a_map_named_path_runs_its_tool(ns: Namespace, elements: McpServer) -> None:
    content = ns.read(E + "element/Fe")
    assert content.mime_type == "application/vnd.tm.element+json"
    assert content.uri == E + "element/Fe"
    assert content.body["symbol"] == "Fe" and content.body["number"] == 26
    prov = content.body["_meta"]["tinymachines.ai/provenance"]
    assert prov["sources"] == ["IUPAC standard atomic weights"]
    assert prov["licenceBasis"] == "Facts of nature: public domain."
    assert prov["tool"] == "get_element" and prov["arguments"] == {"symbol": "Fe"}
    assert prov["confidence"] == "exact"
    assert links(content, "tm:read-with") == [(E + "tools/get_element", "exact")]
    assert links(content, "up") == [(E, None)]
    assert ns.read(E + "element/Fe?pointer=/name").body == "Iron"


def test_the_warm_client_is_reused(ns: Namespace, elements: McpServer) -> None:
    assert pool.pids() == {}
    started = time.perf_counter()
    ns.read(E + "element/He")  # starts the server and meets it
    cold = time.perf_counter() - started
    first = pool.pids()["elements"]
    started = time.perf_counter()
    for symbol in ("Fe", "Na", "O"):
        ns.read(E + f"element/{symbol}")
    warm = time.perf_counter() - started
    # Three warm reads together cost less than the one cold start measured just before.
    assert warm < cold, (warm, cold)
    assert pool.pids()["elements"] == first


def test_a_tool_error_is_not_found_with_the_tools_words(ns: Namespace, elements: McpServer) -> None:
    with pytest.raises(NotFound) as refused:
        ns.read(E + "element/Xx")
    data = refused.value.data
    assert data["reason"] == "not-found"
    assert data["uri"] == E + "element/Xx"
    assert data["nearest"] == [E + "map"]
    assert "No element has the symbol 'Xx'" in data["toolError"]
    assert pool.pids()["elements"] is not None, "a tool error keeps the client warm"


def test_tools_the_map_does_not_name_are_never_run(ns: Namespace, elements: McpServer) -> None:
    for uri in (E + "search/Fe", E + "search_elements/Fe", E + "get_element/Fe"):
        with pytest.raises(NotFound) as refused:
            ns.read(uri)
        assert refused.value.data["reason"] == "not-found"
        assert refused.value.data["uri"] == uri
    assert pool.pids() == {}


def test_arguments_are_checked_against_the_schema_before_the_call(
    ns: Namespace, elements: McpServer
) -> None:
    MapEntry.objects.create(
        server=elements,
        path_template="page/{page}",
        tool="list_elements",
        arguments={"page": "{page}"},
        kind="element-page",
        confidence="exact",
    )
    with pytest.raises(BadArgument) as refused:
        ns.read(E + "page/two")
    assert refused.value.data == {
        "reason": "bad-argument",
        "uri": E + "page/two",
        "argument": "page",
        "valid": ["integer"],
    }
    with pytest.raises(BadArgument) as refused:
        ns.read(E + "page/0")
    assert refused.value.data["argument"] == "page"
    assert refused.value.data["valid"] == ["integer"]
    assert pool.pids() == {}, "refused before any call"
    page = ns.read(E + "page/2")
    assert page.mime_type == vnd("element-page")
    assert page.body["page"] == 2 and len(page.body["elements"]) == 20
    named = links(page, "tm:read-with")
    assert (E + "tools/list_elements", "exact") in named
    assert (E + "element/Sc", "inferred") in named  # element 21, named by its symbol field
    assert len(named) == 21


def test_facets_on_a_map_named_thing(ns: Namespace, elements: McpServer) -> None:
    with pytest.raises(BadFacet) as refused:
        ns.read(E + "element/Fe?as=stat")
    assert refused.value.data["valid"] == ["links"]
    with pytest.raises(BadFacet) as refused:
        ns.read(E + "element/Fe?at=main")
    assert refused.value.data["valid"] == ["as", "lines", "pointer", "range"]


def test_completion_of_servers_tools_and_map_paths(ns: Namespace, elements: McpServer) -> None:
    t = f"tm://{ns.host}/mcp"
    assert ns.complete(t + "/{server}/", "server", "ele", {}) == ["elements"]
    assert ns.complete(t + "/{server}/tools/{tool}", "tool", "get", {"server": "elements"}) == [
        "get_element"
    ]
    assert ns.complete(t + "/{server}/{+path}", "path", "el", {"server": "elements"}) == [
        "element/"
    ]
    values = ns.complete(t + "/{server}/{+path}", "path", "element/F", {"server": "elements"})
    assert sorted(values) == ["element/F", "element/Fe", "element/Fl", "element/Fm", "element/Fr"]
    with pytest.raises(BadArgument) as refused:
        ns.complete(t + "/{server}/", "colour", "", {})
    assert refused.value.data["valid"] == ["server"]


def test_a_server_never_asked_has_a_record_and_no_declaration(
    ns: Namespace, stdio_server: Callable[..., McpServer]
) -> None:
    stdio_server("later", DEMO)
    record = ns.read(BASE + "later/")
    assert record.body["server"]["outcome"] == "never-asked"
    assert record.body["server"]["answered"] is None
    assert [c["name"] for c in record.body["children"]] == ["map"]
    with pytest.raises(Unreachable) as refused:
        ns.read(BASE + "later/tools/")
    assert refused.value.data == {
        "reason": "unreachable",
        "uri": BASE + "later/tools/",
        "failed": "not-asked",
    }
