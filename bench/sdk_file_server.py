"""The comparison server for ``bench/mcp_vs_sdk.py``: the official MCP Python SDK's ``MCPServer``.

It exposes what the benchmark reads from tmsite, served the SDK's production way: one static
resource holding the same small checkout file's text (read from disk on every request, as the
``fs`` mount does), two tools, Streamable HTTP, stateless, JSON responses. Run it with uvicorn
as an app factory::

    BENCH_FILE=docs/README.md uvicorn bench.sdk_file_server:create_app --factory \\
        --host 127.0.0.1 --port 8001 --workers 2

Environment:

``BENCH_CHECKOUT``  the checkout the file is read from (default: this repository's root)
``BENCH_FILE``      the file, relative to the checkout (default ``docs/README.md``)
``BENCH_URI``       the resource URI it is served under (default ``tm://tinymachines/fs/<file>``)
"""

from __future__ import annotations

import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer
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

    @server.tool(title="File size", description="The size in bytes of the served file.")
    def file_size() -> int:
        return path.stat().st_size

    @server.tool(title="Echo", description="Returns the text it is given.")
    def echo(text: str) -> str:
        return text

    return server


def create_app() -> Starlette:
    """The ASGI app (stateless Streamable HTTP at ``/mcp``, JSON responses) for uvicorn."""
    return build_server().streamable_http_app(
        streamable_http_path="/mcp", stateless_http=True, json_response=True
    )
