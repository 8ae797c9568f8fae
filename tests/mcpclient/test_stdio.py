"""The client over stdio, against the demo server, a koyu-mcp stand-in and faulty peers."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.peers.processes import PYTHON, ROOT, gone, peer
from tmsite.mcpclient import (
    Client,
    Limits,
    PeerError,
    ProtocolError,
    Timeout,
    TooDeep,
    TooLarge,
    ToolResult,
    Unreachable,
    probe,
    stdio,
)

pytestmark = [pytest.mark.slow, pytest.mark.spec("MCP")]

DEMO = [PYTHON, "-m", "tmsite.demo.mcp_server"]
MIB = 1024 * 1024


# -- the demo server (official SDK) ---------------------------------------------------------


def test_demo_server_discover_era() -> None:
    with Client.stdio(DEMO, cwd=ROOT) as client:
        hs = client.handshake()
        assert hs.era == "discover"
        assert hs.protocol_version == "2026-07-28"
        assert hs.supported_versions == ("2026-07-28",)
        assert hs.server_info["name"] == "tmsite-elements"
        assert set(hs.capabilities) >= {"tools", "resources", "prompts", "completions"}
        assert hs.instructions and "get_element" in hs.instructions

        result = probe(client)
        assert result.errors == {}
        assert [t["name"] for t in result.tools] == [
            "get_element",
            "search_elements",
            "list_elements",
        ]
        for tool in result.tools:
            assert tool["inputSchema"]["type"] == "object"
            assert tool["outputSchema"]["type"] == "object"
        assert [r["uri"] for r in result.resources] == ["elements://about", "elements://table"]
        assert [t["uriTemplate"] for t in result.resource_templates] == [
            "elements://element/{symbol}"
        ]
        assert [p["name"] for p in result.prompts] == ["explain_element"]

        iron = client.call_tool("get_element", {"symbol": "fe"})
        assert not iron.is_error
        assert iron.structured == {
            "number": 26,
            "symbol": "Fe",
            "name": "Iron",
            "atomic_mass": 55.845,
            "mass_basis": "standard-atomic-weight",
            "group": 8,
            "period": 4,
            "block": "d",
        }
        assert iron.data() == iron.structured

        unknown = client.call_tool("get_element", {"symbol": "Xx"})
        assert unknown.is_error and unknown.structured is None
        assert "No element has the symbol 'Xx'" in unknown.text

        last = client.call_tool("list_elements", {"page": 6})
        assert last.structured is not None
        assert [e["symbol"] for e in last.structured["elements"]][-1] == "Og"
        assert client.call_tool("list_elements", {"page": 7}).is_error

        found = client.call_tool("search_elements", {"query": "gen"}).structured
        assert found is not None
        assert [e["symbol"] for e in found["matches"]] == ["H", "N", "O", "Rg"]

        [og] = client.read_resource("elements://element/og")
        assert json.loads(og["text"])["name"] == "Oganesson"
        table = json.loads(client.read_resource("elements://table")[0]["text"])
        assert len(table) == 118

        done = client.complete(
            {"type": "ref/resource", "uri": "elements://element/{symbol}"},
            {"name": "symbol", "value": "C"},
        )
        assert done.values[:3] == ["C", "Cl", "Ca"] and done.total == 12 and not done.has_more
        pid = client.pid
    assert pid is not None and gone(pid)
    assert not client.forced_shutdown


def test_demo_server_initialize_era() -> None:
    with Client.stdio(DEMO, cwd=ROOT, mode="initialize") as client:
        hs = client.handshake()
        assert (hs.era, hs.protocol_version) == ("initialize", "2025-11-25")
        assert client.call_tool("get_element", {"symbol": "He"}).structured["number"] == 2  # type: ignore[index]
        pid = client.pid
    assert pid is not None and gone(pid)


# -- koyu-mcp as its protocol page documents it ---------------------------------------------

KOYU = peer("koyu_peer.py")
TWO_ROOMS = "space hall L1\nspace kitchen L1\nspace study L2\nboundary hall kitchen\n"


@pytest.fixture
def koyu(tmp_path: Path) -> Client:
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "two-rooms.muro").write_text(TWO_ROOMS)
    (tmp_path / "bad.muro").write_text("space a L1\n\n\n\n\n\n\nregion L1 0\n")
    return Client.stdio(KOYU, cwd=tmp_path)


def test_koyu_handshake_is_tolerated(koyu: Client) -> None:
    with koyu:
        hs = koyu.handshake()
        assert hs.era == "initialize"
        assert hs.protocol_version == "2025-11-25"  # echoed as sent
        assert hs.capabilities == {"tools": {}}
        assert hs.server_info == {"name": "koyu", "version": "0.16.0"}
        assert hs.instructions is not None and hs.instructions.startswith("Server for koyu")
        result = probe(koyu)
        # resources/list and prompts/list answer empty without the capability; templates are
        # -32601 and undeclared, read as empty.
        assert result.errors == {}
        assert result.resources == [] and result.prompts == [] and result.resource_templates == []
        assert [t["name"] for t in result.tools] == [
            "model_summary",
            "check",
            "layers",
            "write_layer",
            "new_uids",
            "doors",
            "spaces",
            "light",
            "validate",
            "site",
            "plan_svg",
            "canonical_json",
        ]
        required = {t["name"]: t["inputSchema"]["required"] for t in result.tools}
        assert required["write_layer"] == ["file", "layer", "content"]
        assert required["doors"] == ["file", "from", "to"]
        assert required["plan_svg"] == ["file", "level"]
        assert required["new_uids"] == ["file"] and required["spaces"] == ["file"]
        pid = koyu.pid
    assert pid is not None and gone(pid)


def test_koyu_text_results_carry_json(koyu: Client, tmp_path: Path) -> None:
    with koyu:
        check = koyu.call_tool("check", {"file": "examples/two-rooms.muro"})
        assert not check.is_error and check.structured is None
        assert check.content == [{"type": "text", "text": check.text}]
        assert check.text.startswith('{\n "ok": true,\n "spaces": 3,')  # JSON.stringify(v, null, 1)
        assert check.data() == {
            "ok": True,
            "spaces": 3,
            "boundaries": 1,
            "errors": [],
            "warnings": [],
            "diagnostics": [],
        }
        svg = koyu.call_tool("plan_svg", {"file": "examples/two-rooms.muro", "level": "L2"})
        assert svg.text.startswith("<svg") and svg.data() is None


def test_koyu_tool_failures_are_is_error(koyu: Client, tmp_path: Path) -> None:
    with koyu:
        missing = koyu.call_tool("doors", {"file": "examples/two-rooms.muro", "from": "hall"})
        assert (missing.is_error, missing.text) == (True, "to (a string) is required")
        no_args = koyu.call_tool("check")
        assert (no_args.is_error, no_args.text) == (True, "file (a string) is required")
        unreadable = koyu.call_tool("check", {"file": "examples/nowhere.muro"})
        assert unreadable.is_error
        assert unreadable.text == f"line 0: Cannot read file: {tmp_path}/examples/nowhere.muro"
        broken = koyu.call_tool("layers", {"file": "bad.muro"})
        assert broken.text == f"{tmp_path}/bad.muro:line 8: The region has zero width"
        level = koyu.call_tool("spaces", {"file": "examples/two-rooms.muro", "level": "L9"})
        assert level.text == "There is no space with a region on level L9"


def test_koyu_protocol_errors_are_peer_errors(koyu: Client) -> None:
    with koyu:
        with pytest.raises(PeerError) as unknown:
            koyu.call_tool("blueprint", {})
        assert (unknown.value.code, unknown.value.message) == (-32602, "Unknown tool: blueprint")
        assert unknown.value.method == "tools/call" and unknown.value.status is None
        with pytest.raises(PeerError) as read:
            koyu.read_resource("koyu://anything")
        assert (read.value.code, read.value.message) == (
            -32601,
            "Unsupported method: resources/read",
        )
        with pytest.raises(PeerError) as complete:
            koyu.complete({"type": "ref/prompt", "name": "x"}, {"name": "a", "value": ""})
        assert complete.value.code == -32601
        # A peer error leaves the connection usable.
        assert not koyu.call_tool("check", {"file": "examples/two-rooms.muro"}).is_error


def test_koyu_peer_framing_matches_the_seed() -> None:
    """The stand-in itself: blank lines skipped, broken lines dropped, notifications and
    responses ignored, no initialize needed, exit 0 at EOF, nothing but JSON-RPC on stdout."""
    lines = [
        "",
        "{broken",
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
        '{"jsonrpc":"2.0","id":99,"result":{}}',
        '{"jsonrpc":"2.0","id":1,"method":"ping"}',
        '{"jsonrpc":"2.0","id":2,"method":"initialize","params":{}}',
        '{"jsonrpc":"2.0","id":3,"method":"completion/complete"}',
        "   ",
    ]
    done = subprocess.run(
        KOYU, input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=20, check=False
    )
    assert done.returncode == 0
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert replies[0] == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert replies[1]["result"]["protocolVersion"] == "2025-06-18"
    assert replies[2]["error"] == {
        "code": -32601,
        "message": "Unsupported method: completion/complete",
    }
    assert len(replies) == 3


# -- the environment and the argument list --------------------------------------------------


def test_environment_is_allow_listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TM_SECRET_FOR_TEST", "must-not-leak")
    monkeypatch.setenv("LANG", "C.UTF-8")
    with Client.stdio(
        peer("fault_peer.py", "echo-env"),
        cwd=tmp_path,
        env_allow=("PATH", "LANG"),
        env={"KOYU_HOME": "/srv/koyu"},
    ) as client:
        seen = client.call_tool("t", {}).data()
    env = seen["env"]
    assert "TM_SECRET_FOR_TEST" not in env
    assert env["KOYU_HOME"] == "/srv/koyu" and env["LANG"] == "C.UTF-8"
    assert set(env) - {"PATH", "LANG", "KOYU_HOME", "LC_CTYPE"} == set()
    assert os.path.realpath(seen["cwd"]) == os.path.realpath(tmp_path)


def test_argv_must_be_a_list() -> None:
    with pytest.raises(ValueError, match="list of strings"):
        Client.stdio("python -m tmsite.demo.mcp_server")
    with pytest.raises(ValueError, match="list of strings"):
        Client.stdio([])
    with pytest.raises(ValueError, match="NUL"):
        Client.stdio(["python", "a\0b"])


def test_missing_program_is_unreachable(tmp_path: Path) -> None:
    with pytest.raises(Unreachable) as missing:
        Client.stdio([str(tmp_path / "no-such-server")]).handshake()
    assert missing.value.what == "spawn" and "no-such-server" in missing.value.detail
    assert missing.value.exit_code is None and missing.value.status is None
    with pytest.raises(Unreachable) as bad_cwd:
        Client.stdio(KOYU, cwd=tmp_path / "no-such-dir").handshake()
    assert bad_cwd.value.what == "spawn"


def test_server_that_exits_is_unreachable_with_its_stderr() -> None:
    client = Client.stdio(peer("fault_peer.py", "exit-early"))
    with pytest.raises(Unreachable) as exited:
        client.handshake()
    assert exited.value.what == "exited" and exited.value.exit_code == 3
    assert "fatal: no configuration found" in exited.value.detail
    assert client.pid is not None and gone(client.pid)
    with pytest.raises(Unreachable) as after:
        client.list_tools()
    assert after.value.what == "closed"


# -- deadlines and kills --------------------------------------------------------------------


def test_hang_at_start_kills_the_whole_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    client = Client.stdio(
        peer("fault_peer.py", "hang-start", "--pidfile", str(pidfile)), start_timeout=1.5
    )
    started = time.monotonic()
    with pytest.raises(Timeout) as hung:
        client.handshake()
    elapsed = time.monotonic() - started
    assert (hung.value.deadline, hung.value.seconds, hung.value.method) == (
        "start",
        1.5,
        "server/discover",
    )
    assert 1.5 <= elapsed < 4.0
    assert client.pid is not None and gone(client.pid)
    assert gone(int(pidfile.read_text())), "the server's own child outlived it"
    client.close()


def test_hang_mid_call_times_out_and_kills() -> None:
    client = Client.stdio(peer("fault_peer.py", "hang-call"), call_timeout=1.0)
    with client:
        assert client.handshake().server_info["name"] == "fault-hang-call"
        assert [t["name"] for t in client.list_tools()] == ["t-first"]
        started = time.monotonic()
        with pytest.raises(Timeout) as hung:
            client.call_tool("slow", {})
        assert (hung.value.deadline, hung.value.seconds, hung.value.method) == (
            "call",
            1.0,
            "tools/call",
        )
        assert time.monotonic() - started < 3.0
        assert client.pid is not None and gone(client.pid)
        with pytest.raises(Unreachable) as closed:
            client.list_tools()
        assert closed.value.what == "closed" and "deadline" in closed.value.detail


def test_server_ignoring_eof_is_killed_at_the_shutdown_deadline() -> None:
    client = Client.stdio(peer("fault_peer.py", "ignore-eof"), shutdown_timeout=1.0)
    with client:
        client.list_tools()
        started = time.monotonic()
    first_close = time.monotonic() - started
    started = time.monotonic()
    client.close()  # idempotent
    second_close = time.monotonic() - started
    assert client.forced_shutdown
    assert client.pid is not None and gone(client.pid)
    # The peer ignores SIGTERM too: closing waits the deadline, then the grace after SIGTERM.
    assert first_close >= 1.0 + stdio._KILL_GRACE, "killed before the shutdown deadline"
    # Closing again does nothing: a small fraction of the first close, which waited out the
    # deadline, measured just before on the same machine.
    assert second_close < first_close / 10, (second_close, first_close)


# -- what must not pass ----------------------------------------------------------------------


def test_stdout_noise_is_a_protocol_error() -> None:
    client = Client.stdio(peer("fault_peer.py", "flood"))
    with client:
        with pytest.raises(ProtocolError) as noise:
            client.call_tool("t", {})
        assert noise.value.what == "stdout carried a line that is not JSON-RPC"
        assert noise.value.excerpt == "debug: still thinking about it"
        assert client.pid is not None and gone(client.pid)


def test_a_100_mb_response_is_too_large() -> None:
    client = Client.stdio(peer("fault_peer.py", "huge"))
    with client:
        started = time.monotonic()
        with pytest.raises(TooLarge) as huge:
            client.call_tool("t", {})
        assert time.monotonic() - started < 5.0
        assert (huge.value.what, huge.value.limit) == ("message", 4 * MIB)
        assert huge.value.seen > 4 * MIB
        assert client.pid is not None and gone(client.pid)


def test_a_smaller_cap_is_honoured() -> None:
    with Client.stdio(DEMO, cwd=ROOT, limits=Limits(max_message_bytes=2048)) as client:
        with pytest.raises(TooLarge) as big:
            client.read_resource("elements://table")
        assert (big.value.what, big.value.limit) == ("message", 2048)


def _nest(value: object) -> int:
    levels = 0
    while isinstance(value, list):
        levels += 1
        value = value[0] if value else None
    return levels


@pytest.mark.parametrize("levels", [65, 900, 5000])
def test_a_message_nested_past_the_depth_cap_is_refused(levels: int) -> None:
    client = Client.stdio(peer("fault_peer.py", f"deep-{levels}"))
    with client:
        with pytest.raises(TooDeep) as deep:
            client.call_tool("t", {})
        assert (deep.value.part, deep.value.limit) == ("message", 64)
        assert deep.value.what == "message nested deeper than 64 levels"
        assert isinstance(deep.value, ProtocolError)
        assert client.pid is not None and gone(client.pid)


@pytest.mark.parametrize("levels", [60, 64])
def test_a_message_within_the_depth_cap_is_accepted(levels: int) -> None:
    with Client.stdio(peer("fault_peer.py", f"deep-{levels}")) as client:
        answer = client.call_tool("t", {})
    assert answer.structured is not None
    assert _nest(answer.structured["nest"]) == levels - 3
    assert answer.data() is answer.structured


@pytest.mark.parametrize("levels", [65, 5000])
def test_json_text_nested_past_the_depth_cap_is_refused(levels: int) -> None:
    # At 5000 levels this text used to fail to parse and come back as plain text.
    with Client.stdio(peer("fault_peer.py", f"deep-text-{levels}")) as client:
        with pytest.raises(TooDeep) as deep:
            client.call_tool("t", {})
        assert (deep.value.part, deep.value.limit) == ("text", 64)
        assert deep.value.what == "text nested deeper than 64 levels"


def test_json_text_within_the_depth_cap_is_data() -> None:
    with Client.stdio(peer("fault_peer.py", "deep-text-60")) as client:
        answer = client.call_tool("t", {})
    assert _nest(answer.data()) == 60


def test_a_smaller_depth_cap_is_honoured() -> None:
    with Client.stdio(peer("fault_peer.py", "deep-12"), limits=Limits(max_depth=11)) as client:
        with pytest.raises(TooDeep) as deep:
            client.call_tool("t", {})
        assert (deep.value.part, deep.value.limit) == ("message", 11)
    with Client.stdio(peer("fault_peer.py", "deep-12"), limits=Limits(max_depth=12)) as client:
        assert _nest(client.call_tool("t", {}).data()["nest"]) == 9


def test_tool_result_data_holds_its_text_to_the_depth_cap() -> None:
    def text(body: str) -> ToolResult:
        return ToolResult([{"type": "text", "text": body}], None, False)

    with pytest.raises(TooDeep) as deep:
        text("[" * 65 + "]" * 65).data()
    assert (deep.value.part, deep.value.limit) == ("text", 64)
    assert _nest(text("[" * 64 + "]" * 64).data()) == 64
    assert text('["' + "[" * 100 + '"]').data() == ["[" * 100]  # brackets in a string: data
    assert text("not [json]").data() is None


def test_a_tool_failure_is_not_held_to_the_depth_cap() -> None:
    # Its words are read as text (the mount's toolError), never parsed as data.
    with Client.stdio(peer("fault_peer.py", "deep-failure-5000")) as client:
        answer = client.call_tool("t", {})
    assert answer.is_error and answer.text == "[" * 5000 + "]" * 5000


def test_cursor_cycle_is_detected() -> None:
    with Client.stdio(peer("fault_peer.py", "cycle")) as client:
        with pytest.raises(ProtocolError) as cycle:
            client.list_tools()
        assert cycle.value.what == "tools/list: cursor cycle (a cursor came back after 3 pages)"
        assert cycle.value.excerpt == "a"


def test_endless_pages_stop_at_the_page_cap() -> None:
    with Client.stdio(peer("fault_peer.py", "endless"), limits=Limits(max_pages=20)) as client:
        with pytest.raises(TooLarge) as pages:
            client.list_tools()
        assert (pages.value.what, pages.value.limit, pages.value.seen) == ("pages", 20, 21)


def test_too_many_items_stop_at_the_item_cap() -> None:
    with Client.stdio(peer("fault_peer.py", "many")) as client:
        with pytest.raises(TooLarge) as items:
            client.list_tools()
        assert (items.value.what, items.value.limit, items.value.seen) == ("items", 10_000, 10_500)


def test_server_requests_are_refused_never_acted_on() -> None:
    with Client.stdio(peer("fault_peer.py", "sampling")) as client:
        answers = client.call_tool("t", {}).data()
        assert client.refused_requests == [
            "sampling/createMessage",
            "elicitation/create",
            "roots/list",
        ]
    assert [a["id"] for a in answers] == ["srv-0", "srv-1", "srv-2"]
    for answer, method in zip(answers, client.refused_requests, strict=True):
        assert "result" not in answer
        assert answer["error"] == {
            "code": -32601,
            "message": f"Method not found: this client does not offer {method}",
        }


def test_response_to_an_id_never_sent() -> None:
    client = Client.stdio(peer("fault_peer.py", "stray-id"))
    with client:
        with pytest.raises(ProtocolError) as stray:
            client.call_tool("t", {})
        assert stray.value.what == "response to an id never sent (9999; waiting for 3)"
        assert client.pid is not None and gone(client.pid)


def test_json_that_is_not_json_rpc() -> None:
    with Client.stdio(peer("fault_peer.py", "not-jsonrpc")) as client:
        with pytest.raises(ProtocolError) as odd:
            client.call_tool("t", {})
        assert odd.value.what == 'a message must carry "jsonrpc": "2.0"'


def test_stderr_is_drained_and_its_log_capped(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="tmsite.mcpclient.stdio")
    with Client.stdio(peer("fault_peer.py", "stderr-flood"), call_timeout=10) as client:
        assert client.call_tool("t", {}).text == "ok"
        pid = client.pid
    assert pid is not None and gone(pid)
    logged = [r for r in caplog.records if "stderr" in r.getMessage()]
    assert any("log cap reached" in r.getMessage() for r in logged)
    assert sum(len(r.getMessage()) for r in logged) < 2 * 64 * 1024


def test_refused_handshake_leaves_no_process() -> None:
    client = Client.stdio(peer("fault_peer.py", "refuse-init"))
    with pytest.raises(PeerError) as refused, client:
        pass
    assert (refused.value.code, refused.value.message, refused.value.method) == (
        -32602,
        "Unsupported protocol version",
        "initialize",
    )
    assert refused.value.data == {"supported": ["1999-01-01"]}
    assert client.pid is not None and gone(client.pid)
