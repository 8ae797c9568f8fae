"""The client over Streamable HTTP: the official SDK server as a real uvicorn process (stateless
and with sessions, event streams and JSON), a token-gated server, and a hand-written server
with faults."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.peers.processes import HttpPeer
from tmsite.mcpclient import (
    Client,
    Gated,
    PeerError,
    ProtocolError,
    Timeout,
    TooDeep,
    TooLarge,
    Unreachable,
    probe,
)

pytestmark = [pytest.mark.slow, pytest.mark.spec("MCP")]
MIB = 1024 * 1024


def _exercise(client: Client) -> None:
    result = probe(client)
    assert result.errors == {}
    assert [t["name"] for t in result.tools] == ["get_element", "search_elements", "list_elements"]
    assert [t["uriTemplate"] for t in result.resource_templates] == ["elements://element/{symbol}"]
    iron = client.call_tool("get_element", {"symbol": "Fe"})
    assert iron.structured is not None and iron.structured["name"] == "Iron"
    assert client.call_tool("get_element", {"symbol": "Zz"}).is_error
    [about] = client.read_resource("elements://about")
    assert about["mimeType"] == "text/plain" and "public domain" in about["text"]
    done = client.complete(
        {"type": "ref/resource", "uri": "elements://element/{symbol}"},
        {"name": "symbol", "value": "O"},
    )
    assert done.values == ["O", "Os", "Og"]


@pytest.mark.parametrize("mode", ["auto", "initialize"])
def test_sdk_stateless(sdk_stateless: HttpPeer, mode: str) -> None:
    with Client.http(sdk_stateless.url(), timeout=10, mode=mode) as client:  # type: ignore[arg-type]
        hs = client.handshake()
        if mode == "auto":
            assert (hs.era, hs.protocol_version) == ("discover", "2026-07-28")
            assert hs.server_info["name"] == "tmsite-elements"
        else:
            assert (hs.era, hs.protocol_version) == ("initialize", "2025-11-25")
        assert hs.session is False
        _exercise(client)


def test_sdk_with_sessions(sdk_sessions: HttpPeer) -> None:
    with Client.http(sdk_sessions.url(), timeout=10, mode="initialize") as client:
        hs = client.handshake()
        assert (hs.era, hs.session) == ("initialize", True)
        sid = client.session_id
        assert sid is not None
        _exercise(client)
    assert client.session_id is None
    # The session was released with DELETE: the same id is no longer accepted.
    stale = httpx.post(
        sdk_sessions.url(),
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={
            "Mcp-Session-Id": sid,
            "MCP-Protocol-Version": "2025-11-25",
            "Accept": "application/json, text/event-stream",
        },
        timeout=5,
    )
    assert stale.status_code == 404
    with Client.http(sdk_sessions.url(), timeout=10) as modern:
        assert modern.handshake().era == "discover"
        _exercise(modern)


def test_token_missing_is_gated_before_any_request() -> None:
    client = Client.http("http://127.0.0.1:9/mcp", token_required=True)
    with pytest.raises(Gated) as gated:
        client.handshake()
    assert (gated.value.status, gated.value.token_sent, gated.value.challenge) == (
        None,
        False,
        None,
    )


def test_token_gated_server(sdk_token: HttpPeer) -> None:
    with pytest.raises(Gated) as none:
        Client.http(sdk_token.url(), timeout=10).handshake()
    assert (none.value.status, none.value.token_sent) == (401, False)
    assert none.value.challenge == 'Bearer realm="elements"'
    with pytest.raises(Gated) as wrong:
        Client.http(sdk_token.url(), token="guess", timeout=10).handshake()
    assert (wrong.value.status, wrong.value.token_sent) == (403, True)
    with Client.http(sdk_token.url(), token="s3cret-token", timeout=10) as client:
        assert client.handshake().era == "discover"
        _exercise(client)


def test_connection_refused_is_unreachable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(Unreachable) as refused:
        Client.http(f"http://127.0.0.1:{port}/mcp", timeout=5).handshake()
    assert refused.value.what == "connect" and refused.value.status is None


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback socket that accepts connections and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield sock.getsockname()[1]


def test_silent_server_times_out(silent_port: int) -> None:
    started = time.monotonic()
    with pytest.raises(Timeout) as silent:
        Client.http(f"http://127.0.0.1:{silent_port}/mcp", timeout=1.0).handshake()
    assert (silent.value.deadline, silent.value.seconds, silent.value.method) == (
        "start",
        1.0,
        "server/discover",
    )
    assert time.monotonic() - started < 3.0


def test_bad_urls_are_refused() -> None:
    with pytest.raises(ValueError, match="not an http"):
        Client.http("file:///etc/passwd")
    with pytest.raises(ValueError, match="credentials"):
        Client.http("http://user:pw@127.0.0.1/mcp")


# -- the hand-written server with faults -------------------------------------------------------


def test_legacy_server_session_sse_and_refused_sampling(http_faults: HttpPeer) -> None:
    before = len(httpx.get(http_faults.url("/seen"), timeout=5).json()["deleted"])
    client = Client.http(http_faults.url("/legacy"), timeout=10)
    with client:
        hs = client.handshake()  # discover → plain 400 → initialize
        assert (hs.era, hs.protocol_version, hs.session) == ("initialize", "2025-06-18", True)
        [tool] = client.list_tools()  # an event stream that asks for sampling first
        assert client.refused_requests == ["sampling/createMessage"]
        answer = json.loads(tool["description"])
        assert answer == {
            "jsonrpc": "2.0",
            "id": "srv-1",
            "error": {
                "code": -32601,
                "message": "Method not found: this client does not offer sampling/createMessage",
            },
        }
        assert client.call_tool("plain", {}).text == "called plain"
        with pytest.raises(PeerError) as refused:
            client.read_resource("x://y")
        assert (refused.value.code, refused.value.status) == (-32601, 200)
    seen = httpx.get(http_faults.url("/seen"), timeout=5).json()
    assert seen["deleted"][before:] == ["legacy-session-1"]


@pytest.mark.parametrize("tool", ["huge", "huge-declared", "sse-huge"])
def test_http_responses_over_the_cap(http_faults: HttpPeer, tool: str) -> None:
    with Client.http(http_faults.url("/legacy"), timeout=20) as client:
        started = time.monotonic()
        with pytest.raises(TooLarge) as huge:
            client.call_tool(tool, {})
        assert time.monotonic() - started < 5.0
        assert (huge.value.what, huge.value.limit) == ("message", 4 * MIB)
        assert huge.value.seen > 4 * MIB
        if tool == "huge-declared":
            assert huge.value.seen == 100 * MIB
        assert client.call_tool("plain", {}).text == "called plain"


@pytest.mark.parametrize("form", ["deep", "sse-deep"])
def test_http_responses_past_the_depth_cap(http_faults: HttpPeer, form: str) -> None:
    with Client.http(http_faults.url("/legacy"), timeout=10) as client:
        for levels in (65, 5000):
            with pytest.raises(TooDeep) as deep:
                client.call_tool(f"{form}-{levels}", {})
            assert (deep.value.part, deep.value.limit) == ("message", 64)
            assert deep.value.what == "message nested deeper than 64 levels"
        answer = client.call_tool(f"{form}-64", {})
        assert answer.structured is not None
        nest, levels = answer.structured["nest"], 0
        while isinstance(nest, list):
            nest, levels = nest[0] if nest else None, levels + 1
        assert levels == 61


def test_wrong_content_type(http_faults: HttpPeer) -> None:
    with Client.http(http_faults.url("/legacy"), timeout=10) as client:
        with pytest.raises(ProtocolError) as html:
            client.call_tool("html", {})
        assert html.value.what == "unexpected content type 'text/html' for tools/call"


def test_same_origin_redirect_is_followed(http_faults: HttpPeer) -> None:
    with Client.http(http_faults.url("/redirect-same"), timeout=10) as client:
        assert client.handshake().server_info == {"name": "legacy", "version": "1"}
        assert client.call_tool("plain", {}).text == "called plain"


def test_redirect_to_another_origin_is_refused(http_faults: HttpPeer) -> None:
    with pytest.raises(ProtocolError) as away:
        Client.http(http_faults.url("/redirect-away"), token="t", timeout=10).handshake()
    assert away.value.what == "redirect to another origin refused: http://127.0.0.1:1/mcp"


def test_redirect_that_would_drop_the_post_is_refused(http_faults: HttpPeer) -> None:
    with pytest.raises(ProtocolError) as found:
        Client.http(http_faults.url("/redirect-302"), timeout=10).handshake()
    assert found.value.what == (
        f"HTTP 302 redirect would turn the POST into a GET: {http_faults.url('/legacy')}"
    )


def test_not_found_is_unreachable_after_fallback(http_faults: HttpPeer) -> None:
    with pytest.raises(Unreachable) as missing:
        Client.http(http_faults.url("/nowhere"), timeout=10).handshake()
    assert (missing.value.what, missing.value.status) == ("http", 404)
    assert missing.value.detail == f"HTTP 404 for initialize from {http_faults.url('/nowhere')}"
