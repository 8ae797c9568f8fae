"""The ``propose`` tool's input schema says which fields each kind takes and requires.

``tools/list`` over real loopback HTTP: the schema is an object (every field in
``properties``, as a client that reads no further sees them) with a ``oneOf`` discriminated by
``kind``: one branch a kind, naming only the fields that kind takes and requiring those it
needs. Checked with a JSON Schema validator: each kind's example matches its branch alone, and
a proposal missing a field its kind requires, or carrying one of another kind, matches none.
"""

from __future__ import annotations

from typing import Any

import httpx
import jsonschema
import pytest

from tests.proposals.conftest import BASE, PATTERN, A, B

pytestmark = [pytest.mark.spec("PROP1", "TL1"), pytest.mark.django_db(transaction=True)]

MISSING = f"{BASE}/fs/docs/missing.md"
EXAMPLES: dict[str, dict[str, Any]] = {
    "address": {"kind": "address", "uri": MISSING, "expected": "x"},
    "link": {"kind": "link", "from": A, "rel": "tm:generated-by", "to": B, "why": "w"},
    "correction": {"kind": "correction", "uri": PATTERN, "field": "description", "value": "v"},
    "trail": {
        "kind": "trail",
        "name": "t",
        "title": "t",
        "description": "d",
        "steps": [{"uri": A, "note": "a"}],
    },
}
REQUIRED = {
    "address": ["kind", "uri", "expected"],
    "link": ["kind", "from", "rel", "to", "why"],
    "correction": ["kind", "uri", "field", "value"],
    "trail": ["kind", "name", "title", "description", "steps"],
}


@pytest.fixture
def schema(box: Any, live_server: Any) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"MCP-Protocol-Version": "2025-06-18"}
    reply = httpx.post(f"{live_server.url}/api/mcp", json=body, headers=headers, timeout=30)
    [tool] = [t for t in reply.json()["result"]["tools"] if t["name"] == "propose"]
    value: dict[str, Any] = tool["inputSchema"]
    return value


def branches(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The ``oneOf`` branches by the ``kind`` each one fixes."""
    return {branch["properties"]["kind"]["const"]: branch for branch in schema["oneOf"]}


def test_each_kind_has_a_branch_with_its_fields_and_what_it_requires(
    schema: dict[str, Any],
) -> None:
    assert schema["type"] == "object" and schema["required"] == ["kind"]
    assert schema["properties"]["kind"]["enum"] == list(EXAMPLES)
    by_kind = branches(schema)
    assert list(by_kind) == list(EXAMPLES)
    for kind, branch in by_kind.items():
        assert branch["required"] == REQUIRED[kind]
        assert branch["additionalProperties"] is False
    assert set(by_kind["correction"]["properties"]) == {
        "kind",
        "uri",
        "entry",
        "field",
        "value",
        "why",
    }
    assert set(by_kind["address"]["properties"]) == {"kind", "uri", "expected"}
    assert by_kind["address"]["properties"]["uri"]["type"] == "string"  # required: not null
    value = by_kind["correction"]["properties"]["value"]["anyOf"]
    assert {"type": "null"} not in value and {"type": "string"} in value


def test_a_validator_matches_each_example_to_its_kind_alone(schema: dict[str, Any]) -> None:
    validator = jsonschema.Draft202012Validator(schema)
    for kind, example in EXAMPLES.items():
        validator.validate(example)
        matched = [
            branch["properties"]["kind"]["const"]
            for branch in schema["oneOf"]
            if jsonschema.Draft202012Validator({**branch, "$defs": schema["$defs"]}).is_valid(
                example
            )
        ]
        assert matched == [kind]
    missing_why = {k: v for k, v in EXAMPLES["link"].items() if k != "why"}
    other_kinds_field = {**EXAMPLES["address"], "rel": "tm:source"}
    for wrong in (missing_why, other_kinds_field, {"kind": "write", "uri": A}):
        assert not validator.is_valid(wrong), wrong
