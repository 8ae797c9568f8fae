"""The mcp mount against every kind of peer: koyu-mcp's protocol, the official SDK over
Streamable HTTP (stateless and with sessions), a token-gated server, and stdio peers that hang,
flood, send 100 MB or JSON nested too deep, cycle cursors, ask for sampling or exit early. Each
ends with the right record state or refusal, within its deadline, with no process left behind
(see conftest)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.mcpmount.conftest import BASE, HttpPeer, peer
from tmsite.core.errors import Gated, NotFound, Timeout, Unreachable
from tmsite.mounts.namespace import Namespace
from tmsite.servers import pool
from tmsite.servers.connect import probe_record
from tmsite.servers.index import derive, rederive
from tmsite.servers.models import MapEntry, McpServer

pytestmark = [pytest.mark.slow, pytest.mark.django_db, pytest.mark.spec("MCP")]
MIB = 1024 * 1024


def entry(server: McpServer, path: str, tool: str, arguments: dict[str, str], kind: str) -> None:
    MapEntry.objects.create(
        server=server, path_template=path, tool=tool, arguments=arguments, kind=kind
    )


# -- koyu-mcp's protocol -------------------------------------------------------------------


@pytest.fixture
def koyu(stdio_server: Callable[..., McpServer], tmp_path: Path) -> McpServer:
    (tmp_path / "two.muro").write_text("space hall L1\nspace room L1\nboundary hall room\n")
    server = stdio_server("koyu", peer("koyu_peer.py"), cwd=str(tmp_path))
    assert probe_record(server).outcome == "answered"
    return server


def test_koyu_declares_tools_only_and_derives_no_map(koyu: McpServer, ns: Namespace) -> None:
    declared = koyu.latest_declaration()
    assert declared is not None
    assert declared.capabilities == {"tools": {}}
    assert declared.protocol_version == "2025-11-25"  # echoed back, as the page says
    assert len(declared.tools) == 12
    assert declared.resources == [] and declared.prompts == []
    assert declared.listing_errors == {}
    derived, skipped = derive(declared)
    assert derived == []
    assert skipped["write_layer"] == "required argument 'content' is not identifier-like"
    assert skipped["layers"] == "its name does not start like a read of one thing"
    assert rederive(koyu).added == []
    record = ns.read(BASE + "koyu/").body["server"]
    assert record["declared"]["serverInfo"] == {"name": "koyu", "version": "0.16.0"}
    assert ns.read(BASE + "koyu/resources/").body["children"] == []
    assert len(ns.read(BASE + "koyu/tools/").body["children"]) == 12


def test_koyu_text_only_json_results_and_is_error(koyu: McpServer, ns: Namespace) -> None:
    entry(koyu, "layers/{file}", "layers", {"file": "{file}"}, "koyu-layers")
    entry(koyu, "plan/{file}/{level}", "plan_svg", {"file": "{file}", "level": "{level}"}, "plan")
    content = ns.read(BASE + "koyu/layers/two.muro")
    assert content.mime_type == "application/vnd.tm.koyu-layers+json"
    assert content.body["tool"] == "layers" and content.body["spaces"] == 2  # parsed JSON text
    plan = ns.read(BASE + "koyu/plan/two.muro/L1")
    assert plan.body["text"].startswith("<svg") and "<title>L1</title>" in plan.body["text"]
    with pytest.raises(NotFound) as refused:
        ns.read(BASE + "koyu/layers/missing.muro")
    data = refused.value.data
    assert data["reason"] == "not-found"
    assert data["nearest"] == [BASE + "koyu/map"]
    assert data["toolError"].startswith("line 0: Cannot read file: ")
    with pytest.raises(NotFound) as refused:
        ns.read(BASE + "koyu/plan/two.muro/L9")
    assert refused.value.data["toolError"] == "There is no space with a region on level L9"


# -- the official SDK over Streamable HTTP --------------------------------------------------


@pytest.mark.parametrize("which", ["sdk_stateless", "sdk_sessions"])
def test_sdk_over_http(request: pytest.FixtureRequest, ns: Namespace, which: str) -> None:
    http: HttpPeer = request.getfixturevalue(which)
    server = McpServer.objects.create(name="remote", transport="http", url=http.url())
    outcome = probe_record(server)
    assert outcome.outcome == "answered", outcome
    assert outcome.declaration is not None and len(outcome.declaration.tools) == 3
    assert rederive(server).added == ["element/{symbol}"]
    content = ns.read(BASE + "remote/element/Og")
    assert content.body["number"] == 118
    assert ns.read(BASE + "remote/").body["server"]["url"] == http.url()
    with pytest.raises(NotFound) as refused:
        ns.read(BASE + "remote/element/Zz")
    assert "Zz" in refused.value.data["toolError"]


def test_a_token_the_box_lacks_is_gated(
    sdk_token: HttpPeer, ns: Namespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ELEMENTS_TOKEN", raising=False)
    server = McpServer.objects.create(
        name="gated", transport="http", url=sdk_token.url(), token_setting="ELEMENTS_TOKEN"
    )
    outcome = probe_record(server)
    server.refresh_from_db()
    assert (outcome.outcome, server.last_outcome, server.last_failure) == (
        "gated",
        "gated",
        "token-missing",
    )
    assert server.last_asked_at is not None and server.last_answered_at is None
    record = ns.read(BASE + "gated/").body["server"]
    assert (record["outcome"], record["answered"], record["needsToken"]) == ("gated", False, True)
    with pytest.raises(Gated) as refused:
        ns.read(BASE + "gated/tools/")
    assert refused.value.data == {
        "reason": "gated",
        "uri": BASE + "gated/tools/",
        "tokenSetting": "ELEMENTS_TOKEN",
        "lastAsked": server.last_asked_at.isoformat(),
    }
    # With the token the box can read it; without it again, a map-named read is gated.
    monkeypatch.setenv("ELEMENTS_TOKEN", "s3cret-token")
    assert probe_record(server).outcome == "answered"
    rederive(server)
    assert ns.read(BASE + "gated/element/Fe").body["symbol"] == "Fe"
    monkeypatch.delenv("ELEMENTS_TOKEN")
    with pytest.raises(Gated) as refused:
        ns.read(BASE + "gated/element/Fe")
    assert refused.value.data == {
        "reason": "gated",
        "uri": BASE + "gated/element/Fe",
        "tokenSetting": "ELEMENTS_TOKEN",
    }
    # A wrong token: the server refuses it (403).
    monkeypatch.setenv("ELEMENTS_TOKEN", "wrong")
    pool.close_all()
    with pytest.raises(Gated) as refused:
        ns.read(BASE + "gated/element/Fe")
    assert refused.value.data == {
        "reason": "gated",
        "uri": BASE + "gated/element/Fe",
        "status": 403,
        "tokenSetting": "ELEMENTS_TOKEN",
        "tokenSent": True,
    }
    outcome = probe_record(server)
    assert (outcome.outcome, outcome.failure) == ("gated", "http-403")


# -- stdio peers that misbehave -------------------------------------------------------------


def test_a_server_that_hangs_at_start_is_unreachable(fault: Callable[..., McpServer]) -> None:
    server = fault("hang-start", start_timeout=1.5)
    started = time.monotonic()
    outcome = probe_record(server)
    assert time.monotonic() - started < 1.5 + 3
    server.refresh_from_db()
    assert (server.last_outcome, server.last_failure) == ("unreachable", "timeout")
    assert "start deadline of 1.5s passed" in server.last_detail
    assert server.latest_declaration() is None and outcome.declaration is None


def test_a_server_that_exits_is_unreachable(fault: Callable[..., McpServer]) -> None:
    server = fault("exit-early")
    probe_record(server)
    server.refresh_from_db()
    assert (server.last_outcome, server.last_failure) == ("unreachable", "exited")
    assert "exited with code 3" in server.last_detail


def test_a_server_that_cycles_cursors_keeps_what_it_could_declare(
    fault: Callable[..., McpServer],
) -> None:
    server = fault("cycle")
    outcome = probe_record(server)
    assert outcome.outcome == "answered"
    declared = server.latest_declaration()
    assert declared is not None and declared.tools == []
    assert "cursor cycle" in declared.listing_errors["tools"]


def _faulty(fault: Callable[..., McpServer], mode: str, **fields: float) -> McpServer:
    server = fault(mode, **fields)
    assert probe_record(server).outcome == "answered"
    entry(server, "thing", "t-first", {}, "thing")
    return server


def test_a_call_that_hangs_is_a_timeout_and_the_client_is_killed(
    fault: Callable[..., McpServer], ns: Namespace
) -> None:
    _faulty(fault, "hang-call", call_timeout=1.0)
    started = time.monotonic()
    with pytest.raises(Timeout) as refused:
        ns.read(BASE + "fault-hang-call/thing")
    assert time.monotonic() - started < 1.0 + 3
    assert refused.value.data == {
        "reason": "timeout",
        "uri": BASE + "fault-hang-call/thing",
        "seconds": 1.0,
        "deadline": "call",
    }
    assert pool.pids() == {}, "killed on fault"


def test_a_flood_of_non_json_is_unreachable(fault: Callable[..., McpServer], ns: Namespace) -> None:
    _faulty(fault, "flood")
    with pytest.raises(Unreachable) as refused:
        ns.read(BASE + "fault-flood/thing")
    assert refused.value.data == {
        "reason": "unreachable",
        "uri": BASE + "fault-flood/thing",
        "server": "fault-flood",
        "failed": "protocol",
    }
    assert pool.pids() == {}


def test_a_100_mb_answer_is_cut_at_the_cap(fault: Callable[..., McpServer], ns: Namespace) -> None:
    _faulty(fault, "huge", call_timeout=10.0)
    started = time.monotonic()
    with pytest.raises(Unreachable) as refused:
        ns.read(BASE + "fault-huge/thing")
    assert time.monotonic() - started < 10
    assert refused.value.data == {
        "reason": "unreachable",
        "uri": BASE + "fault-huge/thing",
        "server": "fault-huge",
        "failed": "too-large",
        "limit": 4 * MIB,
        "what": "message",
    }
    assert pool.pids() == {}


@pytest.mark.parametrize(
    ("levels", "what"),
    [(65, "message"), (900, "message"), (5000, "message"), (65, "text"), (5000, "text")],
)
def test_an_answer_nested_past_the_depth_cap_is_refused(
    fault: Callable[..., McpServer], ns: Namespace, levels: int, what: str
) -> None:
    # 900 levels used to be served whole; at 5000 the message was "not JSON" and the text was
    # served as a raw string. Both are now refused, by name, before anything is parsed.
    mode = f"deep-{levels}" if what == "message" else f"deep-text-{levels}"
    _faulty(fault, mode)
    with pytest.raises(Unreachable) as refused:
        ns.read(BASE + f"fault-{mode}/thing")
    assert refused.value.data == {
        "reason": "unreachable",
        "uri": BASE + f"fault-{mode}/thing",
        "server": f"fault-{mode}",
        "failed": "too-deep",
        "limit": 64,
        "what": what,
    }
    assert f"fault-{mode}" in refused.value.message  # the sentence names the server
    assert pool.pids() == {}, "dropped on fault"


def _nest(value: object) -> int:
    """How many arrays ``value`` holds, one inside the other."""
    levels = 0
    while isinstance(value, list):
        levels += 1
        value = value[0] if value else None
    return levels


@pytest.mark.parametrize(("levels", "what"), [(60, "message"), (64, "message"), (60, "text")])
def test_an_answer_within_the_depth_cap_is_served(
    fault: Callable[..., McpServer], ns: Namespace, levels: int, what: str
) -> None:
    mode = f"deep-{levels}" if what == "message" else f"deep-text-{levels}"
    _faulty(fault, mode)
    content = ns.read(BASE + f"fault-{mode}/thing")
    if what == "message":
        assert _nest(content.body["nest"]) == levels - 3  # inside message, result, structured
    else:
        assert _nest(content.body["value"]) == levels  # the text's JSON, parsed
    assert content.body["_meta"]["tinymachines.ai/provenance"]["tool"] == "t-first"


def test_requests_for_sampling_are_refused_and_said(
    fault: Callable[..., McpServer], ns: Namespace
) -> None:
    _faulty(fault, "sampling")
    content = ns.read(BASE + "fault-sampling/thing")
    prov = content.body["_meta"]["tinymachines.ai/provenance"]
    assert prov["refusedRequests"] == ["sampling/createMessage", "elicitation/create", "roots/list"]
    answers = content.body["value"]
    assert [a["error"]["code"] for a in answers] == [-32601, -32601, -32601]


def test_a_spawn_that_fails_is_unreachable(
    stdio_server: Callable[..., McpServer], ns: Namespace
) -> None:
    server = stdio_server("ghost", ["/nonexistent/program-that-is-not-there"])
    probe_record(server)
    server.refresh_from_db()
    assert (server.last_outcome, server.last_failure) == ("unreachable", "spawn")
    with pytest.raises(Unreachable) as refused:
        ns.read(BASE + "ghost/tools/")
    assert refused.value.data == {
        "reason": "unreachable",
        "uri": BASE + "ghost/tools/",
        "failed": "spawn",
        "lastAsked": server.last_asked_at.isoformat(),  # type: ignore[union-attr]
    }
