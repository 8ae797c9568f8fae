"""The REST routes under ``/api/v1/``: one surface, two spellings (TL6).

Every route listed in ``/api/openapi.json`` is called in process with ``django.test.Client`` and
its answer is compared with what its twin answers over ``POST /api/mcp`` in an initialize-era
session (``initialize``, ``notifications/initialized``, then requests carrying the negotiated
``MCP-Protocol-Version``): a route with a tool twin against the tool's ``structuredContent`` (or,
for a refusal, the JSON of the tool error), the namespace routes against their protocol methods.
A refusal must give the REST status for the reason the twin gives, and the same fields.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import pytest
from django.test import Client
from django.urls import reverse

from tests.namespace.test_ns_tools import payload
from tests.namespace.world import HOST, SECRET
from tests.oplog.conftest import CALLER
from tests.rest.conftest import Hosts
from tmsite.api import api
from tmsite.callers.clock import FakeClock
from tmsite.mcp.codes import RATE_LIMITED
from tmsite.mcp.protocol import LATEST_INITIALIZE_VERSION
from tmsite.rest import health, readiness
from tmsite.rest import routes as rest

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.usefixtures("process_namespace"),
    pytest.mark.spec("TL6", "OP1"),
]

OVERVIEW = "/api/v1/overview"
PIECES = "/api/v1/pieces"
PIECE = "/api/v1/pieces/{key}"
LICENSING = "/api/v1/licensing"
RESOLVE = "/api/v1/resolve"
RESOURCES = "/api/v1/resources"
TEMPLATES = "/api/v1/templates"
COMPLETE = "/api/v1/complete"
HEALTH = "/api/v1/health"
LIVE, READY = "/api/v1/live", "/api/v1/ready"
PROPOSALS = "/api/v1/proposals"
#: Exercised against its tool twin in ``tests/search/test_doors.py``.
SEARCH = "/api/v1/search"
#: The prompt routes, exercised against their MCP twins in ``tests/prompts/test_prompts_rest.py``.
PROMPTS = {"/api/v1/prompts", "/api/v1/prompts/{name}", "/api/v1/prompts/{name}/complete"}
#: Every route exercised; the OpenAPI document must list exactly these.
EXERCISED = {
    OVERVIEW,
    PIECES,
    PIECE,
    LICENSING,
    RESOLVE,
    RESOURCES,
    TEMPLATES,
    COMPLETE,
    HEALTH,
    LIVE,
    READY,
    PROPOSALS,
    SEARCH,
    *PROMPTS,
}
#: The routes that spell a tool, and the tool.
TOOL_TWINS = {OVERVIEW: "overview", PIECE: "piece", LICENSING: "licensing", RESOLVE: "resolve"}

DOCS = f"tm://{HOST}/fs/docs/"
FS_TEMPLATE = f"tm://{HOST}/fs/{{+path}}"

#: What HTTP says about each reason exercised here (the REST module's own table is not used).
EXPECTED_STATUS = {
    "bad-argument": 400,
    "bad-facet": 400,
    "bad-cursor": 400,
    "bad-uri": 400,
    "not-found": 404,
    "out-of-root": 404,
    "denied": 403,
    "too-large": 413,
    "rate-limited": 429,
    "exists": 409,
    "queue-full": 503,
}

WHOLE_SECOND = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
WITH_MICROSECONDS = datetime(2030, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
INSTANTS = pytest.mark.parametrize(
    "instant",
    [
        pytest.param(WHOLE_SECOND, id="whole-second"),
        pytest.param(WITH_MICROSECONDS, id="microseconds"),
    ],
)


# --- the two clients ----------------------------------------------------------------------------


class Mcp:
    """An initialize-era MCP client over ``POST /api/mcp``, in process."""

    def __init__(self, client: Client, version: str = LATEST_INITIALIZE_VERSION) -> None:
        self.client = client
        self._ids = itertools.count(1)
        reply = self._post(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": version,
                    "capabilities": {},
                    "clientInfo": {"name": "rest-twin-tests", "version": "1"},
                },
            },
            version=None,
        )
        assert reply.status_code == 200, reply.content
        result = reply.json()["result"]
        assert result["protocolVersion"] == version
        assert {"tools", "resources", "completions"} <= set(result["capabilities"])
        self.version: str = result["protocolVersion"]
        ready = self._post({"jsonrpc": "2.0", "method": "notifications/initialized"}, self.version)
        assert ready.status_code == 202

    def _post(self, body: dict[str, Any], version: str | None) -> Any:
        headers = {"Accept": "application/json, text/event-stream"}
        if version is not None:
            headers["MCP-Protocol-Version"] = version
        return self.client.post(
            "/api/mcp", json.dumps(body), content_type="application/json", headers=headers
        )

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        rid = next(self._ids)
        reply = self._post(
            {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}, self.version
        )
        assert reply.status_code == 200, reply.content
        body: dict[str, Any] = reply.json()
        assert body["id"] == rid
        return body

    def result(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = self.request(method, params)
        assert "error" not in body, body
        result: dict[str, Any] = body["result"]
        return result

    def error(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = self.request(method, params)
        assert "result" not in body, body
        error: dict[str, Any] = body["error"]
        return error

    def tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """The tool's ``structuredContent`` (checked against its text item)."""
        result = self.result("tools/call", {"name": name, "arguments": arguments})
        assert result["isError"] is False, result
        return payload(result)

    def tool_refusal(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The JSON of the tool error (there is no ``structuredContent`` on an error)."""
        result = self.result("tools/call", {"name": name, "arguments": arguments})
        assert result["isError"] is True, result
        return payload(result)

    def tools(self) -> dict[str, dict[str, Any]]:
        return {tool["name"]: tool for tool in self.result("tools/list", {})["tools"]}


@pytest.fixture
def mcp(client: Client) -> Mcp:
    return Mcp(client)


def rest_ok(client: Client, path: str, query: dict[str, str] | None = None) -> Any:
    reply = client.get(path, query or {})
    assert reply.status_code == 200, reply.content
    assert reply["Content-Type"].startswith("application/json")
    return reply.json()


def rest_refused(
    client: Client, path: str, query: dict[str, str] | None = None
) -> tuple[int, dict[str, Any]]:
    reply = client.get(path, query or {})
    assert reply.status_code >= 400, reply.content
    assert reply["Content-Type"].startswith("application/json")
    assert SECRET not in reply.content.decode("utf-8")
    body: dict[str, Any] = reply.json()
    return reply.status_code, body


def rest_spelling(error: dict[str, Any]) -> dict[str, Any]:
    """A JSON-RPC error's message and data, as one REST refusal body spells them."""
    data = error.get("data")
    assert isinstance(data, dict), error
    return {"error": error["message"], **data}


def without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [without_nulls(item) for item in value]
    return value


def to_the_millisecond(value: Any) -> Any:
    """``value`` with every ``checked_at`` read as an instant cut to whole milliseconds."""
    if isinstance(value, dict):
        return {
            key: (
                datetime.fromisoformat(item).replace(
                    microsecond=datetime.fromisoformat(item).microsecond // 1000 * 1000
                )
                if key == "checked_at" and isinstance(item, str)
                else to_the_millisecond(item)
            )
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [to_the_millisecond(item) for item in value]
    return value


def piece_keys(client: Client) -> list[str]:
    keys = [piece["key"] for piece in rest_ok(client, PIECES)]
    assert keys, "the shipped record has pieces"
    return keys


# --- what the OpenAPI document lists --------------------------------------------------------------


def _registered() -> tuple[set[tuple[str, str]], dict[int, str]]:
    """(path, method) of every schema-listed operation the API's routers hold; router → prefix."""
    root = reverse("api:api-root").rstrip("/")
    listed: set[tuple[str, str]] = set()
    prefixes: dict[int, str] = {}
    for prefix, router in api._routers:
        prefixes[id(router)] = root + prefix
        for path, view in router.path_operations.items():
            for operation in view.operations:
                if operation.include_in_schema:
                    listed |= {
                        (root + prefix + path, method.lower()) for method in operation.methods
                    }
    return listed, prefixes


def test_openapi_lists_exactly_the_operations_the_routers_register(client: Client) -> None:
    schema = rest_ok(client, reverse("api:openapi-json"))
    listed = {(path, method) for path, item in schema["paths"].items() for method in item}
    registered, prefixes = _registered()
    assert listed == registered
    # the REST module's routes and the health, live and ready routes, nothing else; the MCP
    # endpoint is unlisted
    rest_paths = {prefixes[id(rest.router)] + path for path in rest.router.path_operations}
    health_paths = {
        prefixes[id(router)] + path
        for router in (health.router, readiness.router)
        for path in router.path_operations
    }
    assert set(schema["paths"]) == rest_paths | health_paths
    # Every route reads but the one that keeps a proposal for the maintainers.
    assert {(path, method) for path, method in listed if method != "get"} == {
        ("/api/v1/proposals", "post")
    }
    assert not any(path.endswith("/mcp") for path in schema["paths"])


def test_every_listed_route_is_exercised_here(client: Client) -> None:
    schema = rest_ok(client, reverse("api:openapi-json"))
    assert set(schema["paths"]) == EXERCISED


def test_the_docs_page_answers_and_points_at_the_document(client: Client) -> None:
    reply = client.get(reverse("api:openapi-view"))
    assert reply.status_code == 200
    assert reply["Content-Type"].startswith("text/html")
    assert reverse("api:openapi-view") == "/api/docs"
    assert f'"url": "{reverse("api:openapi-json")}"' in reply.content.decode("utf-8")


@pytest.mark.parametrize(("path", "tool"), sorted(TOOL_TWINS.items()))
def test_a_twin_route_declares_the_tools_model_and_takes_its_arguments(
    client: Client, mcp: Mcp, path: str, tool: str
) -> None:
    schema = rest_ok(client, reverse("api:openapi-json"))
    operation = schema["paths"][path]["get"]
    advertised = mcp.tools()[tool]
    ref = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    declared = schema["components"]["schemas"][ref.rsplit("/", 1)[1]]
    output = advertised["outputSchema"]
    assert declared["title"] == output["title"]
    assert set(declared["properties"]) == set(output["properties"])
    assert set(declared.get("required", [])) == set(output.get("required", []))
    parameters = operation.get("parameters", [])
    inputs = advertised["inputSchema"]
    assert {p["name"] for p in parameters} == set(inputs["properties"])
    assert {p["name"] for p in parameters if p.get("required")} == set(inputs.get("required", []))


# --- answers: the same JSON on both spellings -------------------------------------------------


def test_overview_measures_each_hosted_piece_now(client: Client, hosts: Hosts) -> None:
    before = datetime.now(UTC)
    before = before.replace(microsecond=before.microsecond // 1000 * 1000)  # in case it is cut
    by_rest = rest_ok(client, OVERVIEW)
    after = datetime.now(UTC)
    assert sorted(hosts.measured()) == sorted(hosts.urls.values())
    statuses = {p["public_url"]: p["status"] for p in by_rest["pieces"] if p["public_url"]}
    assert set(statuses) == set(hosts.urls.values())
    for url, status in statuses.items():
        head = hosts.head_status[url]
        assert status["http_status"] == (200 if head == 405 else head), url
        assert status["reachability"] == ("down" if head >= 500 else "up"), url
        assert status["latency_ms"] >= 0 and status["detail"] is None, url
        assert before <= datetime.fromisoformat(status["checked_at"]) <= after, url
    assert by_rest["up"] == sum(1 for s in statuses.values() if s["reachability"] == "up")
    assert "down" in {s["reachability"] for s in statuses.values()}
    assert by_rest["probed"] == len(statuses) < by_rest["total"]
    first = min(datetime.fromisoformat(s["checked_at"]) for s in statuses.values())
    assert datetime.fromisoformat(by_rest["checked_at"]) == first


@INSTANTS
def test_overview_is_the_overview_tool(
    client: Client, mcp: Mcp, hosts: Hosts, instant: datetime
) -> None:
    hosts.pin(instant)
    by_rest = rest_ok(client, OVERVIEW)
    by_tool = mcp.tool("overview", {})
    # one measurement per hosted piece, shared by both spellings through the probe cache
    hosted = [p["public_url"] for p in by_rest["pieces"] if p["public_url"] is not None]
    assert hosted and sorted(hosts.measured()) == sorted(hosted)
    assert to_the_millisecond(by_rest) == to_the_millisecond(by_tool)
    assert by_rest == by_tool
    assert datetime.fromisoformat(by_rest["checked_at"]) == instant


@INSTANTS
def test_pieces_are_the_overview_tools_pieces(
    client: Client, mcp: Mcp, hosts: Hosts, instant: datetime
) -> None:
    hosts.pin(instant)
    by_rest = rest_ok(client, PIECES)
    assert by_rest == rest_ok(client, OVERVIEW)["pieces"]
    by_tool = mcp.tool("overview", {})["pieces"]
    assert to_the_millisecond(by_rest) == to_the_millisecond(by_tool)
    assert by_rest == by_tool
    assert {datetime.fromisoformat(p["status"]["checked_at"]) for p in by_rest} == {instant}


@INSTANTS
def test_each_piece_is_the_piece_tool(
    client: Client, mcp: Mcp, hosts: Hosts, instant: datetime
) -> None:
    hosts.pin(instant)
    keys = piece_keys(client)
    for key in keys:
        by_rest = rest_ok(client, PIECE.format(key=quote(key)))
        assert by_rest["key"] == key
        by_tool = mcp.tool("piece", {"key": key})
        assert to_the_millisecond(by_rest) == to_the_millisecond(by_tool), key
        assert by_rest == by_tool, key


def test_licensing_is_the_licensing_tool(client: Client, mcp: Mcp) -> None:
    by_rest = rest_ok(client, LICENSING)
    assert by_rest == mcp.tool("licensing", {})
    assert [row["key"] for row in by_rest["per_piece"]] == piece_keys(client)


RESOLVABLE = [
    DOCS + "notes.md",
    DOCS + "notes.md?lines=2-3",
    DOCS + "notes.md?as=stat",
    DOCS + "record.json?pointer=/a/1",
    DOCS,
    f"tm://{HOST}/",
    DOCS + "blob.bin",
    DOCS + "blob.bin?as=raw",
    DOCS + "blob.bin?as=raw&range=256-260",
]


@pytest.mark.parametrize("uri", RESOLVABLE)
def test_resolve_is_the_resolve_tool_but_for_nulls(client: Client, mcp: Mcp, uri: str) -> None:
    by_rest = rest_ok(client, RESOLVE, {"uri": uri})
    by_tool = mcp.tool("resolve", {"uri": uri})
    assert by_tool["uri"] == uri and by_tool["links"]
    assert without_nulls(by_tool) == by_tool, "the tool writes no null"
    assert without_nulls(by_rest) == by_tool


@pytest.mark.parametrize("uri", [DOCS + "notes.md", DOCS, DOCS + "blob.bin"])
def test_resolve_is_the_resolve_tool_exactly(client: Client, mcp: Mcp, uri: str) -> None:
    assert rest_ok(client, RESOLVE, {"uri": uri}) == mcp.tool("resolve", {"uri": uri})


def test_templates_are_the_templates_method(client: Client, mcp: Mcp) -> None:
    by_rest = rest_ok(client, TEMPLATES)
    assert by_rest == mcp.result("resources/templates/list", {})["resourceTemplates"]
    assert FS_TEMPLATE in {item["uriTemplate"] for item in by_rest}


def _every_page(fetch: Callable[[str | None], dict[str, Any]]) -> list[dict[str, Any]]:
    pages, cursor = [], None
    for _ in range(50):
        page = fetch(cursor)
        pages.append(page)
        cursor = page.get("nextCursor")
        if cursor is None:
            return pages
    raise AssertionError("the map did not end within 50 pages")


def _map_by_rest(client: Client) -> list[dict[str, Any]]:
    return _every_page(
        lambda cursor: rest_ok(client, RESOURCES, {"cursor": cursor} if cursor else {})
    )


def _map_by_mcp(mcp: Mcp) -> list[dict[str, Any]]:
    return _every_page(
        lambda cursor: mcp.result("resources/list", {"cursor": cursor} if cursor else {})
    )


def test_resources_are_resources_list_but_for_nulls(client: Client, mcp: Mcp) -> None:
    by_rest = _map_by_rest(client)
    by_mcp = _map_by_mcp(mcp)
    uris = [entry["uri"] for page in by_mcp for entry in page["resources"]]
    assert f"tm://{HOST}/" in uris and DOCS in uris
    assert without_nulls(by_rest) == by_mcp


def test_resources_are_resources_list_exactly(client: Client, mcp: Mcp) -> None:
    assert _map_by_rest(client) == _map_by_mcp(mcp)


@pytest.mark.parametrize(
    ("template", "argument", "value"),
    [
        (FS_TEMPLATE, "path", ""),
        (FS_TEMPLATE, "path", "docs/"),
        (FS_TEMPLATE, "path", "docs/no"),
        (FS_TEMPLATE, "path", "nothing-starts-so"),
    ],
)
def test_complete_is_completion_complete(
    client: Client, mcp: Mcp, template: str, argument: str, value: str
) -> None:
    by_rest = rest_ok(
        client, COMPLETE, {"template": template, "argument": argument, "value": value}
    )
    by_mcp = mcp.result(
        "completion/complete",
        {
            "ref": {"type": "ref/resource", "uri": template},
            "argument": {"name": argument, "value": value},
        },
    )
    assert by_rest == by_mcp["completion"]
    assert all(item.startswith(value) for item in by_rest["values"])


def test_health_answers_for_the_configured_mounts(client: Client, settings: Any) -> None:
    body = rest_ok(client, HEALTH)
    assert body["status"] == "ok"
    assert set(body["mounts"]) == set(settings.TM_MOUNTS)
    assert body["database"]["ok"] is True and body["cache"]["ok"] is True


def test_live_and_ready_answer(client: Client) -> None:
    assert rest_ok(client, LIVE) == {"status": "live"}
    assert rest_ok(client, READY)["status"] == "ready"


# --- refusals: the status for the twin's reason, the twin's fields --------------------------------


@pytest.mark.parametrize("key", ["nope", "CHIP-API", "chip api", "halfphi.json"])
def test_an_unknown_piece_is_refused_as_the_piece_tool_refuses_it(
    client: Client, mcp: Mcp, key: str
) -> None:
    status, by_rest = rest_refused(client, PIECE.format(key=quote(key)))
    by_tool = mcp.tool_refusal("piece", {"key": key})
    assert by_tool["reason"] == "not-found"
    assert status == EXPECTED_STATUS[by_tool["reason"]] == 404
    assert by_rest == by_tool
    assert by_rest["valid"] == sorted(piece_keys(client))


@pytest.mark.parametrize(
    ("uri", "reason"),
    [
        (DOCS + "notez.md", "not-found"),
        (DOCS + "guide/deeep.md", "not-found"),
        (DOCS + "%2e%2e/%2e%2e/private/key.txt", "out-of-root"),
        (DOCS + "escape.txt", "out-of-root"),
        (DOCS + ".env", "denied"),
        (DOCS + ".netrc", "denied"),
        (DOCS + "big.txt", "too-large"),
        (DOCS + "notes.md?as=blame", "bad-facet"),
        (DOCS + "?cursor=forged", "bad-cursor"),
        ("file:///etc/passwd", "bad-uri"),
        (f"tm://{HOST}/fs/docs/notes.md#frag", "bad-uri"),
    ],
)
def test_a_resolve_refusal_is_the_resolve_tools_refusal(
    client: Client, mcp: Mcp, uri: str, reason: str
) -> None:
    status, by_rest = rest_refused(client, RESOLVE, {"uri": uri})
    by_tool = mcp.tool_refusal("resolve", {"uri": uri})
    assert by_tool["reason"] == reason
    assert status == EXPECTED_STATUS[reason]
    assert by_rest == by_tool


def test_the_nearest_uris_of_a_typo_resolve_on_both_spellings(client: Client, mcp: Mcp) -> None:
    _, by_rest = rest_refused(client, RESOLVE, {"uri": DOCS + "notez.md"})
    assert by_rest["nearest"][0] == DOCS + "notes.md"
    for nearest in by_rest["nearest"]:
        # each exists: both spellings read it, or both refuse it for the same reason
        reply = client.get(RESOLVE, {"uri": nearest})
        result = mcp.result("tools/call", {"name": "resolve", "arguments": {"uri": nearest}})
        assert (reply.status_code == 200) is (result["isError"] is False), nearest
        if result["isError"]:
            reason = payload(result)["reason"]
            assert reason != "not-found"
            assert (reply.status_code, reply.json()["reason"]) == (EXPECTED_STATUS[reason], reason)
        else:
            assert reply.json()["uri"] == payload(result)["uri"] == nearest


def test_resolve_without_a_uri_is_refused_as_the_tool_refuses_it(client: Client, mcp: Mcp) -> None:
    by_tool = mcp.tool_refusal("resolve", {})
    status, by_rest = rest_refused(client, RESOLVE)
    assert status == EXPECTED_STATUS[by_tool["reason"]]
    assert {k: by_rest.get(k) for k in ("reason", "valid", "required")} == {
        k: by_tool[k] for k in ("reason", "valid", "required")
    }


@pytest.mark.parametrize(
    ("path", "query", "tool", "arguments"),
    [
        (OVERVIEW, {"verbose": "true"}, "overview", {"verbose": True}),
        (PIECES, {"verbose": "true"}, "overview", {"verbose": True}),
        (PIECE, {"colour": "red"}, "piece", {"colour": "red"}),
        (LICENSING, {"verbose": "true"}, "licensing", {"verbose": True}),
        (RESOLVE, {"uri": DOCS + "notes.md", "colour": "red"}, "resolve", {"colour": "red"}),
    ],
    ids=["overview", "pieces", "piece", "licensing", "resolve"],
)
def test_an_unknown_argument_is_refused_as_the_tool_refuses_it(
    client: Client,
    mcp: Mcp,
    path: str,
    query: dict[str, str],
    tool: str,
    arguments: dict[str, Any],
) -> None:
    key = piece_keys(client)[0]
    if tool == "piece":
        arguments = {"key": key, **arguments}
    if tool == "resolve":
        arguments = {"uri": query["uri"], **arguments}
    by_tool = mcp.tool_refusal(tool, arguments)
    assert by_tool["reason"] == "bad-argument"
    status, by_rest = rest_refused(client, path.format(key=key), query)
    assert status == EXPECTED_STATUS[by_tool["reason"]]
    assert {k: by_rest.get(k) for k in ("reason", "valid", "required")} == {
        k: by_tool[k] for k in ("reason", "valid", "required")
    }


@pytest.mark.parametrize(
    ("template", "argument"),
    [("tm://nowhere/{+path}", "path"), (FS_TEMPLATE, "colour"), ("", "path")],
)
def test_a_completion_refusal_is_the_methods_refusal(
    client: Client, mcp: Mcp, template: str, argument: str
) -> None:
    status, by_rest = rest_refused(client, COMPLETE, {"template": template, "argument": argument})
    error = mcp.error(
        "completion/complete",
        {"ref": {"type": "ref/resource", "uri": template}, "argument": {"name": argument}},
    )
    expected = rest_spelling(error)
    assert status == EXPECTED_STATUS[expected["reason"]]
    assert by_rest == expected


def test_a_forged_cursor_is_refused_as_resources_list_refuses_it(client: Client, mcp: Mcp) -> None:
    status, by_rest = rest_refused(client, RESOURCES, {"cursor": "forged"})
    expected = rest_spelling(mcp.error("resources/list", {"cursor": "forged"}))
    assert expected["reason"] == "bad-cursor"
    assert status == EXPECTED_STATUS["bad-cursor"]
    assert by_rest == expected


# --- the rate limit: one bucket, one refusal, two spellings ---------------------------------------


@dataclass(frozen=True)
class Twin:
    path: str
    query: dict[str, str]
    method: str
    params: dict[str, Any] = field(default_factory=dict)


TWINS = [
    pytest.param(
        Twin(OVERVIEW, {}, "tools/call", {"name": "overview", "arguments": {}}), id="overview"
    ),
    pytest.param(
        Twin(PIECES, {}, "tools/call", {"name": "overview", "arguments": {}}), id="pieces"
    ),
    pytest.param(Twin(PIECE, {}, "tools/call", {"name": "piece", "arguments": {}}), id="piece"),
    pytest.param(
        Twin(LICENSING, {}, "tools/call", {"name": "licensing", "arguments": {}}), id="licensing"
    ),
    pytest.param(
        Twin(
            RESOLVE,
            {"uri": DOCS + "notes.md"},
            "tools/call",
            {"name": "resolve", "arguments": {"uri": DOCS + "notes.md"}},
        ),
        id="resolve",
    ),
    pytest.param(
        Twin(
            SEARCH,
            {"q": "notes"},
            "tools/call",
            {"name": "search", "arguments": {"query": "notes"}},
        ),
        id="search",
    ),
    pytest.param(Twin(RESOURCES, {}, "resources/list"), id="resources"),
    pytest.param(Twin(TEMPLATES, {}, "resources/templates/list"), id="templates"),
    pytest.param(
        Twin(
            COMPLETE,
            {"template": FS_TEMPLATE, "argument": "path", "value": "docs/"},
            "completion/complete",
            {
                "ref": {"type": "ref/resource", "uri": FS_TEMPLATE},
                "argument": {"name": "path", "value": "docs/"},
            },
        ),
        id="complete",
    ),
    pytest.param(Twin("/api/v1/prompts", {}, "prompts/list"), id="prompts"),
    pytest.param(
        Twin(
            "/api/v1/prompts/{name}",
            {"address": DOCS + "notes.md"},
            "prompts/get",
            {"name": "explain-address", "arguments": {"address": DOCS + "notes.md"}},
        ),
        id="prompt",
    ),
    pytest.param(
        Twin(
            "/api/v1/prompts/{name}/complete",
            {"argument": "address", "value": DOCS},
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "explain-address"},
                "argument": {"name": "address", "value": DOCS},
            },
        ),
        id="prompt-complete",
    ),
]


def test_every_rest_route_has_a_rate_limit_case() -> None:
    _, prefixes = _registered()
    served = {prefixes[id(rest.router)] + path for path in rest.router.path_operations}
    # The one POST route has its own case: test_over_the_limit_a_proposal_is_refused_alike.
    assert {param.values[0].path for param in TWINS} | {PROPOSALS} == served


@pytest.mark.parametrize("twin", TWINS)
def test_over_the_limit_both_spellings_refuse_alike(small_limit: FakeClock, twin: Twin) -> None:
    client = Client(headers={"X-Forwarded-For": CALLER})
    key = piece_keys(client)[0]
    path = twin.path.format(key=key, name="explain-address")
    params = twin.params
    if twin.params.get("name") == "piece":
        params = {"name": "piece", "arguments": {"key": key}}
    mcp = Mcp(client)
    for _ in range(100):  # spend the bucket on the cheapest route
        if client.get(TEMPLATES).status_code == 429:
            break
    else:
        raise AssertionError("the small limit never refused")

    reply = client.get(path, twin.query)
    assert reply.status_code == EXPECTED_STATUS["rate-limited"]
    by_rest = reply.json()
    error = mcp.error(twin.method, params)
    assert error["code"] == RATE_LIMITED
    expected = rest_spelling(error)
    assert expected["reason"] == "rate-limited"
    assert reply["Retry-After"] == str(expected["retryAfter"])
    assert by_rest == expected

    small_limit.advance(expected["retryAfter"])
    assert client.get(path, twin.query).status_code == 200


@pytest.mark.parametrize(
    "path",
    [
        OVERVIEW,
        PIECES,
        PIECE,
        LICENSING,
        RESOLVE,
        RESOURCES,
        TEMPLATES,
        COMPLETE,
        SEARCH,
        *sorted(PROMPTS),
    ],
)
def test_openapi_declares_the_rate_limit_refusal(client: Client, path: str) -> None:
    schema = rest_ok(client, reverse("api:openapi-json"))
    responses = schema["paths"][path]["get"]["responses"]
    assert "429" in responses
    ref = responses["429"]["content"]["application/json"]["schema"]["$ref"]
    assert set(schema["components"]["schemas"][ref.rsplit("/", 1)[1]]["required"]) == {
        "error",
        "reason",
    }


def _post_proposal(client: Client, body: object) -> Any:
    return client.post(PROPOSALS, json.dumps(body), content_type="application/json")


def test_the_proposals_route_is_the_propose_tools_twin(client: Client, mcp: Mcp) -> None:
    arguments = {"kind": "address", "uri": DOCS + "wished.md", "expected": "a chapter"}
    reply = _post_proposal(client, arguments)
    assert reply.status_code == 200, reply.content
    first = reply.json()
    assert first["status"] == "open" and first["count"] == 1 and first["new"] is True
    assert first["receipt"].startswith(f"tm://{HOST}/proposals/")
    again = mcp.tool("propose", arguments)  # the same proposal: the same receipt, counted
    assert again == {**first, "count": 2, "new": False}
    # The same refusal both ways: the status for its reason, the tool error's fields.
    hostile = {"kind": "address", "uri": DOCS + "x.md", "expected": "a\u202eb"}
    reply = _post_proposal(client, hostile)
    refusal = mcp.tool_refusal("propose", hostile)
    assert refusal["reason"] == "bad-argument" and refusal["field"] == "expected"
    assert (reply.status_code, reply.json()) == (400, refusal)
    exists = {"kind": "address", "uri": DOCS + "notes.md", "expected": "notes"}
    reply = _post_proposal(client, exists)
    assert reply.status_code == EXPECTED_STATUS["exists"] == 409
    assert reply.json() == mcp.tool_refusal("propose", exists)
    unknown = {"kind": "wish", "uri": DOCS + "x.md"}
    reply = _post_proposal(client, unknown)
    assert reply.status_code == 400
    assert reply.json()["valid"] == ["address", "link", "correction", "trail"]
    reply = _post_proposal(client, ["not", "an", "object"])
    assert reply.status_code == 400 and reply.json()["reason"] == "bad-argument"


def test_over_the_limit_a_proposal_is_refused_alike(small_limit: FakeClock) -> None:
    client = Client(headers={"X-Forwarded-For": CALLER})
    mcp = Mcp(client)
    for _ in range(100):  # spend the bucket on the cheapest route
        if client.get(TEMPLATES).status_code == 429:
            break
    else:
        raise AssertionError("the small limit never refused")
    arguments = {"kind": "address", "uri": DOCS + "wished.md", "expected": "a chapter"}
    reply = _post_proposal(client, arguments)
    assert reply.status_code == EXPECTED_STATUS["rate-limited"]
    error = mcp.error("tools/call", {"name": "propose", "arguments": arguments})
    assert error["code"] == RATE_LIMITED
    expected = rest_spelling(error)
    assert reply["Retry-After"] == str(expected["retryAfter"])
    assert reply.json() == expected
