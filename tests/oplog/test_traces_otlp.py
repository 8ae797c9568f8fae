"""Traces over OTLP/HTTP for real: ``python -m tmsite.serve`` with ``OTEL_EXPORTER_OTLP_ENDPOINT``.

A small collector in the test (an HTTP server on loopback) receives the protobuf POSTs the
server's exporter sends to ``/v1/traces``. One ``resources/read`` of a page through the http
mount (its front door is the server itself), sent with a ``traceparent`` header, yields one
trace with the client's trace id: the server span, the mount read beneath it and the page fetch
beneath that; a ``ping`` answered in the event loop is its one server span. Nothing the caller
sent besides the trace context is in anything received.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.oplog.servers import ROOT, free_port, migrate, server_env, serving

pytestmark = [pytest.mark.spec("OBS2"), pytest.mark.slow]

TRACE = "5bf92f3577b34da6a3ce929d0e0e4737"
PARENT = "10f067aa0ba902b8"
PING_TRACE = "7bf92f3577b34da6a3ce929d0e0e4739"
PAGE = "tm://tinymachines/http/tinymachines.ai/docs"
CALLER = {"agent": "agent-zq7xk", "token": "tok-zq7xk", "address": "198.51.100.77"}


class _Collector(BaseHTTPRequestHandler):
    received: ClassVar[list[bytes]] = []
    paths: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append(body)
        type(self).paths.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def collector() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _spans() -> list[Any]:
    found = []
    for body in list(_Collector.received):
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                found.extend(scope.spans)
    return found


def test_a_page_read_is_one_trace_received_over_otlp(tmp_path: Path, collector: str) -> None:
    port = free_port()
    env = server_env(
        tmp_path / "var",
        TM_TEST_PORT=str(port),
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    )
    env["DJANGO_SETTINGS_MODULE"] = "tests.http.gunicorn_settings"  # the front door: itself
    env.update(OTEL_EXPORTER_OTLP_ENDPOINT=collector, OTEL_BSP_SCHEDULE_DELAY="100")
    migrate(env)
    with serving(env, 1, tmp_path / "serve.log", port=port, threads=4) as machine:
        answer = httpx.post(
            f"{machine.url}/api/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": PAGE}},
            headers={
                "Accept": "application/json",
                "MCP-Protocol-Version": "2025-11-25",
                "traceparent": f"00-{TRACE}-{PARENT}-01",
                "User-Agent": CALLER["agent"],
                "Authorization": f"Bearer {CALLER['token']}",
                "X-Forwarded-For": CALLER["address"],
            },
            timeout=30,
        )
        assert "result" in answer.json(), answer.text
        ping = httpx.post(  # answered in the event loop (a prepared answer): traced the same
            f"{machine.url}/api/mcp",
            json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
            headers={"Accept": "application/json", "traceparent": f"00-{PING_TRACE}-{PARENT}-01"},
            timeout=30,
        )
        assert ping.json()["result"] == {}
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            mine = [s for s in _spans() if s.trace_id.hex() == TRACE]
            pinged = [s for s in _spans() if s.trace_id.hex() == PING_TRACE]
            if {"resources/read", "read http", "GET"} <= {s.name for s in mine} and pinged:
                break
            time.sleep(0.1)
    assert [(s.name, s.parent_span_id.hex()) for s in pinged] == [("ping", PARENT)]
    assert set(_Collector.paths) == {"/v1/traces"}
    [server] = [s for s in mine if s.name == "resources/read"]
    assert server.parent_span_id.hex() == PARENT
    assert server.kind == server.SPAN_KIND_SERVER
    [read] = [s for s in mine if s.name == "read http" and s.parent_span_id == server.span_id]
    [fetch] = [s for s in mine if s.name == "GET" and s.parent_span_id == read.span_id]
    assert fetch.kind == fetch.SPAN_KIND_CLIENT
    attributes = {a.key: a.value for a in fetch.attributes}
    assert attributes["http.response.status_code"].int_value == 200
    everything = b"".join(_Collector.received)
    for secret in CALLER.values():
        assert secret.encode() not in everything
