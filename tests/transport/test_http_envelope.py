"""The Streamable HTTP endpoint over real loopback HTTP: envelope, headers, eras, refusals.

Every refusal is asserted whole: HTTP status, JSON-RPC code, the presence or absence of ``id``,
the message, and the headers that matter (Content-Type, Allow, CORS, no session id). Every answer
is also checked against the protocol schema of the revision the request named, by
:mod:`tests.wire_schema` (results, errors, the 2026-07-28 error shapes by code).
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

import tmsite
from tests.transport.transport_helpers import (
    MODERN_META,
    STATELESS,
    modern_headers,
    modern_request,
    post,
    post_verbatim,
)
from tmsite.mcp import methods
from tmsite.mcp.protocol import INITIALIZE_VERSIONS

pytestmark = pytest.mark.spec("T1", "T2", "T3", "T4", "T5", "T6", "T7", "T8", "T9", "T10")

MiB = 1024 * 1024


def assert_refusal(
    reply: Any, status: int, code: int, *, rid: Any = "absent", message: str | None = None
) -> dict[str, Any]:
    """A refusal: the status, an application/json JSON-RPC error, id echoed or absent."""
    assert reply.status == status, reply.content
    assert reply.headers["content-type"] == "application/json"
    assert "mcp-session-id" not in reply.headers
    body = reply.json()
    assert body["jsonrpc"] == "2.0"
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    if message is not None:
        assert body["error"]["message"] == message
    if rid == "absent":
        assert "id" not in body
    else:
        assert body["id"] == rid
    assert "Traceback" not in reply.content.decode()
    return dict(body)


def assert_result(reply: Any, rid: Any = 1, session: bool = False) -> dict[str, Any]:
    """A result; ``session``: an initialize answered where streams are served (SUB2)."""
    assert reply.status == 200, reply.content
    assert reply.headers["content-type"] == "application/json"
    assert reply.headers["cache-control"] == "no-store"
    assert ("mcp-session-id" in reply.headers) is session
    assert "set-cookie" not in reply.headers
    body = reply.json()
    assert body["jsonrpc"] == "2.0" and body["id"] == rid, body
    assert "error" not in body, body
    return dict(body["result"])


def init_body(version: Any = "2025-11-25", rid: Any = 1) -> dict[str, Any]:
    params: dict[str, Any] = {
        "capabilities": {},
        "clientInfo": {"name": "transport-tests", "version": "1.0.0"},
    }
    if version is not None:
        params["protocolVersion"] = version
    return {"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": params}


# --- initialize, ping, server/discover ------------------------------------------------------


@pytest.mark.parametrize("version", INITIALIZE_VERSIONS)
def test_initialize_echoes_a_known_version(
    http: httpx.Client, mcp_url: str, version: str, streams_served: bool
) -> None:
    result = assert_result(post(http, mcp_url, init_body(version)), session=streams_served)
    assert result["protocolVersion"] == version


@pytest.mark.parametrize("offered", ["1999-01-01", None, 20251125, "2026-07-28"])
def test_initialize_answers_latest_to_anything_else(
    http: httpx.Client, mcp_url: str, offered: Any, streams_served: bool
) -> None:
    result = assert_result(post(http, mcp_url, init_body(offered)), session=streams_served)
    assert result["protocolVersion"] == "2025-11-25"


def test_initialize_result_describes_the_server(
    http: httpx.Client, mcp_url: str, settings: Any, streams_served: bool
) -> None:
    result = assert_result(post(http, mcp_url, init_body()), session=streams_served)
    assert result["protocolVersion"] == "2025-11-25"
    assert result["capabilities"] == {
        "tools": {"listChanged": False},
        "resources": {"subscribe": streams_served, "listChanged": False},
        "prompts": {"listChanged": False},
        "completions": {},
    }
    info = result["serverInfo"]
    assert info["name"] == settings.TM_HOST == "tinymachines"
    assert info["version"] == tmsite.__version__
    assert isinstance(info["title"], str) and info["title"]
    text = result["instructions"]
    for needle in (
        "tm://tinymachines/",
        "ends in `/`",
        '_meta["tinymachines.ai/links"]',
        "nearest URIs",
        "`overview`",
        "tm://tinymachines/fs/docs/mcp.md",
    ):
        assert needle in text, needle
    assert "\n" not in text


def test_instructions_follow_the_configured_host(
    http: httpx.Client, mcp_url: str, settings: Any, streams_served: bool
) -> None:
    settings.TM_HOST = "otherbox"
    result = assert_result(post(http, mcp_url, init_body()), session=streams_served)
    assert result["serverInfo"]["name"] == "otherbox"
    assert "tm://otherbox/fs/docs/mcp.md" in result["instructions"]


def test_ping_answers_an_empty_result(http: httpx.Client, mcp_url: str) -> None:
    reply = post(http, mcp_url, {"jsonrpc": "2.0", "id": "p-1", "method": "ping"})
    assert assert_result(reply, "p-1") == {}


def test_discover_in_the_stateless_era(
    http: httpx.Client, mcp_url: str, streams_served: bool
) -> None:
    reply = post(
        http,
        mcp_url,
        modern_request("server/discover", 7),
        headers=modern_headers("server/discover"),
    )
    result = assert_result(reply, 7)
    assert result["supportedVersions"] == [
        "2026-07-28",
        "2025-11-25",
        "2025-06-18",
        "2025-03-26",
        "2024-11-05",
    ]
    # listen streams deliver list changes only where a server holds them (tmsite.serve)
    assert result["capabilities"]["tools"] == {"listChanged": False}  # a fixed table
    assert result["capabilities"]["resources"] == {
        "subscribe": streams_served,
        "listChanged": streams_served,
    }
    assert result["resultType"] == "complete"
    assert isinstance(result["ttlMs"], int) and result["ttlMs"] >= 0
    assert result["cacheScope"] == "public"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "tinymachines"
    assert "serverInfo" not in result
    assert "tm://tinymachines/fs/docs/mcp.md" in result["instructions"]


def test_discover_from_an_initialize_era_client_is_a_jsonrpc_error(
    http: httpx.Client, mcp_url: str
) -> None:
    for headers in ({}, {"MCP-Protocol-Version": "2025-11-25"}):
        reply = post(
            http, mcp_url, {"jsonrpc": "2.0", "id": 3, "method": "server/discover"}, headers=headers
        )
        assert_refusal(reply, 200, -32601, rid=3)


# --- methods --------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["no/such", "resources/subscribe", "logging/setLevel"])
def test_unknown_methods_are_32601_in_200(
    http: httpx.Client, mcp_url: str, method: str, streams_served: bool
) -> None:
    reply = post(http, mcp_url, {"jsonrpc": "2.0", "id": 4, "method": method, "params": {}})
    # where streams are served a subscribe is answered, and refused without a session (SUB2)
    needs_session = streams_served and method == "resources/subscribe"
    assert_refusal(reply, 200, -32600 if needs_session else -32601, rid=4)


def test_params_that_are_not_an_object_are_32602_in_200(http: httpx.Client, mcp_url: str) -> None:
    reply = post(http, mcp_url, {"jsonrpc": "2.0", "id": 5, "method": "ping", "params": [1]})
    assert_refusal(reply, 200, -32602, rid=5, message="params must be a JSON object.")


def test_a_failing_handler_is_32603_without_its_traceback(
    http: httpx.Client, mcp_url: str, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    def explode(params: dict[str, Any], ctx: Any) -> dict[str, Any]:
        raise RuntimeError("secret internals /etc/passwd")

    monkeypatch.setitem(methods.METHODS, "ping", methods.Method(explode))
    reply = post(http, mcp_url, {"jsonrpc": "2.0", "id": 6, "method": "ping"})
    assert_refusal(reply, 200, -32603, rid=6, message="Internal error.")
    assert b"secret" not in reply.content
    assert any(r.exc_info and "secret internals" in str(r.exc_info[1]) for r in caplog.records), (
        "the traceback is logged"
    )


# --- notifications and client responses -----------------------------------------------------


@pytest.mark.parametrize(
    "method", ["notifications/initialized", "notifications/cancelled", "tools/list", "no/such"]
)
def test_a_notification_gets_202_and_no_body(http: httpx.Client, mcp_url: str, method: str) -> None:
    reply = post(http, mcp_url, {"jsonrpc": "2.0", "method": method})
    assert reply.status == 202
    assert reply.content == b""
    assert "content-type" not in reply.headers
    assert "mcp-session-id" not in reply.headers


def test_a_notification_in_the_stateless_era_gets_202(http: httpx.Client, mcp_url: str) -> None:
    body = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"_meta": MODERN_META}}
    reply = post(http, mcp_url, body, headers=modern_headers("notifications/cancelled"))
    assert (reply.status, reply.content) == (202, b"")


def test_a_client_response_is_accepted_in_the_2025_era(http: httpx.Client, mcp_url: str) -> None:
    for message in (
        {"jsonrpc": "2.0", "id": 9, "result": {}},
        {"jsonrpc": "2.0", "id": 9, "error": {"code": -1, "message": "no"}},
    ):
        reply = post(http, mcp_url, message, headers={"MCP-Protocol-Version": "2025-11-25"})
        assert (reply.status, reply.content) == (202, b"")


def test_a_client_response_is_refused_in_2026(http: httpx.Client, mcp_url: str) -> None:
    reply = post(
        http,
        mcp_url,
        {"jsonrpc": "2.0", "id": 9, "result": {}},
        headers={"MCP-Protocol-Version": STATELESS},
    )
    assert_refusal(
        reply, 400, -32600, message="Clients must not send JSON-RPC responses in 2026-07-28."
    )


# --- batches --------------------------------------------------------------------------------


def test_a_batch_is_answered_in_order_without_notifications(
    http: httpx.Client, mcp_url: str
) -> None:
    batch = [
        {"jsonrpc": "2.0", "id": "b", "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        7,
        {"jsonrpc": "2.0", "id": 1, "method": "no/such"},
        {"jsonrpc": "2.0", "id": 2, "result": {}},
        {"jsonrpc": "2.0", "id": "a", "method": "ping"},
    ]
    for headers in (
        {},
        {"MCP-Protocol-Version": "2025-03-26"},
        {"MCP-Protocol-Version": "2024-11-05"},
    ):
        reply = post(http, mcp_url, batch, headers=headers)
        assert reply.status == 200
        assert reply.headers["content-type"] == "application/json"
        answers = reply.json()
        assert [a.get("id", "absent") for a in answers] == ["b", "absent", 1, "a"]
        assert answers[0]["result"] == {}
        assert answers[1]["error"]["code"] == -32600
        assert answers[2]["error"]["code"] == -32601
        assert answers[3]["result"] == {}


def test_a_batch_of_notifications_gets_202(http: httpx.Client, mcp_url: str) -> None:
    batch = [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
    ]
    reply = post(http, mcp_url, batch)
    assert (reply.status, reply.content) == (202, b"")


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25", STATELESS])
def test_a_batch_from_a_newer_client_is_refused(
    http: httpx.Client, mcp_url: str, version: str
) -> None:
    batch = [{"jsonrpc": "2.0", "id": 1, "method": "ping"}]
    reply = post(http, mcp_url, batch, headers={"MCP-Protocol-Version": version})
    assert_refusal(
        reply,
        400,
        -32600,
        message=f"JSON-RPC batches are not accepted under protocol {version}; send one message "
        "per request.",
    )


def test_an_empty_batch_is_refused(http: httpx.Client, mcp_url: str) -> None:
    reply = post(http, mcp_url, raw=b"[]")
    assert_refusal(reply, 400, -32600, message="An empty batch is not a JSON-RPC message.")


# --- malformed bodies -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"{",
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping"',
        b"\xff\xfe{}",
        b'\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":1,"method":"ping"} trailing',
        b"{'jsonrpc': '2.0'}",
    ],
    ids=["empty", "unclosed", "truncated", "not-utf8", "bom", "trailing", "single-quotes"],
)
def test_malformed_json_is_32700_without_id(http: httpx.Client, mcp_url: str, raw: bytes) -> None:
    body = assert_refusal(post(http, mcp_url, raw=raw), 400, -32700)
    assert body["error"]["message"].startswith("Parse error: ")


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":NaN}}', "NaN is not a JSON value"),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":Infinity}}', "Infinity is not"),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":-Infinity}}', "-Infinity is not"),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":1e400}}', "out of range"),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\\ud800"}}', "lone UTF-16"),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"\\udfff":1}}', "lone UTF-16"),
        (b'{"jsonrpc":"2.0","id":"\\ud800x","method":"ping"}', "lone UTF-16"),
        (b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"ping"}', "too long"),
    ],
    ids=[
        "nan",
        "inf",
        "-inf",
        "1e400",
        "surrogate-value",
        "surrogate-key",
        "surrogate-id",
        "huge-int",
    ],
)
def test_strict_parsing_refuses_what_json_is_not(
    http: httpx.Client, mcp_url: str, raw: bytes, why: str
) -> None:
    body = assert_refusal(post(http, mcp_url, raw=raw), 400, -32700)
    assert why in body["error"]["message"]


def test_a_paired_surrogate_escape_is_fine(http: httpx.Client, mcp_url: str) -> None:
    raw = b'{"jsonrpc":"2.0","id":"\\ud83d\\ude00","method":"ping"}'
    assert assert_result(post(http, mcp_url, raw=raw), "\U0001f600") == {}


@pytest.mark.parametrize("depth", [65, 100, 100_000])
def test_deep_nesting_is_refused(http: httpx.Client, mcp_url: str, depth: int) -> None:
    nested = b"[" * depth + b"]" * depth
    raw = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":' + nested + b"}}"
    assert_refusal(
        post(http, mcp_url, raw=raw),
        400,
        -32700,
        message="Parse error: JSON nested deeper than 64 levels",
    )


def test_nesting_within_the_bound_is_fine(http: httpx.Client, mcp_url: str) -> None:
    nested = b"[" * 60 + b"]" * 60
    raw = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":' + nested + b"}}"
    assert assert_result(post(http, mcp_url, raw=raw)) == {}


@pytest.mark.parametrize("raw", [b"1", b'"ping"', b"null", b"true"])
def test_a_body_that_is_not_an_object_is_32600(
    http: httpx.Client, mcp_url: str, raw: bytes
) -> None:
    assert_refusal(
        post(http, mcp_url, raw=raw),
        400,
        -32600,
        message="A JSON-RPC message must be a JSON object.",
    )


@pytest.mark.parametrize("jsonrpc", ["1.0", 2.0, None, "absent"])
def test_a_wrong_jsonrpc_member_is_32600_echoing_the_id(
    http: httpx.Client, mcp_url: str, jsonrpc: Any
) -> None:
    message: dict[str, Any] = {"id": 11, "method": "ping"}
    if jsonrpc != "absent":
        message["jsonrpc"] = jsonrpc
    assert_refusal(
        post(http, mcp_url, message),
        400,
        -32600,
        rid=11,
        message='The "jsonrpc" member must be "2.0".',
    )


@pytest.mark.parametrize("rid", [None, 1.5, 1.0, True, False, {"a": 1}, [1]])
def test_an_id_that_is_not_a_string_or_integer_is_32600(
    http: httpx.Client, mcp_url: str, rid: Any
) -> None:
    reply = post(http, mcp_url, {"jsonrpc": "2.0", "id": rid, "method": "ping"})
    assert_refusal(reply, 400, -32600, message='The "id" member must be a string or an integer.')


def test_a_request_without_a_method_is_32600(http: httpx.Client, mcp_url: str) -> None:
    reply = post(http, mcp_url, {"jsonrpc": "2.0", "id": 12})
    assert_refusal(reply, 400, -32600, rid=12, message='A request needs a "method" member.')
    reply = post(http, mcp_url, {"jsonrpc": "2.0", "id": 13, "method": 5})
    assert_refusal(
        reply, 400, -32600, rid=13, message='The "method" member must be a non-empty string.'
    )


# --- size, content type, accept --------------------------------------------------------------


def test_a_body_over_4_mib_is_413(http: httpx.Client, mcp_url: str) -> None:
    padding = b" " * (4 * MiB)
    raw = b'{"jsonrpc":"2.0","id":1,"method":"ping"}' + padding
    assert_refusal(
        post(http, mcp_url, raw=raw), 413, -32600, message="The body is larger than 4 MiB."
    )


def test_a_body_of_exactly_4_mib_is_read(http: httpx.Client, mcp_url: str) -> None:
    head = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    raw = head + b" " * (4 * MiB - len(head))
    assert assert_result(post(http, mcp_url, raw=raw)) == {}


@pytest.mark.parametrize(
    "content_type",
    [
        None,
        "text/plain",
        "application/x-www-form-urlencoded",
        "application/jsonx",
        "application/json; charset=latin-1",
        "multipart/form-data; boundary=x",
    ],
)
def test_a_body_that_is_not_application_json_is_415(
    http: httpx.Client, mcp_url: str, content_type: str | None
) -> None:
    reply = post(
        http, mcp_url, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, content_type=content_type
    )
    assert_refusal(
        reply, 415, -32600, message="The body must be sent as Content-Type: application/json."
    )


@pytest.mark.parametrize(
    "content_type",
    ["application/json; charset=utf-8", "Application/JSON", "application/json;charset=UTF-8"],
)
def test_application_json_with_a_utf8_charset_is_fine(
    http: httpx.Client, mcp_url: str, content_type: str
) -> None:
    reply = post(
        http, mcp_url, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, content_type=content_type
    )
    assert assert_result(reply) == {}


@pytest.mark.parametrize(
    "accept",
    [
        "",
        "*/*",
        "application/*",
        "application/json",
        "text/event-stream, application/json",
        "text/html;q=0.9, application/json;q=0.1",
    ],
)
def test_an_accept_that_allows_json_is_fine(http: httpx.Client, mcp_url: str, accept: str) -> None:
    reply = post(
        http, mcp_url, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers={"Accept": accept}
    )
    assert assert_result(reply) == {}


@pytest.mark.parametrize(
    "accept", ["text/event-stream", "text/html", "application/json;q=0", "application/xml, text/*"]
)
def test_an_accept_that_excludes_json_is_406(http: httpx.Client, mcp_url: str, accept: str) -> None:
    reply = post(
        http, mcp_url, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers={"Accept": accept}
    )
    assert_refusal(reply, 406, -32600, message="The Accept header must allow application/json.")


# --- HTTP methods and CORS ------------------------------------------------------------------

#: The 405's message where the server keeps no session (Django's live server)…
SENTENCE = (
    "This MCP endpoint takes JSON-RPC messages by POST only: this server keeps no session and "
    "opens no stream, so a GET has nothing to open and a DELETE nothing to end."
)
#: … and where a 2025-11-25 session's GET and DELETE are served: the header is what is missing.
SESSION_SENTENCE = (
    "This MCP endpoint takes JSON-RPC messages by POST. A GET opens a 2025-11-25 session's "
    "stream and a DELETE ends that session, each with the Mcp-Session-Id header that "
    "initialize answered."
)


@pytest.mark.parametrize("verb", ["GET", "DELETE", "PUT", "PATCH"])
def test_other_http_methods_are_405(
    http: httpx.Client, mcp_url: str, verb: str, streams_served: bool
) -> None:
    response = http.request(verb, mcp_url, headers={"Accept": "text/event-stream"})
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert response.headers["content-type"] == "application/json"
    says_session = streams_served and verb in ("GET", "DELETE")
    message = SESSION_SENTENCE if says_session else SENTENCE
    assert response.json() == {"jsonrpc": "2.0", "error": {"code": -32600, "message": message}}


def test_head_is_405_too(http: httpx.Client, mcp_url: str) -> None:
    response = http.head(mcp_url)
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"


def test_preflight_from_an_allowed_origin(
    http: httpx.Client, mcp_url: str, streams_served: bool
) -> None:
    response = http.options(
        mcp_url,
        headers={
            "Origin": "http://localhost:5173",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": (
                "content-type, mcp-protocol-version, mcp-param-region"
            ),
        },
    )
    assert response.status_code == 204
    assert response.headers["access-control-allow-origin"] == "http://localhost:5173"
    assert response.headers["vary"] == "Origin"
    assert response.headers["access-control-allow-methods"] == (
        "GET, POST, DELETE, OPTIONS" if streams_served else "POST, OPTIONS"
    )
    assert response.headers["access-control-allow-headers"] == (
        "content-type, mcp-protocol-version, mcp-method, mcp-name, last-event-id, "
        "mcp-session-id, mcp-param-region"
    )
    assert "access-control-allow-credentials" not in response.headers
    assert "access-control-expose-headers" not in response.headers


def test_preflight_from_a_foreign_origin_is_403(http: httpx.Client, mcp_url: str) -> None:
    response = http.options(
        mcp_url, headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}
    )
    assert response.status_code == 403
    assert "access-control-allow-origin" not in response.headers
    assert response.json() == {
        "jsonrpc": "2.0",
        "error": {"code": -32600, "message": "This Origin may not call this endpoint."},
    }


# --- Origin and Host ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "origin",
    [
        "https://evil.example",
        "null",
        "http://127.0.0.1.evil.example",
        "http://localhost@evil.example",
        "http://localhost:99999",
        "file://localhost",
        "http://localhost/path",
        "http://10.0.0.1",
    ],
)
def test_a_foreign_origin_is_403(http: httpx.Client, mcp_url: str, origin: str) -> None:
    reply = post(
        http, mcp_url, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers={"Origin": origin}
    )
    assert_refusal(reply, 403, -32600, message="This Origin may not call this endpoint.")
    assert "access-control-allow-origin" not in reply.headers


@pytest.mark.parametrize(
    "origin",
    ["http://localhost", "http://127.0.0.1:8000", "https://localhost:3000", "http://[::1]:6274"],
)
def test_loopback_origins_are_allowed(http: httpx.Client, mcp_url: str, origin: str) -> None:
    reply = post(
        http, mcp_url, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers={"Origin": origin}
    )
    assert assert_result(reply) == {}
    assert reply.headers["access-control-allow-origin"] == origin
    assert reply.headers["vary"] == "Origin"


def test_a_configured_site_origin_is_allowed(
    http: httpx.Client, mcp_url: str, settings: Any
) -> None:
    settings.TM_ALLOWED_ORIGINS = ["https://tinymachines.ai"]
    reply = post(
        http,
        mcp_url,
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        headers={"Origin": "https://tinymachines.ai"},
    )
    assert assert_result(reply) == {}
    assert reply.headers["access-control-allow-origin"] == "https://tinymachines.ai"


def test_a_foreign_host_is_400(http: httpx.Client, mcp_url: str) -> None:
    reply = post(
        http,
        mcp_url,
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        headers={"Host": "evil.example.com"},
    )
    assert_refusal(reply, 400, -32600, message="This Host is not served here.")


# --- protocol-version header ----------------------------------------------------------------


@pytest.mark.parametrize("header", ["1999-01-01", "2025-13-45", "v999.0.0", "latest"])
def test_an_unsupported_version_header_is_400_32022(
    http: httpx.Client, mcp_url: str, header: str
) -> None:
    reply = post(
        http,
        mcp_url,
        {"jsonrpc": "2.0", "id": 21, "method": "ping"},
        headers={"MCP-Protocol-Version": header},
    )
    body = assert_refusal(reply, 400, -32022, rid=21)
    assert body["error"]["data"] == {
        "supported": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"],
        "requested": header,
    }


def test_an_unsupported_version_header_on_a_notification_is_400(
    http: httpx.Client, mcp_url: str
) -> None:
    reply = post(
        http,
        mcp_url,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        headers={"MCP-Protocol-Version": "1999-01-01"},
    )
    assert_refusal(reply, 400, -32022)


@pytest.mark.parametrize("version", INITIALIZE_VERSIONS)
def test_each_initialize_era_header_is_served(
    http: httpx.Client, mcp_url: str, version: str
) -> None:
    reply = post(
        http,
        mcp_url,
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        headers={"MCP-Protocol-Version": version},
    )
    assert assert_result(reply) == {}


# --- the 2026-07-28 envelope ----------------------------------------------------------------


def test_the_stateless_era_refuses_initialize_era_methods_with_404(
    http: httpx.Client, mcp_url: str
) -> None:
    for method in (
        "ping",
        "initialize",
        "resources/subscribe",
        "logging/setLevel",
        "unknown/method",
    ):
        reply = post(http, mcp_url, modern_request(method, 31), headers=modern_headers(method))
        assert_refusal(reply, 404, -32601, rid=31)


@pytest.mark.parametrize(
    ("meta", "message"),
    [
        (
            "absent",
            "params._meta must be an object carrying 'io.modelcontextprotocol/protocolVersion' "
            "and 'io.modelcontextprotocol/clientCapabilities'.",
        ),
        (
            {"io.modelcontextprotocol/clientCapabilities": {}},
            "params._meta is missing io.modelcontextprotocol/protocolVersion.",
        ),
        (
            {"io.modelcontextprotocol/protocolVersion": STATELESS},
            "params._meta is missing io.modelcontextprotocol/clientCapabilities.",
        ),
    ],
    ids=["no-meta", "no-version", "no-capabilities"],
)
def test_a_missing_envelope_is_400_32602(
    http: httpx.Client, mcp_url: str, meta: Any, message: str
) -> None:
    params = {} if meta == "absent" else {"_meta": meta}
    body = {"jsonrpc": "2.0", "id": 41, "method": "server/discover", "params": params}
    reply = post(http, mcp_url, body, headers=modern_headers("server/discover"))
    assert_refusal(reply, 400, -32602, rid=41, message=message)


def test_client_info_is_optional(http: httpx.Client, mcp_url: str) -> None:
    meta = {k: v for k, v in MODERN_META.items() if not k.endswith("clientInfo")}
    body = {"jsonrpc": "2.0", "id": 42, "method": "server/discover", "params": {"_meta": meta}}
    reply = post(http, mcp_url, body, headers=modern_headers("server/discover"))
    assert assert_result(reply, 42)["resultType"] == "complete"


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({"MCP-Protocol-Version": STATELESS}, "The Mcp-Method header does not match the method."),
        (
            {"MCP-Protocol-Version": STATELESS, "Mcp-Method": "tools/list"},
            "The Mcp-Method header does not match the method.",
        ),
        (
            {"MCP-Protocol-Version": STATELESS, "Mcp-Method": "SERVER/DISCOVER"},
            "The Mcp-Method header does not match the method.",
        ),
    ],
    ids=["missing", "different", "case"],
)
def test_a_method_header_that_differs_is_400_32020(
    http: httpx.Client, mcp_url: str, headers: dict[str, str], message: str
) -> None:
    reply = post(http, mcp_url, modern_request("server/discover", 51), headers=headers)
    assert_refusal(reply, 400, -32020, rid=51, message=message)


def test_a_version_header_that_differs_from_the_body_is_400_32020(
    http: httpx.Client, mcp_url: str
) -> None:
    request = modern_request("server/discover", 52)
    request["params"]["_meta"] = {**MODERN_META, "io.modelcontextprotocol/protocolVersion": "v999"}
    reply = post(http, mcp_url, request, headers=modern_headers("server/discover"))
    assert_refusal(
        reply,
        400,
        -32020,
        rid=52,
        message="The MCP-Protocol-Version header does not match "
        "params._meta['io.modelcontextprotocol/protocolVersion'].",
    )


def test_an_unsupported_version_in_header_and_body_is_400_32022(
    http: httpx.Client, mcp_url: str
) -> None:
    request = modern_request("server/discover", 53)
    request["params"]["_meta"] = {
        **MODERN_META,
        "io.modelcontextprotocol/protocolVersion": "v999.0.0",
    }
    reply = post(
        http,
        mcp_url,
        request,
        headers={"MCP-Protocol-Version": "v999.0.0", "Mcp-Method": "server/discover"},
    )
    body = assert_refusal(reply, 400, -32022, rid=53)
    assert body["error"]["data"]["requested"] == "v999.0.0"


def test_a_modern_body_without_the_version_header_is_400_32020(
    http: httpx.Client, mcp_url: str
) -> None:
    for headers in ({}, {"MCP-Protocol-Version": "2025-11-25"}):
        reply = post(http, mcp_url, modern_request("server/discover", 54), headers=headers)
        assert_refusal(
            reply,
            400,
            -32020,
            rid=54,
            message="The request carries the 2026-07-28 _meta envelope but the "
            "MCP-Protocol-Version header is missing or names another version.",
        )


def test_header_names_are_case_insensitive_and_values_trimmed(
    http: httpx.Client, mcp_url: str
) -> None:
    headers = {"mcp-protocol-version": STATELESS, "MCP-METHOD": " server/discover\t"}
    reply = post_verbatim(mcp_url, modern_request("server/discover", 55), headers)
    assert assert_result(reply, 55)["resultType"] == "complete"


def _tools_call(name: str, rid: int) -> dict[str, Any]:
    return modern_request("tools/call", rid, name=name, arguments={})


@pytest.mark.parametrize(
    "name_header",
    [None, "wrong_tool", "=?base64?b3Zlcg==?=", "=?base64?!!!?=", "=?base64?SGVsbG8?="],
    ids=["missing", "different", "base64-different", "base64-bad-chars", "base64-bad-padding"],
)
def test_a_name_header_that_differs_is_400_32020(
    http: httpx.Client, mcp_url: str, name_header: str | None
) -> None:
    reply = post(
        http,
        mcp_url,
        _tools_call("overview", 61),
        headers=modern_headers("tools/call", name_header),
    )
    assert_refusal(
        reply, 400, -32020, rid=61, message="The Mcp-Name header does not match params.name."
    )


@pytest.mark.parametrize("name_header", ["overview", "  overview ", "=?base64?b3ZlcnZpZXc=?="])
def test_a_name_header_that_matches_reaches_the_method(
    http: httpx.Client, mcp_url: str, name_header: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[str, str]] = []

    def fake_call(params: dict[str, Any], ctx: Any) -> dict[str, Any]:
        seen.append((params["name"], ctx.version))
        return {"content": [{"type": "text", "text": "ok"}], "isError": False}

    monkeypatch.setitem(methods.METHODS, "tools/call", methods.Method(fake_call))
    reply = post_verbatim(
        mcp_url, _tools_call("overview", 62), modern_headers("tools/call", name_header)
    )
    result = assert_result(reply, 62)
    assert result["resultType"] == "complete"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "tinymachines"
    assert seen == [("overview", STATELESS)]


def test_a_resource_uri_is_checked_against_mcp_name(http: httpx.Client, mcp_url: str) -> None:
    request = modern_request("resources/read", 63, uri="tm://tinymachines/")
    reply = post(
        http, mcp_url, request, headers=modern_headers("resources/read", "tm://tinymachines/fs/")
    )
    assert_refusal(
        reply, 400, -32020, rid=63, message="The Mcp-Name header does not match params.uri."
    )


def test_the_stateless_context_reaches_the_handler(
    http: httpx.Client, mcp_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Any] = []

    def spy(params: dict[str, Any], ctx: Any) -> dict[str, Any]:
        seen.append(ctx)
        return {"tools": []}

    monkeypatch.setitem(methods.METHODS, "tools/list", methods.Method(spy, ttl_seconds=300))
    reply = post(
        http, mcp_url, modern_request("tools/list", 64), headers=modern_headers("tools/list")
    )
    result = assert_result(reply, 64)
    assert (result["ttlMs"], result["cacheScope"], result["resultType"]) == (
        300000,
        "public",
        "complete",
    )
    assert seen[0].version == STATELESS and seen[0].era == "2026" and seen[0].transport == "http"
    assert seen[0].client_info == {"name": "transport-tests", "version": "1.0.0"}

    seen.clear()
    post(http, mcp_url, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    post(
        http,
        mcp_url,
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"MCP-Protocol-Version": "2025-06-18"},
    )
    assert [c.version for c in seen] == ["2025-03-26", "2025-06-18"]
    assert all(c.era == "2025" for c in seen)


def test_responses_never_carry_a_session(
    http: httpx.Client, mcp_url: str, streams_served: bool
) -> None:
    reply = post(http, mcp_url, init_body(), headers={"Mcp-Session-Id": "abc"})
    if streams_served:  # sessions are kept there (SUB2): one not signed by the box is 404
        assert_refusal(reply, 404, -32600, rid=1)
        return
    assert_result(reply)
    assert "mcp-session-id" not in reply.headers
    assert "set-cookie" not in reply.headers
    assert json.loads(reply.content)["result"]["protocolVersion"] == "2025-11-25"


@pytest.mark.parametrize(
    ("text", "refused"),
    [
        ("[" * 64 + "]" * 64, False),
        ("[" * 65 + "]" * 65, True),
        ('{"a":' * 64 + "1" + "}" * 64, False),
        ('{"a":' * 65 + "1" + "}" * 65, True),
        ('["\\ud83d\\ude00"]', False),
        ('["\\ud83d"]', True),
        ('{"\\u00e9\\udc00":1}', True),
    ],
    ids=["64-lists", "65-lists", "64-objects", "65-objects", "pair", "lone", "lone-in-key"],
)
def test_the_strict_parse_holds_its_bounds_at_their_edge(text: str, refused: bool) -> None:
    """Depth and surrogates are checked whenever the text could break them (and only then)."""
    from tmsite.mcp.envelope import ParseFailure, loads_strict

    if refused:
        with pytest.raises(ParseFailure):
            loads_strict(text.encode())
    else:
        assert loads_strict(text.encode()) is not None
