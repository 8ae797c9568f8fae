"""The peers' tools, resources and prompts in the search index, as they describe themselves:
only a server that answers and that the box may ask; a gated or unreachable one never.

Spec: SRCH2, MCP.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.mcpmount.conftest import BASE, DEMO, HOST, HttpPeer
from tmsite.mounts.mcp.mount import McpMount
from tmsite.mounts.namespace import Namespace
from tmsite.search import index
from tmsite.search.query import parse_query
from tmsite.servers.connect import probe_record
from tmsite.servers.models import McpServer

pytestmark = [pytest.mark.slow, pytest.mark.django_db, pytest.mark.spec("SRCH2", "MCP")]


def found(words: str, kinds: tuple[str, ...] = ()) -> list[Any]:
    index.sync({"mcp": McpMount(HOST)})
    return index.search(parse_query(words), BASE, kinds, 10)


def test_a_peers_tools_resources_and_prompts_are_found_and_their_hits_read(
    stdio_server: Callable[..., McpServer], ns: Namespace
) -> None:
    server = stdio_server("elements", DEMO)
    assert probe_record(server).outcome == "answered"
    declared = server.latest_declaration()
    assert declared is not None
    offered = {document.uri: document for document in McpMount(HOST).documents()}
    tool = next(t for t in declared.tools if t["name"] == "search_elements")
    resource = next(r for r in declared.resources if r["uri"] == "elements://about")
    prompt = declared.prompts[0]
    for item, uri, kind in [
        (tool, f"{BASE}elements/tools/search_elements", "tool"),
        (resource, f"{BASE}elements/resources/elements:%2F%2Fabout?as=declaration", "resource"),
        (prompt, f"{BASE}elements/prompts/{prompt['name']}", "prompt"),
    ]:
        assert offered[uri].kind == kind
        (hit, *_) = found(" ".join(item["description"].split()[:6]), (kind,))
        assert (hit.uri, hit.address) == (uri, uri)
        read = ns.read(hit.address)
        assert read.body == item and item["description"] in hit.body
    assert len(offered) == (
        len(declared.tools)
        + len(declared.resources)
        + len(declared.resource_templates)
        + len(declared.prompts)
    )


def test_a_server_the_box_may_no_longer_ask_is_not_offered(
    stdio_server: Callable[..., McpServer], settings: Any
) -> None:
    server = stdio_server("chemistry", DEMO)
    assert probe_record(server).outcome == "answered"
    assert found("element")
    settings.TM_STDIO_PROGRAMS = {}
    assert list(McpMount(HOST).documents()) == []
    assert found("element") == []


def test_a_gated_server_is_not_offered_whatever_it_declared_before(
    sdk_token: HttpPeer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = McpServer.objects.create(
        name="gated", transport="http", url=sdk_token.url(), token_setting="ELEMENTS_TOKEN"
    )
    monkeypatch.setenv("ELEMENTS_TOKEN", "s3cret-token")
    assert probe_record(server).outcome == "answered"
    assert any(hit.uri.startswith(f"{BASE}gated/") for hit in found("element"))
    monkeypatch.delenv("ELEMENTS_TOKEN")
    assert probe_record(server).outcome == "gated"
    assert server.latest_declaration() is not None
    assert list(McpMount(HOST).documents()) == []
    assert found("element") == []


def test_an_unreachable_server_is_not_offered(fault: Callable[..., McpServer]) -> None:
    server = fault("exit-early")
    assert probe_record(server).outcome == "unreachable"
    assert list(McpMount(HOST).documents()) == []
