"""Prepared answers: the same bytes as the ordinary path, the request id spliced in, and built
again when what they depend on changes (the public front door, the mounts, the method table)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from tmsite.mcp import methods, prepared
from tmsite.mcp.protocol import STATELESS_VERSION
from tmsite.mounts import registry

pytestmark = [pytest.mark.spec("T7", "T10"), pytest.mark.django_db]

MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
}
#: (method, params) of every answer that is prepared, per era.
LEGACY = [
    ("ping", {}),
    ("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}}),
    ("initialize", {"protocolVersion": "1999-01-01"}),
    ("tools/list", {}),
    ("resources/templates/list", {}),
    ("prompts/list", {}),
    ("resources/read", {"uri": "tm://tinymachines/"}),
]
MODERN = [
    ("server/discover", {}),
    ("tools/list", {}),
    ("resources/templates/list", {}),
    ("prompts/list", {}),
    ("resources/read", {"uri": "tm://tinymachines/"}),
]
IDS: list[Any] = [1, 0, -7, 2**70, "a", "", "ключ-🔑", 'quote " and \\ back', "\u2028"]


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    prepared.clear()
    registry.reset()
    yield
    prepared.clear()
    registry.reset()


def post(method: str, params: dict[str, Any], rid: Any, version: str = "2025-11-25") -> bytes:
    headers = {"MCP-Protocol-Version": version}
    if version == STATELESS_VERSION:
        params = {**params, "_meta": MODERN_META}
        headers["Mcp-Method"] = method
        if "uri" in params:
            headers["Mcp-Name"] = params["uri"]
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    reply = Client().post(
        "/api/mcp", json.dumps(body), content_type="application/json", headers=headers
    )
    assert reply.status_code == 200, reply.content
    return reply.content


def ordinary(method: str, params: dict[str, Any], rid: Any, version: str) -> bytes:
    """The answer with nothing prepared: what every request got before."""
    saved = prepared.variant
    prepared.variant = lambda *args: None  # type: ignore[assignment]
    try:
        return post(method, params, rid, version)
    finally:
        prepared.variant = saved  # type: ignore[assignment]


@pytest.mark.parametrize(
    ("version", "method", "params"),
    [("2025-11-25", m, p) for m, p in LEGACY] + [(STATELESS_VERSION, m, p) for m, p in MODERN],
)
def test_a_prepared_answer_is_the_ordinary_answer_byte_for_byte(
    version: str, method: str, params: dict[str, Any]
) -> None:
    for rid in IDS:
        first = post(method, params, rid, version)  # built (the first) or prepared
        again = post(method, params, rid, version)  # prepared
        assert first == again == ordinary(method, params, rid, version), rid
        assert json.loads(again)["id"] == rid
    assert any(key[0] == method for key in prepared._entries), "the answer was prepared"


def test_string_ids_are_echoed_as_sent_unicode_and_escapes_included() -> None:
    for rid in ("ключ-🔑", 'a"b', "back\\slash", "tab\tline\n", "\u2028"):
        answer = post("tools/list", {}, rid)
        assert answer.startswith(
            b'{"jsonrpc":"2.0","id":' + json.dumps(rid, ensure_ascii=False).encode()
        )
        assert json.loads(answer)["id"] == rid


def test_a_new_public_front_door_is_in_the_next_tools_list(settings: Any) -> None:
    settings.TM_PUBLIC_URL = "https://first.example"
    icons = json.loads(post("tools/list", {}, 1))["result"]["tools"][0]["icons"]
    assert all(icon["src"].startswith("https://first.example/") for icon in icons)
    settings.TM_PUBLIC_URL = "https://second.example"
    icons = json.loads(post("tools/list", {}, 2))["result"]["tools"][0]["icons"]
    assert all(icon["src"].startswith("https://second.example/") for icon in icons)
    init = json.loads(post("initialize", {"protocolVersion": "2025-11-25"}, 3))["result"]
    assert init["serverInfo"]["websiteUrl"] == "https://second.example/"


def test_initialize_is_prepared_per_negotiated_version() -> None:
    for asked in ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2030-01-01"):
        for rid in (1, 2):
            result = json.loads(post("initialize", {"protocolVersion": asked}, rid))["result"]
            assert result["protocolVersion"] == (asked if asked < "2030" else "2025-11-25")


def test_a_mount_change_is_in_the_next_root_listing(settings: Any) -> None:
    def mounts() -> list[str]:
        text = json.loads(post("resources/read", {"uri": "tm://tinymachines/"}, 1))
        body = json.loads(text["result"]["contents"][0]["text"])
        return [child["uri"] for child in body["children"]]

    everything = mounts()
    assert "tm://tinymachines/git/" in everything
    settings.TM_MOUNTS = ["fs", "trail"]
    registry.reset()
    assert mounts() == ["tm://tinymachines/fs/", "tm://tinymachines/trail/"]
    templates = json.loads(post("resources/templates/list", {}, 2))["result"]
    assert not any("/git/" in t["uriTemplate"] for t in templates["resourceTemplates"])
    del settings.TM_MOUNTS
    registry.reset()
    assert mounts() == everything


def test_a_new_handler_in_the_method_table_answers_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    assert json.loads(post("ping", {}, 1))["result"] == {}
    monkeypatch.setitem(
        methods.METHODS, "ping", methods.Method(lambda params, ctx: {"changed": True})
    )
    assert json.loads(post("ping", {}, 2))["result"] == {"changed": True}


def test_params_that_could_change_the_answer_take_the_ordinary_path() -> None:
    post("prompts/list", {}, 1)
    refused = json.loads(post("prompts/list", {"cursor": "nope"}, 2))
    assert refused["error"]["data"]["reason"] == "bad-cursor"
    assert prepared.variant("resources/read", {"uri": "tm://tinymachines"}, _ctx()) is None
    assert prepared.variant("resources/list", {}, _ctx()) is None


def test_the_method_table_says_which_answers_are_prepared(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[int] = []

    def count(params: dict[str, Any], ctx: Any) -> dict[str, Any]:
        calls.append(1)
        return {"n": len(calls)}

    monkeypatch.setitem(methods.METHODS, "ping", methods.Method(count))
    assert [json.loads(post("ping", {}, rid))["result"] for rid in (1, 2)] == [{"n": 1}, {"n": 2}]
    assert prepared.variant("ping", {}, _ctx()) is None, "a row without the flag: built anew"
    monkeypatch.setitem(methods.METHODS, "ping", methods.Method(count, prepared="fixed"))
    assert [json.loads(post("ping", {}, rid))["result"] for rid in (3, 4)] == [{"n": 3}, {"n": 3}]
    assert {name for name, row in methods.METHODS.items() if row.prepared} == {
        "initialize",
        "ping",
        "server/discover",
        "tools/list",
        "resources/templates/list",
        "prompts/list",
    }


def test_every_root_read_is_counted_as_served() -> None:
    from tmsite.kinds.counter import COUNTER

    COUNTER.reset()
    for rid in range(3):
        post("resources/read", {"uri": "tm://tinymachines/"}, rid)
    assert COUNTER._pending["mounts"].count == 3


def _ctx() -> Any:
    from tmsite.mcp.protocol import CallContext

    return CallContext()
