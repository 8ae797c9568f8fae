"""Traces: one server span per request, continuing the client's trace; off, nothing at all.

In process, with the SDK's in-memory exporter: a read is a ``resources/read`` server span with
the client's trace id and parent (from ``params._meta`` first, else the HTTP ``traceparent``),
the mount read and the database beneath it; a tool call is named ``tools/call <tool>``; REST
is a server span too; a refusal is the span's ``error.type``. A peer call is a client span
whose request carries the context on in ``_meta`` (a loopback MCP peer records what it got).
No span holds anything of the caller. Off (no ``OTEL_*``), no part of the SDK is imported.
The environment's reading is checked variable by variable.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
from django.test import Client
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from tests.oplog.servers import ROOT
from tmsite.core import tracing
from tmsite.mcpclient.client import Client as McpClient

pytestmark = [pytest.mark.spec("OBS2"), pytest.mark.django_db]

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"
OTHER_TRACE = "0af7651916cd43dd8448eb211c80319c"
README = "tm://tinymachines/fs/docs/README.md"
CALLER = {"agent": "agent-zq7xk", "token": "tok-zq7xk", "address": "198.51.100.77"}


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
        tracing._state["on"] = None  # decided again from the environment


def mcp(body: dict[str, Any], **headers: str) -> dict[str, Any]:
    answer = Client().post(
        "/api/mcp",
        data=json.dumps(body),
        content_type="application/json",
        HTTP_ACCEPT="application/json, text/event-stream",
        HTTP_MCP_PROTOCOL_VERSION="2025-11-25",
        **{f"HTTP_{k.upper().replace('-', '_')}": v for k, v in headers.items()},  # type: ignore[arg-type]
    )
    assert answer.status_code == 200
    return dict(answer.json())


def traceparent(trace: str = TRACE, parent: str = PARENT) -> str:
    return f"00-{trace}-{parent}-01"


def by_name(exported: tuple[ReadableSpan, ...], name: str) -> ReadableSpan:
    [found] = [span for span in exported if span.name == name]
    return found


def test_a_read_continues_the_trace_in_its_meta(spans: InMemorySpanExporter) -> None:
    meta = {"traceparent": traceparent(), "tracestate": "vendor=1"}
    params = {"uri": README, "_meta": meta}
    body = {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": params}
    header = traceparent(OTHER_TRACE, "b7ad6b7169203331")
    assert "result" in mcp(body, traceparent=header)  # _meta is the request's own: it wins
    exported = spans.get_finished_spans()
    server = by_name(exported, "resources/read")
    assert server.kind == SpanKind.SERVER
    assert f"{server.context.trace_id:032x}" == TRACE
    assert server.parent is not None and f"{server.parent.span_id:016x}" == PARENT
    assert server.parent.is_remote
    assert server.context.trace_state.to_header() == "vendor=1"
    assert server.attributes is not None
    assert server.attributes["mcp.method.name"] == "resources/read"
    assert server.attributes["mcp.resource.uri"] == README
    assert server.attributes["tm.outcome"] == "ok"
    reads = [span for span in exported if span.name == "read fs"]
    assert any(r.parent is not None and r.parent.span_id == server.context.span_id for r in reads)
    assert {f"{s.context.trace_id:032x}" for s in exported} == {TRACE}


def test_the_http_header_is_continued_without_meta(spans: InMemorySpanExporter) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "licensing"}}
    mcp(body, traceparent=traceparent(OTHER_TRACE))
    server = by_name(spans.get_finished_spans(), "tools/call licensing")
    assert f"{server.context.trace_id:032x}" == OTHER_TRACE
    assert server.attributes is not None
    assert server.attributes["gen_ai.tool.name"] == "licensing"


def test_a_refusal_is_the_span_s_error_and_a_new_trace_starts(
    spans: InMemorySpanExporter,
) -> None:
    params = {"uri": "tm://tinymachines/fs/docs/no-such-file.md"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": params}
    mcp(body, traceparent="00-not-a-trace-01")
    server = by_name(spans.get_finished_spans(), "resources/read")
    assert server.parent is None
    assert server.attributes is not None and server.attributes["error.type"] == "not-found"


def test_rest_and_the_database_are_spans(spans: InMemorySpanExporter) -> None:
    answer = Client().get("/api/v1/resolve", {"uri": README}, HTTP_TRACEPARENT=traceparent())
    assert answer.status_code == 200
    exported = spans.get_finished_spans()
    server = by_name(exported, "GET /api/v1/resolve")
    assert f"{server.context.trace_id:032x}" == TRACE
    assert server.attributes is not None
    assert server.attributes["http.response.status_code"] == 200
    mcp(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "resources/read",
            "params": {"uri": "tm://tinymachines/entity/game/"},
        }
    )
    queries = [s for s in spans.get_finished_spans() if s.kind == SpanKind.CLIENT]
    assert queries, [s.name for s in spans.get_finished_spans()]
    assert all(s.attributes and s.attributes["db.system.name"] for s in queries)


def test_no_span_holds_anything_of_the_caller(spans: InMemorySpanExporter) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": README}}
    Client().post(
        "/api/mcp",
        data=json.dumps(body),
        content_type="application/json",
        HTTP_ACCEPT="application/json",
        HTTP_MCP_PROTOCOL_VERSION="2025-11-25",
        HTTP_USER_AGENT=CALLER["agent"],
        HTTP_AUTHORIZATION=f"Bearer {CALLER['token']}",
        HTTP_X_FORWARDED_FOR=CALLER["address"],
        HTTP_MCP_SESSION_ID="session-zq7xk",
    )
    exported = spans.get_finished_spans()
    assert exported
    text = "".join(span.to_json() for span in exported)
    for secret in (*CALLER.values(), "zq7xk", "127.0.0.1"):
        assert secret not in text


class _Peer(BaseHTTPRequestHandler):
    """A loopback MCP peer: answers the handshake and one tool, keeps every body it got."""

    got: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).got.append(body)
        if "id" not in body:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        result: dict[str, Any] = {"content": [{"type": "text", "text": "pong"}]}
        if body["method"] == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "peer", "version": "1"},
            }
        data = json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": result}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


def test_a_peer_call_carries_the_context_on(spans: InMemorySpanExporter) -> None:
    _Peer.got = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Peer)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/mcp"
        with (
            McpClient.http(url, timeout=10, mode="initialize") as client,
            tracing.server("resources/read", ({"traceparent": traceparent()},), {}),
        ):
            client.call_tool("ping", {})
    finally:
        httpd.shutdown()
        httpd.server_close()
    [called] = [body for body in _Peer.got if body.get("method") == "tools/call"]
    server = by_name(spans.get_finished_spans(), "resources/read")
    sent = called["params"]["_meta"]["traceparent"]
    client_span = [s for s in spans.get_finished_spans() if s.kind == SpanKind.CLIENT]
    [call] = [
        s for s in client_span if s.attributes and s.attributes["mcp.method.name"] == "tools/call"
    ]
    assert sent == f"00-{TRACE}-{call.context.span_id:016x}-01"
    assert call.parent is not None and call.parent.span_id == server.context.span_id


@pytest.mark.parametrize(
    ("env", "on"),
    [
        ({}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, True),
        ({"OTEL_TRACES_EXPORTER": "console"}, True),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, False),
        ({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, False),
        ({"OTEL_SERVICE_NAME": "tmsite"}, False),
    ],
)
def test_the_otel_variables_turn_traces_on(env: dict[str, str], on: bool) -> None:
    assert tracing.asked(env) is on


OFF_PROBE = """
import json, os, sys
os.environ["DJANGO_SETTINGS_MODULE"] = "tmsite.settings"
import django
django.setup()
from django.test import Client
body = {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": sys.argv[1]}}
answer = Client().post("/api/mcp", data=json.dumps(body), content_type="application/json",
    HTTP_ACCEPT="application/json", HTTP_TRACEPARENT=sys.argv[2])
assert answer.status_code == 200, answer.content
print(json.dumps(sorted(m for m in sys.modules if m.startswith("opentelemetry"))))
"""


def test_off_nothing_of_the_sdk_is_imported(tmp_path: Any) -> None:
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith(("OTEL_", "TM_"))}
    env.update(TM_VAR_DIR=str(tmp_path / "var"), TM_SECRET_KEY="traces-off", TM_LOG_REQUESTS="0")
    done = subprocess.run(
        [sys.executable, "-c", OFF_PROBE, README, traceparent()],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert not [
        name for name in loaded if name.startswith(("opentelemetry.sdk", "opentelemetry.exporter"))
    ]
