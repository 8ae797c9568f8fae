"""The comparison server for ``bench/mcp_vs_sdk.py``: the official MCP Python SDK's ``MCPServer``.

It exposes what the benchmark reads from tmsite, served the SDK's production way: one static
resource holding the same small checkout file's text (read from disk on every request, as the
``fs`` mount does), tools, Streamable HTTP, stateless, JSON responses. The tools are two small
ones, or, with ``BENCH_TOOLS``, the tools tmsite lists, as tmsite lists them: each registered
with ``MCPServer.add_tool`` under tmsite's name, title, description, annotations and icons, its
input and output schemas set to tmsite's, so both servers answer ``tools/list`` with the same
tools and the client reads the same amount from each (a call of one answers a plain text: only
the list is measured). Run it with uvicorn as an app factory::

    BENCH_FILE=docs/README.md uvicorn bench.sdk_file_server:create_app --factory \\
        --host 127.0.0.1 --port 8001 --workers 2

Environment:

``BENCH_CHECKOUT``  the checkout the file is read from (default: this repository's root)
``BENCH_FILE``      the file, relative to the checkout (default ``docs/README.md``)
``BENCH_URI``       the resource URI it is served under (default ``tm://tinymachines/fs/<file>``)
``BENCH_TOOLS``     a JSON file holding a ``tools/list`` result to list the same tools as
                    (``bench/mcp_vs_sdk.py`` writes tmsite's); unset: the two small tools
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.types import Icon, ToolAnnotations
from starlette.applications import Starlette

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FILE = "docs/README.md"


def build_server() -> MCPServer:
    """The SDK server: one file resource and two small tools."""
    checkout = Path(os.environ.get("BENCH_CHECKOUT", ROOT)).resolve()
    relative = os.environ.get("BENCH_FILE", DEFAULT_FILE)
    path = (checkout / relative).resolve()
    if not path.is_file() or checkout not in path.parents:
        raise SystemExit(f"BENCH_FILE {relative!r} is not a file inside {checkout}")
    uri = os.environ.get("BENCH_URI", f"tm://tinymachines/fs/{relative}")

    server = MCPServer(
        name="sdk-file-server",
        title="SDK comparison server",
        version="1.0",
        instructions="Serves one checkout file as a resource, for benchmarking.",
        log_level="WARNING",
    )

    @server.resource(
        uri,
        name=path.name,
        title=relative,
        description="A small file of the checkout, read from disk on every request.",
        mime_type="text/markdown",
    )
    def read_file() -> str:
        return path.read_text(encoding="utf-8")

    listed = os.environ.get("BENCH_TOOLS", "")
    if listed:
        for tool in json.loads(Path(listed).read_text(encoding="utf-8"))["tools"]:
            add_listed_tool(server, tool)
        return server

    @server.tool(title="File size", description="The size in bytes of the served file.")
    def file_size() -> int:
        return path.stat().st_size

    @server.tool(title="Echo", description="Returns the text it is given.")
    def echo(text: str) -> str:
        return text

    return server


def add_listed_tool(server: MCPServer, listed: dict[str, Any]) -> None:
    """Register a tool the SDK lists as ``listed`` (one entry of a ``tools/list`` result)."""

    def run() -> str:
        return "listed for the benchmark"

    annotations = listed.get("annotations")
    server.add_tool(
        run,
        name=listed["name"],
        title=listed.get("title"),
        description=listed.get("description"),
        annotations=ToolAnnotations.model_validate(annotations) if annotations else None,
        icons=[Icon.model_validate(icon) for icon in listed.get("icons", [])] or None,
    )
    tool = server._tool_manager.get_tool(listed["name"])  # the schemas, as tmsite has them
    assert tool is not None
    tool.parameters = listed["inputSchema"]
    tool.__dict__["output_schema"] = listed.get("outputSchema")  # a cached_property


def create_app() -> Starlette:
    """The ASGI app (stateless Streamable HTTP at ``/mcp``, JSON responses) for uvicorn."""
    return build_server().streamable_http_app(
        streamable_http_path="/mcp", stateless_http=True, json_response=True
    )
