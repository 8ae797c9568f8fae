"""The tools: both tables cross-checked, arguments validated, resolve mirroring resources/read."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.namespace.world import BLOB, HOST, SECRET
from tmsite.mcp import tools
from tmsite.mcp.methods import dispatch
from tmsite.mcp.protocol import INVALID_PARAMS, CallContext, RpcError
from tmsite.mounts.namespace import Namespace

pytestmark = pytest.mark.spec("TL1", "TL2", "TL3", "TL5", "RJ3")

CTX = CallContext(version="2025-11-25")
NEW = CallContext(version="2026-07-28")
DOCS = f"tm://{HOST}/fs/docs/"


def call(name: str, arguments: Any, ctx: CallContext = CTX) -> dict[str, Any]:
    result: dict[str, Any] = dispatch("tools/call", {"name": name, "arguments": arguments}, ctx)
    return result


def payload(result: dict[str, Any]) -> dict[str, Any]:
    (item,) = result["content"]
    assert item["type"] == "text"
    body: dict[str, Any] = json.loads(item["text"])
    if not result["isError"]:
        assert result["structuredContent"] == body
    else:
        assert "structuredContent" not in result
    return body


def test_tables_agree_as_shipped() -> None:
    tools.check_tables(tools.TOOLS, tools.RUNNERS)
    assert [tool.name for tool in tools.TOOLS] == [
        "overview",
        "piece",
        "licensing",
        "resolve",
        "search",
        "propose",
    ]
    # Only propose changes anything (it keeps a proposal), and an identical one is counted.
    hints = {tool.name: tool.to_json([])["annotations"] for tool in tools.TOOLS}
    assert {name for name, h in hints.items() if not h["readOnlyHint"]} == {"propose"}
    assert all(h["idempotentHint"] and not h["destructiveHint"] for h in hints.values())


def test_a_tool_without_a_runner_is_a_startup_error() -> None:
    runners = {k: v for k, v in tools.RUNNERS.items() if k != "piece"}
    with pytest.raises(RuntimeError, match=r"tools with no runner \['piece'\]"):
        tools.check_tables(tools.TOOLS, runners)


def test_a_runner_without_a_tool_is_a_startup_error() -> None:
    runners = {**tools.RUNNERS, "shell": tools.RUNNERS["resolve"]}
    with pytest.raises(RuntimeError, match=r"runners with no tool \['shell'\]"):
        tools.check_tables(tools.TOOLS, runners)


def test_a_tool_advertised_twice_is_a_startup_error() -> None:
    with pytest.raises(RuntimeError):
        tools.check_tables((*tools.TOOLS, tools.TOOLS[0]), tools.RUNNERS)


#: Starts the application as a server does (settings, apps, then the URLconf, which imports the
#: tools), after arranging that the tools module's own ``RUNNERS`` table is changed the moment
#: it exists, before the module's next statement: so the module's import-time cross-check, and
#: nothing else, stands between the mismatch and a running server.
START_WITH_A_MISMATCH = """
import sys

import django
from django.urls import get_resolver

change = sys.argv[1]
changed = []


def edit(frame, event, arg):
    if "RUNNERS" in frame.f_globals and not changed:
        runners = frame.f_globals["RUNNERS"]
        if change == "drop":
            del runners["piece"]
        elif change == "add":
            runners["shell"] = runners["resolve"]
        changed.append(change)
    return edit


def watch(frame, event, arg):
    if frame.f_code.co_name == "<module>" and frame.f_code.co_filename.endswith(
        "tmsite/mcp/tools.py"
    ):
        return edit
    return None


sys.settrace(watch)
django.setup()
get_resolver().url_patterns
sys.settrace(None)
print(f"started; tables changed: {changed}")
"""


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ("drop", "tools with no runner ['piece'], runners with no tool []"),
        ("add", "tools with no runner [], runners with no tool ['shell']"),
    ],
)
def test_tables_that_disagree_stop_the_application_starting(
    tmp_path: Path, change: str, says: str
) -> None:
    """TL2: the cross-check runs when the module is imported, so start-up itself fails."""
    started = _start(tmp_path, change)
    assert started.returncode != 0, started.stdout
    last = started.stderr.strip().splitlines()[-1]
    assert last == f"RuntimeError: tool table and runners disagree: {says}", started.stderr
    assert "tmsite/mcp/tools.py" in started.stderr


def test_the_same_start_up_with_the_tables_as_shipped_succeeds(tmp_path: Path) -> None:
    """The harness above fails only because of the change it makes (and it did reach them)."""
    started = _start(tmp_path, "none")
    assert started.returncode == 0, started.stderr
    assert started.stdout.strip() == "started; tables changed: ['none']"


def _start(tmp_path: Path, change: str) -> subprocess.CompletedProcess[str]:
    root = Path(__file__).resolve().parents[2]
    env = {
        **os.environ,
        "PYTHONPATH": str(root),
        "DJANGO_SETTINGS_MODULE": "tmsite.settings",
        "TM_VAR_DIR": str(tmp_path),
        "TM_SECRET_KEY": "test-only",
    }
    return subprocess.run(
        [sys.executable, "-c", START_WITH_A_MISMATCH, change],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )


def test_every_input_schema_refuses_unknown_keys() -> None:
    listed = dispatch("tools/list", {}, CTX)["tools"]
    for tool in listed:
        assert tool["inputSchema"]["type"] == "object"
        assert tool["inputSchema"]["additionalProperties"] is False
        assert tool["outputSchema"]["type"] == "object"


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({}, "uri: Field required"),
        ({"uri": 5}, "uri: Input should be a valid string"),
        ({"uri": None}, "uri: Input should be a valid string"),
        ({"uri": ["tm://x/"]}, "uri: Input should be a valid string"),
        ({"uri": f"tm://{HOST}/", "colour": "red"}, "colour: not an argument of resolve"),
    ],
)
def test_resolve_arguments_are_validated(
    process_namespace: Namespace, arguments: dict[str, Any], problem: str
) -> None:
    result = call("resolve", arguments)
    assert result["isError"] is True
    body = payload(result)
    assert body["reason"] == "bad-argument"
    assert body["valid"] == ["uri"] and body["required"] == ["uri"]
    assert problem in body["error"] and "uri (string)" in body["error"]


def test_tools_taking_nothing_refuse_any_argument() -> None:
    for name in ("overview", "licensing"):
        body = payload(call(name, {"verbose": True}))
        assert body["reason"] == "bad-argument" and body["valid"] == []
        assert "verbose: not an argument" in body["error"]


def test_piece_argument_types_are_checked() -> None:
    body = payload(call("piece", {"key": 3}))
    assert body["reason"] == "bad-argument" and body["valid"] == ["key"]


@pytest.mark.parametrize("name", ["nope", None, 5, ""])
def test_unknown_tool_is_invalid_params(name: object) -> None:
    with pytest.raises(RpcError) as caught:
        dispatch("tools/call", {"name": name, "arguments": {}}, CTX)
    assert caught.value.code == INVALID_PARAMS
    assert caught.value.data == {
        "valid": ["overview", "piece", "licensing", "resolve", "search", "propose"]
    }


@pytest.mark.parametrize("arguments", [[], "uri", 5])
def test_arguments_that_are_not_an_object_are_invalid_params(arguments: object) -> None:
    with pytest.raises(RpcError) as caught:
        dispatch("tools/call", {"name": "resolve", "arguments": arguments}, CTX)
    assert caught.value.code == INVALID_PARAMS


def test_resolve_reads_text_with_links_in_the_body(process_namespace: Namespace) -> None:
    body = payload(call("resolve", {"uri": DOCS + "notes.md?lines=1-1"}))
    assert body["uri"] == DOCS + "notes.md?lines=1-1"
    assert body["mimeType"] == "text/markdown" and body["text"] == "one\n"
    assert {"rel": "describedby", "href": DOCS + "notes.md?as=stat"} in body["links"]
    listed = payload(call("resolve", {"uri": DOCS}))
    names = [child["name"] for child in json.loads(listed["text"])["children"]]
    assert "notes.md" in names and "guide/" in names


def test_resolve_binary_gives_size_and_a_note_unless_raw_is_asked(
    process_namespace: Namespace,
) -> None:
    plain = payload(call("resolve", {"uri": DOCS + "blob.bin"}))
    assert plain["bytes"] == len(BLOB)
    assert plain["mimeType"] == "application/octet-stream"
    assert "?as=raw" in plain["note"]
    assert "blob" not in plain and "text" not in plain
    raw = payload(call("resolve", {"uri": DOCS + "blob.bin?as=raw"}))
    assert raw["encoding"] == "base64" and raw["bytes"] == len(BLOB)
    assert base64.b64decode(raw["blob"]) == BLOB
    part = payload(call("resolve", {"uri": DOCS + "blob.bin?as=raw&range=256-260"}))
    assert base64.b64decode(part["blob"]) == BLOB[256:260]
    assert part["uri"] == DOCS + "blob.bin?as=raw&range=256-260"


@pytest.mark.parametrize("ctx", [CTX, NEW], ids=["2025", "2026"])
@pytest.mark.parametrize(
    "uri",
    [
        DOCS + "notez.md",
        DOCS + "%2e%2e/%2e%2e/private/key.txt",
        DOCS + "escape.txt",
        DOCS + ".env",
        DOCS + "big.txt",
        DOCS + "notes.md?as=blame",
        DOCS + "notes.md?lines=9-9",
        DOCS + "?cursor=forged",
        DOCS + "notes.md?as=raw&as=stat",
        "tm://elsewhere/",
        "file:///etc/passwd",
        f"tm://{HOST}/fs/docs/notes.md#frag",
    ],
)
def test_a_refusal_through_resolve_carries_what_the_protocol_error_carries(
    process_namespace: Namespace, ctx: CallContext, uri: str
) -> None:
    with pytest.raises(RpcError) as caught:
        dispatch("resources/read", {"uri": uri}, ctx)
    protocol = caught.value
    result = call("resolve", {"uri": uri}, ctx)
    assert result["isError"] is True
    body = payload(result)
    assert body.pop("error") == protocol.message
    assert body == protocol.data
    assert body["reason"] in {
        "not-found",
        "out-of-root",
        "denied",
        "too-large",
        "bad-facet",
        "bad-cursor",
        "bad-uri",
    }
    assert SECRET not in json.dumps(result) and SECRET not in json.dumps(protocol.to_json())
