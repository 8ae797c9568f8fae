"""The mcp mount's requests to a peer carry the trace on (SEP-414's ``params._meta``).

A peer on loopback (an HTTP server in the test that keeps every request it gets) is read
through the mount inside a server span: the ``resources/read`` it receives carries
``_meta.traceparent`` with the request's trace id and the id of the peer call's client span,
itself beneath the mount read's span. With traces off it carries none.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from tests.mcpmount.conftest import HOST
from tmsite.core import tracing
from tmsite.core.uri import TmUri
from tmsite.mounts.namespace import Namespace
from tmsite.servers.connect import probe_record
from tmsite.servers.models import McpServer

pytestmark = [pytest.mark.django_db, pytest.mark.spec("OBS2", "MCP")]

TRACE = "6bf92f3577b34da6a3ce929d0e0e4738"
PARENT = "20f067aa0ba902b9"
README = "peer://notes/readme"
RESULTS: dict[str, dict[str, Any]] = {
    "initialize": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"resources": {}},
        "serverInfo": {"name": "traced-peer", "version": "1"},
    },
    "resources/list": {"resources": [{"uri": README, "name": "readme", "mimeType": "text/plain"}]},
    "resources/templates/list": {"resourceTemplates": []},
    "tools/list": {"tools": []},
    "prompts/list": {"prompts": []},
    "resources/read": {"contents": [{"uri": README, "mimeType": "text/plain", "text": "hello"}]},
}


class _Peer(BaseHTTPRequestHandler):
    got: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).got.append(body)
        if "id" not in body:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        found = RESULTS.get(body["method"])
        answer: dict[str, Any] = {"jsonrpc": "2.0", "id": body["id"]}
        if found is None:
            answer["error"] = {"code": -32601, "message": "no such method"}
        else:
            answer["result"] = found
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def peer_url() -> Iterator[str]:
    _Peer.got = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Peer)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/mcp"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.install(provider)
    try:
        yield exporter
    finally:
        tracing.install(None)
        tracing._state["on"] = None


def _read(ns: Namespace, url: str) -> None:
    server = McpServer.objects.create(name="traced", transport="http", url=url)
    assert probe_record(server).outcome == "answered"
    address = str(TmUri(HOST, "mcp", ("traced", "resources", README)))
    _Peer.got = []
    with tracing.server("resources/read", ({"traceparent": f"00-{TRACE}-{PARENT}-01"},), {}):
        assert ns.read(address).body == "hello"


def test_the_peer_read_carries_the_trace_on(
    ns: Namespace, peer_url: str, spans: InMemorySpanExporter
) -> None:
    _read(ns, peer_url)
    [asked] = [body for body in _Peer.got if body.get("method") == "resources/read"]
    exported = spans.get_finished_spans()
    [call] = [
        s
        for s in exported
        if s.kind == SpanKind.CLIENT
        and s.name == "resources/read"
        and f"{s.context.trace_id:032x}" == TRACE
    ]
    assert asked["params"]["_meta"]["traceparent"] == f"00-{TRACE}-{call.context.span_id:016x}-01"
    [mount_read] = [s for s in exported if s.name == "read mcp"]
    assert call.parent is not None and call.parent.span_id == mount_read.context.span_id


def test_off_the_peer_gets_no_context(ns: Namespace, peer_url: str) -> None:
    _read(ns, peer_url)
    [asked] = [body for body in _Peer.got if body.get("method") == "resources/read"]
    assert "traceparent" not in json.dumps(asked)
