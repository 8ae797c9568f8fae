"""A hand-written Streamable HTTP server with faults on chosen paths; prints ``PORT <n>``.

/legacy         a 2025-era server: ``server/discover`` → plain HTTP 400; ``initialize`` issues
                ``Mcp-Session-Id``; later requests without it (or without MCP-Protocol-Version)
                → 400; ``tools/list`` answers as an event stream that first asks the client for
                sampling and waits for the client's answer; ``tools/call`` by name: ``huge``
                (100 MB chunked JSON), ``huge-declared`` (Content-Length of 100 MB),
                ``sse-huge`` (one 100 MB event), ``html`` (text/html), ``deep-N`` (a JSON
                body nested N levels deep in all), ``sse-deep-N`` (the same as one event),
                anything else → text.
                DELETE ends the session.
/redirect-same  307 to /legacy (same origin: followed)
/redirect-away  307 to another origin (refused)
/redirect-302   302 to /legacy (a POST would turn into a GET: refused)
/redirect-to?U  307 to the URL U (percent-encoded)
/seen           GET: what the server saw (answers to its requests, deleted sessions)
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

SESSION = "legacy-session-1"
SEEN: dict[str, list[Any]] = {"answers": [], "deleted": [], "methods": []}
ANSWERED = threading.Event()
MIB = 1 << 20


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(
        self,
        status: int,
        body: bytes,
        ctype: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def _redirect(self, status: int, location: str) -> None:
        self.send_response(status)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        if self.path == "/seen":
            self._send(200, json.dumps(SEEN).encode())
        else:
            self._send(405, b"", "text/plain", {"Allow": "POST"})

    def do_DELETE(self) -> None:
        SEEN["deleted"].append(self.headers.get("Mcp-Session-Id"))
        self._send(200, b"", "text/plain")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length))
        if self.path == "/redirect-same":
            return self._redirect(307, "/legacy")
        if self.path == "/redirect-away":
            return self._redirect(307, "http://127.0.0.1:1/mcp")
        if self.path == "/redirect-302":
            return self._redirect(302, "/legacy")
        if self.path.startswith("/redirect-to?"):
            return self._redirect(307, unquote(self.path.split("?", 1)[1]))
        if self.path != "/legacy":
            return self._send(404, b"not here\n", "text/plain")
        self.legacy(body)

    def legacy(self, body: dict[str, Any]) -> None:
        method = body.get("method")
        SEEN["methods"].append(method)
        if method is None:  # the client's answer to our request
            SEEN["answers"].append(body)
            ANSWERED.set()
            return self._send(202, b"", "text/plain")
        if method == "server/discover":
            return self._send(400, b"Bad Request: unknown method\n", "text/plain")
        if method == "initialize":
            result = {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "legacy", "version": "1"},
            }
            payload = json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": result}).encode()
            return self._send(200, payload, headers={"Mcp-Session-Id": SESSION})
        if self.headers.get("Mcp-Session-Id") != SESSION:
            return self._send(400, b"Bad Request: no valid session id\n", "text/plain")
        if self.headers.get("MCP-Protocol-Version") != "2025-06-18":
            return self._send(400, b"Bad Request: protocol version header\n", "text/plain")
        if "id" not in body:
            return self._send(202, b"", "text/plain")
        rid = body["id"]
        if method == "tools/list":
            return self.tools_list(rid)
        if method == "tools/call":
            return self.tools_call(rid, body["params"]["name"])
        error = {"code": -32601, "message": f"Method not found: {method}"}
        self._send(200, json.dumps({"jsonrpc": "2.0", "id": rid, "error": error}).encode())

    def _stream_start(self, ctype: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def tools_list(self, rid: Any) -> None:
        ANSWERED.clear()
        self._stream_start("text/event-stream")
        self._chunk(b"id: 0\ndata:\n\n")
        ask = {
            "jsonrpc": "2.0",
            "id": "srv-1",
            "method": "sampling/createMessage",
            "params": {"messages": [], "maxTokens": 10},
        }
        self._chunk(b"event: message\ndata: " + json.dumps(ask).encode() + b"\n\n")
        ANSWERED.wait(5)
        answer = SEEN["answers"][-1] if SEEN["answers"] else None
        tool = {
            "name": "echo",
            "description": json.dumps(answer),
            "inputSchema": {"type": "object"},
        }
        done = {"jsonrpc": "2.0", "id": rid, "result": {"tools": [tool]}}
        self._chunk(b"event: message\ndata: " + json.dumps(done).encode() + b"\n\n")
        self._chunk(b"")

    def tools_call(self, rid: Any, name: str) -> None:
        try:
            if name == "huge":
                self._stream_start("application/json")
                self._chunk(
                    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"' % rid
                )
                for _ in range(100):
                    self._chunk(b"x" * MIB)
                self._chunk(b'"}]}}')
                self._chunk(b"")
            elif name == "huge-declared":
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(100 * MIB))
                self.end_headers()
                self.wfile.write(b"{" + b" " * MIB)
            elif name == "sse-huge":
                self._stream_start("text/event-stream")
                self._chunk(
                    b'data: {"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"'
                    % rid
                )
                for _ in range(100):
                    self._chunk(b"x" * MIB)
                self._chunk(b'"}]}}\n\n')
                self._chunk(b"")
            elif name.startswith(("deep-", "sse-deep-")):
                levels = int(name.rsplit("-", 1)[1]) - 3  # message, result, structuredContent
                message = (
                    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[],"structuredContent":'
                    b'{"nest":%s}}}' % (rid, b"[" * levels + b"]" * levels)
                )
                if name.startswith("sse-"):
                    self._send(200, b"data: " + message + b"\n\n", "text/event-stream")
                else:
                    self._send(200, message)
            elif name == "html":
                self._send(200, b"<html><body>hello</body></html>", "text/html")
            else:
                result = {"content": [{"type": "text", "text": f"called {name}"}]}
                self._send(
                    200, json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode()
                )
        except (BrokenPipeError, ConnectionResetError):
            pass


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler, bind_and_activate=False)
    server.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.server_bind()
    server.server_activate()
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
