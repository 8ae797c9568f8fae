"""``manage.py tm_servers`` and the index driver, with real peers where a server is asked."""

from __future__ import annotations

import io
import re
import sys
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from tests.mcpmount.conftest import PEERS
from tmsite.servers import grammar
from tmsite.servers.changes import correct_entry
from tmsite.servers.index import derive_tool, rederive
from tmsite.servers.management.commands.tm_servers import BY, Command
from tmsite.servers.models import (
    MapEntry,
    MapEntryChange,
    McpServer,
    ServerChange,
    ServerDeclaration,
)

pytestmark = [pytest.mark.django_db, pytest.mark.spec("MCP")]


@pytest.fixture(autouse=True)
def operator_configuration(settings: Any, tmp_path: Any) -> None:
    """The operator's programs file (written by ``add --stdio``) and the loopback peers' host."""
    settings.TM_STDIO_PROGRAMS = str(tmp_path / "deploy" / "programs.json")
    settings.TM_MCP_ALLOWED_HOSTS = ["127.0.0.1"]


def form(client: Client, url: str) -> dict[str, str]:
    """The change form's inputs as the browser would post them."""
    html = client.get(url).content.decode()
    data = {}
    for tag in re.findall(r"<input[^>]*>", html):
        name = re.search(r'name="([^"]+)"', tag)
        value = re.search(r'value="([^"]*)"', tag)
        if name and 'type="submit"' not in tag and 'type="checkbox"' not in tag:
            data[name.group(1)] = value.group(1) if value else ""
    for name, value in re.findall(
        r'<textarea[^>]*name="([^"]+)"[^>]*>\s*(.*?)</textarea>', html, re.S
    ):
        data[name] = value.replace("&quot;", '"').replace("&amp;", "&")
    for name, block in re.findall(r'<select[^>]*name="([^"]+)"[^>]*>(.*?)</select>', html, re.S):
        chosen = re.search(r'<option value="([^"]*)"[^>]*selected', block)
        data[name] = chosen.group(1) if chosen else ""
    return data


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("tm_servers", *args, stdout=out, stderr=out)
    return out.getvalue()


@pytest.mark.slow
def test_add_list_probe_remove() -> None:
    out = run(
        "add",
        "koyu",
        "--description",
        "koyu",
        "--stdio",
        sys.executable,
        str(PEERS / "koyu_peer.py"),
    )
    assert out.endswith("koyu: saved (stdio)\n")
    server = McpServer.objects.get(name="koyu")
    assert server.program == "koyu"
    assert list(server.launch().argv) == [sys.executable, str(PEERS / "koyu_peer.py")]
    assert [c.field for c in ServerChange.objects.filter(server=server)] == ["*"]
    assert "never asked" in run("list")
    out = run("probe", "koyu")
    assert out.startswith("koyu: answered (2025-11-25, 12 tools, 0 resources")
    assert "koyu: map +0" in out
    assert "\tanswered\t" in run("list")
    run("add", "web", "--http", "http://127.0.0.1:9/mcp", "--token-setting", "WEB_TOKEN")
    assert McpServer.objects.get(name="web").transport == "http"
    assert run("remove", "web") == "web: removed\n"
    with pytest.raises(CommandError, match="no server named web"):
        run("probe", "web")
    with pytest.raises(CommandError, match="url"):
        run("add", "bad", "--http", "ftp://example.org/")


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        (["uv", "run", "--", "server"], ["uv", "run", "--", "server"]),
        (["uv", "run", "--", "server", "--", "-x"], ["uv", "run", "--", "server", "--", "-x"]),
        (
            ["prog", "--flag", "-v", "--description", "d"],
            ["prog", "--flag", "-v", "--description", "d"],
        ),
        (["prog", "--stdio", "inner"], ["prog", "--stdio", "inner"]),
        (["--", "prog", "--", "a"], ["prog", "--", "a"]),  # only a leading -- separates
        (["prog"], ["prog"]),
    ],
)
def test_stdio_takes_the_rest_of_the_command_line_verbatim(
    given: list[str], stored: list[str]
) -> None:
    said = run("add", "srv", "--description", "one", "--stdio", *given)
    assert said.endswith("srv: saved (stdio)\n")
    server = McpServer.objects.get(name="srv")
    assert list(server.launch().argv) == stored
    assert server.description == "one"
    # The command line as manage.py parses it (run_from_argv) reads the same.
    parsed = (
        Command()
        .create_parser("manage.py", "tm_servers")
        .parse_args(["add", "srv", "--stdio", *given])
    )
    assert (parsed.action, parsed.name, parsed.stdio, parsed.http) == ("add", "srv", given, None)


def test_stdio_equals_form_and_its_errors() -> None:
    run("add", "srv", "--stdio=uv", "run", "--", "server")
    assert list(McpServer.objects.get(name="srv").launch().argv) == ["uv", "run", "--", "server"]
    with pytest.raises(CommandError, match="--stdio needs a program"):
        run("add", "empty", "--stdio")
    with pytest.raises(CommandError, match="--stdio needs a program"):
        run("add", "empty", "--stdio", "--")
    with pytest.raises(CommandError, match="not allowed with argument"):
        run("add", "both", "--http", "http://127.0.0.1:9/mcp", "--stdio", "prog")
    with pytest.raises(CommandError, match="unrecognized arguments: --stdio"):
        run("probe", "srv", "--stdio", "prog")
    assert not McpServer.objects.filter(name__in=["empty", "both"]).exists()


@pytest.mark.slow
def test_ensure_demo_is_idempotent_and_corrects_nothing() -> None:
    first = run("ensure-demo")
    assert "elements: map +1 ~0 -0; 0 kept as corrected" in first
    assert "elements/element/{symbol}: exact" in first
    second = run("ensure-demo")
    assert "elements: map +0 ~0 -0; 0 kept as corrected" in second
    assert McpServer.objects.count() == 1
    entry = MapEntry.objects.get()
    assert (entry.path_template, entry.confidence, entry.touched, entry.origin) == (
        "element/{symbol}",
        "exact",
        False,
        "derived",
    )
    assert entry.notes.startswith("Confirmed: get_element reads one element by its symbol")
    actions = list(MapEntryChange.objects.values_list("action", "field", "changed_by_name"))
    assert actions == [("derive", "*", "index driver")]


@pytest.mark.slow
def test_ensure_demo_hands_back_what_it_once_corrected_but_keeps_a_maintainers() -> None:
    run("ensure-demo")
    entry = MapEntry.objects.get()
    # what ensure-demo did before: its confirmation kept as a correction, the entry touched
    correct_entry(entry, {"notes": "Confirmed by an older ensure-demo."}, None, BY)
    assert MapEntry.objects.get().touched is True
    assert "1 kept as corrected" in run("derive", "elements")
    again = run("ensure-demo")
    assert "0 kept as corrected" in again
    entry = MapEntry.objects.get()
    assert (entry.touched, entry.confidence) == (False, "exact")
    assert entry.notes.startswith("Confirmed: get_element")

    correct_entry(entry, {"kind": "atom"}, None, "admin")
    assert "1 kept as corrected" in run("ensure-demo")
    assert MapEntry.objects.get().touched is True


def tool(name: str, props: dict[str, Any], required: list[str], **extra: Any) -> dict[str, Any]:
    schema = {"type": "object", "properties": props, "required": required}
    return {"name": name, "inputSchema": schema, **extra}


S = {"type": "string"}
I = {"type": "integer"}  # noqa: E741


@pytest.mark.parametrize(
    ("declared", "expected"),
    [
        (
            tool("get_element", {"symbol": S}, ["symbol"]),
            ("element/{symbol}", "element", "inferred"),
        ),
        (
            tool("fetchUserProfile", {"id": I}, ["id"]),
            ("user-profile/{id}", "user-profile", "inferred"),
        ),
        (
            tool("read_row", {"table": S, "id": I}, ["table", "id"]),
            ("row/{table}/{id}", "row", "inferred"),
        ),
        (
            tool("station", {"wmo": S}, ["wmo"], annotations={"readOnlyHint": True}),
            ("station/{wmo}", "station", "low"),
        ),
        (
            tool("search_x", {"query": S}, ["query"]),
            "required argument 'query' is not identifier-like",
        ),
        (
            tool("list_elements", {"page": I}, []),
            "no required arguments: it does not name one thing",
        ),
        (
            tool("get_thing", {"id": S}, ["id"], annotations={"destructiveHint": True}),
            "its annotations say it writes",
        ),
        (
            tool("list_x", {"id": S}, ["id"], annotations={"readOnlyHint": True}),
            "its name does not start like a read of one thing",
        ),
        (
            tool("get_blob", {"data": {"type": "object"}}, ["data"]),
            "required argument 'data' is not identifier-like",
        ),
        (tool("get_map", {"id": S}, ["id"]), ("map/{id}", "map", "inferred")),
    ],
)
def test_derive_tool(declared: dict[str, Any], expected: Any) -> None:
    found = derive_tool(declared)
    if isinstance(expected, str):
        assert found == expected
    else:
        assert not isinstance(found, str)
        assert (found.path_template, found.kind, found.confidence) == expected


def test_a_reserved_first_segment_is_skipped() -> None:
    server = McpServer.objects.create(name="s", program="elements")
    ServerDeclaration.objects.create(
        server=server,
        asked_at="2026-01-01T00:00:00Z",
        seconds=0,
        protocol_version="x",
        era="initialize",
        tools=[tool("get_tools", {"id": S}, ["id"]), tool("get_a", {"id": S}, ["id"])],
    )
    summary = rederive(server)
    assert summary.added == ["a/{id}"]
    assert summary.skipped["get_tools"].startswith("its path would be 'tools/{id}'")


def test_rederive_updates_untouched_removes_gone_and_keeps_corrections() -> None:
    server = McpServer.objects.create(name="s", program="elements")

    def declare(*tools: dict[str, Any]) -> None:
        ServerDeclaration.objects.create(
            server=server,
            asked_at=f"2026-01-0{ServerDeclaration.objects.count() + 1}T00:00:00Z",
            seconds=0,
            protocol_version="x",
            era="initialize",
            tools=list(tools),
        )

    declare(
        tool("get_a", {"id": S}, ["id"]),
        tool("get_b", {"id": S}, ["id"]),
        tool("get_c", {"id": S}, ["id"]),
    )
    assert rederive(server).added == ["a/{id}", "b/{id}", "c/{id}"]
    b = MapEntry.objects.get(tool="get_b")
    correct_entry(b, {"kind": "bee", "confidence": "exact"}, None, "maintainer")
    declare(tool("get_a", {"key": S}, ["key"]), tool("get_b", {"key": S}, ["key"]))
    summary = rederive(server)
    assert (summary.updated, summary.removed, summary.kept) == (["a/{key}"], ["c/{id}"], ["b/{id}"])
    assert [(e.path_template, e.kind, e.confidence) for e in MapEntry.objects.all()] == [
        ("a/{key}", "a", "inferred"),
        ("b/{id}", "bee", "exact"),
    ]
    assert MapEntryChange.objects.filter(action="remove", path_template="c/{id}").count() == 1


@pytest.mark.parametrize(
    ("template", "why"),
    [
        ("{id}", "first segment"),
        ("map/{id}", "record's own child"),
        ("a/{id}/{id}", "appears twice"),
        ("a/../b", "segment"),
        ("a/b c", "segment"),
        ("/a", "segments separated"),
        ("a/b/c/d/e/f/g/h/i", "at most 8"),
    ],
)
def test_template_grammar(template: str, why: str) -> None:
    with pytest.raises(grammar.GrammarError, match=why):
        grammar.parse_template(template)


def test_argument_mapping_grammar() -> None:
    assert grammar.check_arguments({"x": "{id}", "n": 3}, "a/{id}") == {"x": "{id}", "n": 3}
    with pytest.raises(grammar.GrammarError, match="lacks"):
        grammar.check_arguments({"x": "{other}"}, "a/{id}")
    with pytest.raises(grammar.GrammarError, match="no argument takes"):
        grammar.check_arguments({}, "a/{id}")
