"""The recipes of ``docs/clients.md``, read out of the document and run as it writes them.

* Claude Desktop's configuration block: its ``command`` and ``args`` (the document's placeholder
  path replaced by this checkout's) started as a real stdio server by the official SDK's stdio
  client, from a directory that is not the checkout and with only the SDK's default environment
  and the block's ``env`` (plus this run's ``TM_VAR_DIR``), which is about what the app gives a
  program it starts; the server answers the handshake and ``tools/list``, and serves this
  checkout's files (this very guide).
* VS Code's, Cursor's and the generic JSON blocks: the keys each client reads, the endpoint URL,
  and that URL's path answering ``initialize`` on a live server.
* The ``claude mcp add`` and MCP Inspector command lines: the endpoint, ``--transport http``,
  and each Inspector ``--method`` run as the JSON-RPC request it sends, on a live server.
* Every curl command: one ``initialize``-era protocol version throughout (the newest the
  server speaks), the 2026-07-28 requests only under the heading that names that revision, and
  each request sent as written (its headers and body, the host swapped for the live server's)
  with its real answer checked.

Spec: T1, T4, T7, T10, T11.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tmsite.mcp.methods import METHODS
from tmsite.mcp.protocol import (
    INITIALIZE_VERSIONS,
    LATEST_INITIALIZE_VERSION,
    META_LINKS_KEY,
    STATELESS_VERSION,
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.spec("T1", "T4", "T7", "T10", "T11"),
]

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "clients.md"
#: Documents that once carried recipes of their own: they may link to the guide, never disagree.
OTHERS = [ROOT / "README.md", ROOT / "docs" / "mcp.md", ROOT / "docs" / "ja" / "mcp.md"]
ENDPOINT = "http://127.0.0.1:8000/api/mcp"
PLACEHOLDER = "/ABSOLUTE/PATH/TO/tmsite"
TOOLS = ["overview", "piece", "licensing", "resolve", "search", "propose"]
SERVER_NAME = "tinymachines"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
_HEADING = re.compile(r"^(#{1,6}) (.+)$", re.MULTILINE)
_META_VERSION = "io.modelcontextprotocol/protocolVersion"


@dataclass
class Block:
    lang: str
    text: str
    heading: str  # the nearest heading above, level 2 (the client) and below joined by " / "


@dataclass
class Curl:
    heading: str
    url: str
    method: str
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    raw: str | None = None
    shows_status: bool = False

    def versions(self) -> set[str]:
        """Every protocol version the command names: header, ``protocolVersion``, ``_meta``."""
        found = {self.headers[h] for h in self.headers if h == "mcp-protocol-version"}
        params = self.body.get("params", {}) if isinstance(self.body, dict) else {}
        if "protocolVersion" in params:
            found.add(params["protocolVersion"])
        if _META_VERSION in params.get("_meta", {}):
            found.add(params["_meta"][_META_VERSION])
        return found


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, each with the headings it sits under."""
    text = path.read_text(encoding="utf-8")
    heads = [(m.start(), len(m.group(1)), m.group(2)) for m in _HEADING.finditer(text)]
    found = []
    for match in _FENCE.finditer(text):
        trail: dict[int, str] = {}
        for start, level, title in heads:
            if start > match.start():
                break
            trail = {k: v for k, v in trail.items() if k < level}
            trail[level] = title
        heading = " / ".join(trail[k] for k in sorted(trail) if k >= 2)
        found.append(Block(match.group(1), match.group(2), heading))
    return found


def json_block(client: str) -> dict[str, Any]:
    """The one JSON block under the level-2 heading that starts with ``client``."""
    [block] = [b for b in blocks(GUIDE) if b.lang == "json" and b.heading.startswith(client)]
    parsed: dict[str, Any] = json.loads(block.text)
    return parsed


def command_lines(path: Path) -> list[tuple[str, list[str]]]:
    """Each shell command of the file's ``sh`` blocks (continuations joined), as words."""
    lines = []
    for block in blocks(path):
        if block.lang == "sh":
            for line in block.text.replace("\\\n", " ").splitlines():
                if line.strip() and not line.lstrip().startswith("#"):
                    lines.append((block.heading, shlex.split(line)))
    return lines


def curls(path: Path) -> list[Curl]:
    """The curl commands of a file, parsed; an option this parser does not know fails."""
    found = []
    for heading, words in command_lines(path):
        if words[0] != "curl":
            continue
        curl = Curl(heading=heading, url="", method="GET")
        rest = iter(words[1:])
        for word in rest:
            if word in ("-s", "-N"):  # quiet; unbuffered (a stream is shown as it comes)
                continue
            if word == "-i":
                curl.shows_status = True
            elif word == "-H":
                name, _, value = next(rest).partition(":")
                curl.headers[name.strip().lower()] = value.strip()
            elif word == "-d":
                curl.raw = next(rest)
                curl.body = json.loads(curl.raw)
                curl.method = "POST"
            elif word.startswith("http"):
                curl.url = word
            else:
                raise AssertionError(f"curl option {word!r} is not understood by this test")
        found.append(curl)
    return found


def live(live_server: Any, url: str) -> str:
    """The document's URL on the live server: same path, the live server's origin."""
    assert urlsplit(url)._replace(path="").geturl() == "http://127.0.0.1:8000", url
    return f"{live_server.url}{urlsplit(url).path}"


def post(url: str, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    with httpx.Client(timeout=30) as client:
        return client.post(url, json=body, headers=headers or {})


def initialize(version: str = LATEST_INITIALIZE_VERSION) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "recipes", "version": "1"},
        },
    }


# --- Claude Desktop: the block's command, run -----------------------------------------------


def desktop_server(tmp_path: Path) -> StdioServerParameters:
    """The Claude Desktop block as the app would start it, on this checkout."""
    entry = json_block("Claude Desktop")["mcpServers"][SERVER_NAME]
    assert set(entry) == {"command", "args", "env"}
    command, args = entry["command"], entry["args"]
    assert command.startswith(PLACEHOLDER + "/") and command.endswith("/.venv/bin/python")
    assert args[0] == f"{PLACEHOLDER}/manage.py" and args[1:] == ["mcp_stdio"], args
    venv_python = ROOT / command.removeprefix(PLACEHOLDER + "/")
    return StdioServerParameters(
        command=str(venv_python) if venv_python.exists() else sys.executable,
        args=[args[0].replace(PLACEHOLDER, str(ROOT)), *args[1:]],
        # This run's own var/, never the checkout's, which `make setup` fills.
        env={**entry["env"], "TM_VAR_DIR": os.environ["TM_VAR_DIR"]},
        cwd=tmp_path,
    )


def test_the_claude_desktop_block_runs_as_a_stdio_server(tmp_path: Path) -> None:
    server = desktop_server(tmp_path)

    async def scenario() -> dict[str, Any]:
        async with (
            stdio_client(server) as (read, write),
            ClientSession(read, write) as session,
        ):
            init = await session.initialize()
            tools = await session.list_tools()
            root = await session.read_resource(f"tm://{SERVER_NAME}/")
            guide = await session.read_resource(f"tm://{SERVER_NAME}/fs/docs/clients.md")
            return {"init": init, "tools": tools, "root": root, "guide": guide}

    seen = anyio.run(scenario)
    assert seen["init"].protocol_version == LATEST_INITIALIZE_VERSION
    assert seen["init"].server_info.name == SERVER_NAME
    assert [t.name for t in seen["tools"].tools] == TOOLS
    assert str(seen["root"].contents[0].uri) == f"tm://{SERVER_NAME}/"
    [guide] = seen["guide"].contents  # this checkout's files, wherever the app starts it
    assert guide.text == GUIDE.read_text(encoding="utf-8")


def test_the_desktop_env_names_the_front_doors_the_settings_read() -> None:
    env = json_block("Claude Desktop")["mcpServers"][SERVER_NAME]["env"]
    settings_source = (ROOT / "tmsite" / "settings.py").read_text(encoding="utf-8")
    assert env == {
        "TM_FRONT_DOOR": "http://127.0.0.1:8000",
        "TM_DEMO_FRONT_DOOR": "http://127.0.0.1:8001",
    }
    for name in env:
        assert f'os.environ.get("{name}"' in settings_source, name


def test_no_document_gives_claude_desktop_a_url() -> None:
    """The configuration file starts programs; a remote server there is the old, wrong recipe."""
    for path in [GUIDE, *OTHERS]:
        for block in blocks(path):
            if block.lang == "json" and "mcpServers" in block.text:
                entries = json.loads(block.text)["mcpServers"].values()
                if block.heading.startswith("Claude Desktop") or path != GUIDE:
                    assert all("url" not in e for e in entries), (path, block.heading)


# --- the JSON blocks of the HTTP clients ------------------------------------------------------


def test_every_json_block_of_the_guide_parses() -> None:
    found = [b for b in blocks(GUIDE) if b.lang == "json"]
    assert len(found) == 4
    for block in found:
        json.loads(block.text)


def test_the_vs_code_block_has_servers_of_type_http(live_server: Any) -> None:
    config = json_block("VS Code")
    assert set(config) == {"servers"}
    assert config["servers"][SERVER_NAME] == {"type": "http", "url": ENDPOINT}
    answer = post(live(live_server, ENDPOINT), initialize())
    assert answer.status_code == 200
    assert answer.json()["result"]["serverInfo"]["name"] == SERVER_NAME


def test_the_cursor_and_generic_blocks_name_the_endpoint(live_server: Any) -> None:
    assert json_block("Cursor") == {"mcpServers": {SERVER_NAME: {"url": ENDPOINT}}}
    assert json_block("Other clients") == {
        "mcpServers": {SERVER_NAME: {"type": "http", "url": ENDPOINT}}
    }
    answer = post(live(live_server, ENDPOINT), initialize())
    assert answer.json()["result"]["protocolVersion"] == LATEST_INITIALIZE_VERSION


# --- command lines: Claude Code and the Inspector ---------------------------------------------


def test_claude_code_adds_the_endpoint_over_http() -> None:
    adds = [w for _, w in command_lines(GUIDE) if w[:3] == ["claude", "mcp", "add"]]
    adds += [w for _, w in command_lines(ROOT / "README.md") if w[:3] == ["claude", "mcp", "add"]]
    assert adds
    for words in adds:
        assert words == ["claude", "mcp", "add", "--transport", "http", SERVER_NAME, ENDPOINT]


def inspector_request(words: list[str]) -> dict[str, Any]:
    """What an Inspector ``--cli`` line asks, as the JSON-RPC request it sends."""
    options: dict[str, list[str]] = {}
    rest = iter(words[2:])
    for word in rest:
        if word.startswith("--") and word not in {"--cli"}:
            options.setdefault(word, []).append(next(rest))
    method = options["--method"][0]
    params: dict[str, Any] = {}
    if "--uri" in options:
        params["uri"] = options["--uri"][0]
    for name_option, args_option in (
        ("--tool-name", "--tool-arg"),
        ("--prompt-name", "--prompt-args"),
    ):
        if name_option in options:
            pairs = [arg.partition("=") for arg in options.get(args_option, [])]
            params = {"name": options[name_option][0], "arguments": {k: v for k, _, v in pairs}}
    return {"jsonrpc": "2.0", "id": 2, "method": method, "params": params}


def test_every_inspector_line_reaches_the_endpoint_and_its_method_answers(
    live_server: Any,
) -> None:
    lines = [
        w for _, w in command_lines(GUIDE) if w[:2] == ["npx", "@modelcontextprotocol/inspector"]
    ]
    assert len(lines) == 8
    ui, *cli = lines
    assert ui[2:] == ["--transport", "http", "--server-url", ENDPOINT]
    by_config = [w for w in cli if "--config" in w]
    assert by_config == [
        ["npx", "@modelcontextprotocol/inspector", "--cli", "--config", "mcp.json", "--server",
         SERVER_NAME, "--method", "tools/list"]
    ]  # fmt: skip
    url = live(live_server, ENDPOINT)
    version = {"MCP-Protocol-Version": LATEST_INITIALIZE_VERSION}
    for words in cli:
        if words in by_config:
            continue
        assert words[2:4] == ["--cli", ENDPOINT] and words[4:6] == ["--transport", "http"], words
        request = inspector_request(words)
        assert request["method"] in METHODS, request
        answer = post(url, request, version).json()
        assert "result" in answer, (words, answer)
        assert answer["result"].get("isError") is not True, (words, answer)


# --- curl ---------------------------------------------------------------------------------------


def test_curl_speaks_one_initialize_version_and_2026_only_where_labelled() -> None:
    assert LATEST_INITIALIZE_VERSION in INITIALIZE_VERSIONS
    commands = curls(GUIDE)
    assert len(commands) == 7
    for curl in commands:
        labelled = STATELESS_VERSION in curl.heading
        expected = STATELESS_VERSION if labelled else LATEST_INITIALIZE_VERSION
        assert curl.versions() <= {expected}, (curl.heading, curl.versions())
        if curl.method == "POST" and (labelled or curl.body.get("method") != "initialize"):
            assert curl.headers.get("mcp-protocol-version") == expected, curl
    first = commands[0]
    assert first.body["method"] == "initialize" and first.versions() == {LATEST_INITIALIZE_VERSION}
    for path in OTHERS:  # recipes elsewhere, if any come back, speak the same versions
        for curl in curls(path):
            assert curl.versions() <= {LATEST_INITIALIZE_VERSION, STATELESS_VERSION}, path


def check_answer(curl: Curl, answer: httpx.Response) -> None:
    """The real answer to one curl command, by what it asks."""
    if curl.body is None:
        assert answer.status_code == 405 and answer.headers["allow"] == "POST"
        assert curl.shows_status
        return
    method = curl.body["method"]
    if "id" not in curl.body:
        assert (answer.status_code, answer.content) == (202, b"") and curl.shows_status
        return
    assert answer.status_code == 200, answer.content
    result = answer.json()["result"]
    stateless = STATELESS_VERSION in curl.heading
    if stateless:
        assert result["resultType"] == "complete"
    if method == "initialize":
        assert result["protocolVersion"] == curl.body["params"]["protocolVersion"]
        assert result["serverInfo"]["name"] == SERVER_NAME and "tools" in result["capabilities"]
        assert result["instructions"]
    elif method == "server/discover":
        assert result["supportedVersions"][0] == STATELESS_VERSION
        assert LATEST_INITIALIZE_VERSION in result["supportedVersions"]
    elif method == "tools/list":
        assert [t["name"] for t in result["tools"]] == TOOLS
        if stateless:
            assert result["ttlMs"] > 0 and result["cacheScope"]
    elif method == "resources/read":
        [content] = result["contents"]
        assert content["uri"] == curl.body["params"]["uri"]
        assert result["_meta"][META_LINKS_KEY]
    else:
        raise AssertionError(f"no check for a curl of {method!r}: add one")


def test_every_curl_request_answers_as_the_guide_says(live_server: Any) -> None:
    with httpx.Client(timeout=30) as client:
        for curl in curls(GUIDE):
            url = live(live_server, curl.url)
            if curl.raw is None:
                answer = client.get(url, headers=curl.headers)
            else:
                answer = client.post(url, content=curl.raw.encode(), headers=curl.headers)
            check_answer(curl, answer)


def test_the_listen_curl_of_the_mcp_guide_opens_a_stream_on_the_default_server(
    transactional_db: None,
) -> None:
    """docs/mcp.md's ``curl -N`` listen, sent as written to ``python -m tmsite.serve``'s
    application (the WSGI live server refuses streams): the first event is the acknowledgement
    of what it asked for, under the listen's id."""
    from tests.serve.inthread import served
    from tests.subscriptions.helpers import SUB_ID, Events
    from tmsite.serve.app import Application

    [listen] = [c for c in curls(ROOT / "docs" / "mcp.md") if c.body and "listen" in c.raw]
    asked = listen.body["params"]["notifications"]
    with (
        served(Application()) as base,
        httpx.Client(timeout=httpx.Timeout(20, read=20)) as client,
        client.stream(
            "POST", base + urlsplit(listen.url).path, content=listen.raw, headers=listen.headers
        ) as answer,
    ):
        assert answer.status_code == 200 and answer.headers["content-type"] == "text/event-stream"
        ack = Events(answer).message()
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"] == asked
    assert ack["params"]["_meta"][SUB_ID] == listen.body["id"]
