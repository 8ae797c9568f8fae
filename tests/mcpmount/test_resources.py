"""The mcp mount reads a server's resources: ``mcp/<server>/resources/<uri>`` is the server's
``resources/read`` answer, from real peers (the demo over stdio and over Streamable HTTP, and
``resource_peer.py`` in each of its modes), with the hostile forms refused before any server
is asked (``--log`` records every URI the peer was asked for)."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.mcpmount.conftest import BASE, DEMO, HOST, HttpPeer, peer
from tmsite.core.errors import BadArgument, BadFacet, NotFound, Timeout, TooLarge, Unreachable
from tmsite.core.types import vnd
from tmsite.core.uri import TmUri
from tmsite.mcp.convert import read_result
from tmsite.mounts.mcp.map import PROVENANCE
from tmsite.mounts.mcp.mount import McpMount
from tmsite.mounts.namespace import Namespace
from tmsite.mounts.registry import ASSEMBLERS
from tmsite.servers import pool
from tmsite.servers.connect import probe_record
from tmsite.servers.models import McpServer

pytestmark = [pytest.mark.slow, pytest.mark.django_db, pytest.mark.spec("MCP")]
MIB = 1024 * 1024


def res(server: str, upstream: str, query: str = "") -> str:
    """The tm:// address of ``upstream`` on ``server`` (one percent-encoded segment)."""
    return str(TmUri(HOST, "mcp", (server, "resources", upstream))) + query


def links(content: object) -> list[tuple[str, str, str | None]]:
    return [(lk.rel, lk.href, lk.type) for lk in content.links]  # type: ignore[attr-defined]


class Peer:
    """A ``resource_peer.py`` record and the log of what it was asked."""

    def __init__(self, record: McpServer, log: Path) -> None:
        self.record = record
        self.log = log

    @property
    def name(self) -> str:
        return self.record.name

    def asked(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []


@pytest.fixture
def resource_peer(stdio_server: Callable[..., McpServer], tmp_path: Path) -> Callable[..., Peer]:
    def make(mode: str, **fields: object) -> Peer:
        log = tmp_path / f"{mode}.log"
        values = {"start_timeout": 5.0, "call_timeout": 3.0, **fields}
        record = stdio_server(
            f"res-{mode}", peer("resource_peer.py", mode, "--log", str(log)), **values
        )
        assert probe_record(record).outcome == "answered"
        record.refresh_from_db()
        pool.close_all()  # the probe's client: each test starts from no warm peer
        return Peer(record, log)

    return make


# -- the demo server (official SDK), stdio and HTTP -------------------------------------------


@pytest.fixture
def elements(stdio_server: Callable[..., McpServer]) -> McpServer:
    server = stdio_server(
        "elements", DEMO, sources=["IUPAC standard atomic weights"], licence_basis="public domain"
    )
    assert probe_record(server).outcome == "answered"
    server.refresh_from_db()
    pool.close_all()
    return server


def test_a_declared_resource_reads_as_the_servers_content(
    ns: Namespace, elements: McpServer
) -> None:
    about = ns.read(res("elements", "elements://about"))
    assert about.mime_type == "text/plain"  # the server's mimeType
    assert about.kind == "peer-resource"
    assert isinstance(about.body, str) and "public domain" in about.body
    assert about.uri == res("elements", "elements://about")
    assert about.meta is not None
    prov = about.meta[PROVENANCE]
    assert prov["server"] == "elements" and prov["upstreamUri"] == "elements://about"
    assert prov["sources"] == ["IUPAC standard atomic weights"]
    assert prov["licenceBasis"] == "public domain"
    assert prov["declaration"] == res("elements", "elements://about", "?as=declaration")
    assert "template" not in prov and prov["readAt"]
    assert links(about) == [
        ("collection", BASE + "elements/resources/", None),
        ("describedby", res("elements", "elements://about", "?as=declaration"), vnd("resource")),
        ("describedby", res("elements", "elements://about", "?as=stat"), vnd("stat")),
        ("up", BASE + "elements/resources/", None),
    ]
    assert pool.pids().keys() == {"elements"}, "the content came from the running server"
    # resources/read on this box: the text item typed as the server typed it, provenance in _meta.
    wire = read_result(about)
    assert wire["contents"][0]["mimeType"] == "text/plain"
    assert wire["contents"][0]["text"] == about.body
    assert wire["_meta"][PROVENANCE]["upstreamUri"] == "elements://about"
    assert wire["_meta"]["tinymachines.ai/links"][1]["type"] == vnd("resource")


def test_json_content_takes_parts_and_the_declaration_stays_readable(
    ns: Namespace, elements: McpServer
) -> None:
    table = ns.read(res("elements", "elements://table"))
    assert table.mime_type == "application/json"
    assert ns.read(res("elements", "elements://table", "?pointer=/25/name")).body == "Iron"
    first = ns.read(res("elements", "elements://table", "?range=0-10"))
    assert first.body == table.body[:10] and first.size == len(table.body.encode())
    assert first.meta is not None and PROVENANCE in first.meta  # kept through the part
    pool.close_all()
    declared = ns.read(res("elements", "elements://table", "?as=declaration"))
    assert declared.mime_type == vnd("resource") and declared.kind == "resource"
    assert declared.body["uri"] == "elements://table" and declared.body["name"] == "table"
    stat = ns.read(res("elements", "elements://table", "?as=stat")).body
    assert stat["mimeType"] == "application/json" and stat["text"] is True
    assert stat["upstreamUri"] == "elements://table" and stat["server"] == "elements"
    own = ns.read(res("elements", "elements://table", "?as=links")).body["links"]
    assert {lk["rel"] for lk in own} == {"up", "collection", "describedby"}
    assert pool.pids() == {}, "declaration, stat and links never start the server"
    listing = ns.read(BASE + "elements/resources/").body["children"]
    assert [(c["name"], c.get("mimeType")) for c in listing] == [
        ("elements://about", "text/plain"),
        ("elements://table", "application/json"),
        ("elements://element/{symbol}", vnd("resource-template")),
    ]


def test_a_uri_a_declared_template_yields_reads_through_it(
    ns: Namespace, elements: McpServer
) -> None:
    iron = ns.read(res("elements", "elements://element/Fe"))
    assert iron.mime_type == "application/json"  # the template's type
    assert '"Iron"' in iron.body
    assert iron.meta is not None
    prov = iron.meta[PROVENANCE]
    assert prov["template"] == "elements://element/{symbol}"
    assert prov["arguments"] == {"symbol": "Fe"}
    template_uri = res("elements", "elements://element/{symbol}")
    assert prov["declaration"] == template_uri
    assert ("describedby", template_uri, vnd("resource-template")) in links(iron)
    # The template itself still reads as its declaration.
    template = ns.read(template_uri)
    assert template.mime_type == vnd("resource-template")
    assert template.body["uriTemplate"] == "elements://element/{symbol}"
    assert ns.read(template_uri + "?as=declaration").body == template.body
    with pytest.raises(BadFacet) as refused:
        ns.read(template_uri + "?as=raw")
    assert refused.value.data["valid"] == ["declaration", "stat"]


def test_a_template_read_the_sdk_fails_is_unreachable(ns: Namespace, elements: McpServer) -> None:
    # The official SDK answers a template function's failure as an internal error (-32603),
    # not as "no such resource": the refusal says so rather than guessing not-found.
    with pytest.raises(Unreachable) as refused:
        ns.read(res("elements", "elements://element/Zz"))
    assert refused.value.data == {
        "reason": "unreachable",
        "uri": res("elements", "elements://element/Zz"),
        "server": "elements",
        "failed": "refused",
        "code": -32603,
    }


def test_over_streamable_http(sdk_stateless: HttpPeer, ns: Namespace) -> None:
    server = McpServer.objects.create(name="remote", transport="http", url=sdk_stateless.url())
    assert probe_record(server).outcome == "answered"
    about = ns.read(res("remote", "elements://about"))
    assert about.mime_type == "text/plain" and "public domain" in about.body
    assert ns.read(res("remote", "elements://element/og")).body.count("Oganesson") == 1


# -- what the server is never asked -----------------------------------------------------------


def test_undeclared_and_hostile_uris_are_refused_before_asking(
    ns: Namespace, resource_peer: Callable[..., Peer]
) -> None:
    p = resource_peer("ok")
    for upstream in ("file:///etc/passwd", "peer://notes/README", "peer://notes/readme/x"):
        with pytest.raises(NotFound) as refused:
            ns.read(res(p.name, upstream))
        assert refused.value.data["nearest"] == [f"{BASE}{p.name}/resources/"]
    for upstream, failed in [
        ("peer://files/..", "traversal"),
        ("peer://files/%2e%2e", "traversal"),
        ("peer://tree/a/../../etc/passwd", "traversal"),
        ("peer://tree/a/%2E%2E/b", "traversal"),
        ("peer://tree/./x", "traversal"),
        ("peer://files/a%2Fb", "separator"),
        ("peer://files/a%5Cb", "separator"),
        ("peer://files/" + "x" * 300, "too-long"),
        ("peer://files/a b", "control"),
        ("peer://tree/a%0Ab", "control"),
    ]:
        with pytest.raises(BadArgument) as refused:
            ns.read(res(p.name, upstream))
        assert refused.value.data["failed"] == failed, upstream
        assert refused.value.data["argument"] == "uri"
    with pytest.raises(BadArgument) as refused:
        ns.read(res(p.name, "peer://tree/" + "a/" * 1100))
    assert refused.value.data == {
        "reason": "bad-argument",
        "uri": res(p.name, "peer://tree/" + "a/" * 1100),
        "argument": "uri",
        "failed": "too-long",
        "limit": 2048,
        "valid": [],
    }
    with pytest.raises(BadArgument) as refused:
        ns.read(res(p.name, "peer://notes/readme\x00"))
    assert refused.value.data["failed"] == "control"
    with pytest.raises(NotFound):  # more than one segment under resources/
        ns.read(f"{BASE}{p.name}/resources/peer:/notes/readme")
    assert p.asked() == [] and pool.pids() == {}, "the server was never asked"
    # …and what it declared or its templates yield is asked for, exactly.
    assert ns.read(res(p.name, "peer://tree/a/b.txt")).body == "tree a/b.txt"
    assert ns.read(res(p.name, "peer://files/notes.txt")).body == "files notes.txt"
    assert p.asked() == ["peer://tree/a/b.txt", "peer://files/notes.txt"]


def test_a_server_that_never_answered_is_not_started(
    ns: Namespace, stdio_server: Callable[..., McpServer]
) -> None:
    stdio_server("never", peer("resource_peer.py", "ok"))
    with pytest.raises(Unreachable) as refused:
        ns.read(res("never", "peer://notes/readme"))
    assert refused.value.data["failed"] == "not-asked"
    assert pool.pids() == {}


# -- what the server answers ------------------------------------------------------------------


def test_text_json_and_blob_typed_as_the_server_typed_them(
    ns: Namespace, resource_peer: Callable[..., Peer]
) -> None:
    p = resource_peer("ok")
    readme = ns.read(res(p.name, "peer://notes/readme"))
    assert (readme.mime_type, readme.body) == (
        "text/markdown",
        "# Readme\n\nHello from the peer.\n",
    )
    dot = ns.read(res(p.name, "peer://img/dot.png"))
    assert dot.mime_type == "image/png" and isinstance(dot.body, bytes)
    assert dot.body.startswith(b"\x89PNG\r\n\x1a\n")
    wire = read_result(dot)["contents"][0]
    assert base64.b64decode(wire["blob"]) == dot.body and "text" not in wire
    assert ns.read(res(p.name, "peer://img/dot.png", "?as=raw")).body == dot.body
    assert ns.read(res(p.name, "peer://data/table.json", "?pointer=/rows/2")).body == 3
    listing = {c["name"]: c for c in ns.read(f"{BASE}{p.name}/resources/").body["children"]}
    assert listing["peer://notes/readme"]["size"] == len(readme.body)
    assert listing["peer://img/dot.png"]["mimeType"] == "image/png"
    drawn = Namespace(HOST, {"mcp": McpMount(HOST)}, ASSEMBLERS)
    blocks = drawn.read(res(p.name, "peer://notes/readme", "?as=blocks")).body["blocks"]
    assert [b["kind"] for b in blocks][:5] == ["heading", "code", "heading", "kv", "link"]
    assert blocks[1]["text"] == readme.body
    facts = {row["key"]: row for row in blocks[3]["items"]}
    assert facts["declared by"]["href"] == res(p.name, "peer://notes/readme", "?as=declaration")


def test_content_past_the_read_cap_is_read_in_parts(
    ns: Namespace, resource_peer: Callable[..., Peer]
) -> None:
    p = resource_peer("ok")
    uri = res(p.name, "peer://big/text")
    with pytest.raises(TooLarge) as refused:
        ns.read(uri)
    data = refused.value.data
    assert data["cap"] == 256 * 1024 and data["size"] > 256 * 1024
    assert data["range"] == uri + "?range={start}-{end}"
    assert ns.read(uri + "?lines=2-3").body == "line of text\nline of text\n"
    assert ns.read(uri + "?range=0-4").body == "line"


def test_no_such_resource_from_the_server_is_not_found(
    ns: Namespace, resource_peer: Callable[..., Peer]
) -> None:
    p = resource_peer("ok")
    with pytest.raises(NotFound) as refused:
        ns.read(res(p.name, "peer://missing"))
    assert refused.value.data == {
        "reason": "not-found",
        "uri": res(p.name, "peer://missing"),
        "nearest": [res(p.name, "peer://missing", "?as=declaration")],
        "peerError": "Resource not found: peer://missing",
        "code": -32002,
    }
    assert pool.pids().keys() == {p.name}, "an answer, even a refusal, keeps the client"


def test_another_uri_and_the_items_own_meta_are_said(
    ns: Namespace, resource_peer: Callable[..., Peer]
) -> None:
    other = ns.read(res(resource_peer("other-uri").name, "peer://notes/readme"))
    assert other.body == "from elsewhere" and other.mime_type == "text/markdown"
    assert other.meta is not None
    assert other.meta[PROVENANCE]["contentUri"] == "peer://elsewhere"
    meta = ns.read(res(resource_peer("meta").name, "peer://notes/readme"))
    assert meta.meta is not None
    assert meta.meta[PROVENANCE]["upstreamMeta"] == {"peer.example/etag": "v7"}


@pytest.mark.parametrize(
    ("mode", "helpers"),
    [
        ("both", {"failed": "protocol"}),
        ("neither", {"failed": "protocol"}),
        ("bad-base64", {"failed": "protocol"}),
        ("bad-mime", {"failed": "protocol"}),
        ("not-list", {"failed": "protocol"}),
        ("many", {"failed": "too-large", "limit": 100, "what": "contents"}),
        ("huge", {"failed": "too-large", "limit": 4 * MIB, "what": "message"}),
    ],
)
def test_a_malformed_or_oversized_answer_is_unreachable(
    ns: Namespace, resource_peer: Callable[..., Peer], mode: str, helpers: dict[str, object]
) -> None:
    p = resource_peer(mode, call_timeout=10.0)
    started = time.monotonic()
    with pytest.raises(Unreachable) as refused:
        ns.read(res(p.name, "peer://notes/readme"))
    assert time.monotonic() - started < 10
    assert refused.value.data == {
        "reason": "unreachable",
        "uri": res(p.name, "peer://notes/readme"),
        "server": p.name,
        **helpers,
    }
    assert p.asked() == ["peer://notes/readme"]
    assert pool.pids() == {}, "a server that broke the protocol is killed"


def test_a_server_too_slow_to_answer_is_a_timeout(
    ns: Namespace, resource_peer: Callable[..., Peer]
) -> None:
    p = resource_peer("hang", call_timeout=1.0)
    started = time.monotonic()
    with pytest.raises(Timeout) as refused:
        ns.read(res(p.name, "peer://notes/readme"))
    assert time.monotonic() - started < 1.0 + 3
    assert refused.value.data == {
        "reason": "timeout",
        "uri": res(p.name, "peer://notes/readme"),
        "seconds": 1.0,
        "deadline": "call",
    }
    assert pool.pids() == {}


def test_koyu_declares_no_resources_so_none_is_asked(
    ns: Namespace, stdio_server: Callable[..., McpServer], tmp_path: Path
) -> None:
    koyu = stdio_server("koyu", peer("koyu_peer.py"), cwd=str(tmp_path))
    assert probe_record(koyu).outcome == "answered"
    pool.close_all()
    with pytest.raises(NotFound):
        ns.read(res("koyu", "koyu://anything"))
    assert pool.pids() == {}
