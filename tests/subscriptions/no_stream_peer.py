"""A 2025-era HTTP MCP server with sessions but no session stream: ``no_stream_peer.py DIR``.

Binds 127.0.0.1 on a free port, prints ``PORT <n>`` and serves ``/mcp`` until killed.
``server/discover`` is refused (-32601); ``initialize`` is answered at 2025-11-25 with the
session ``s-1`` (``Mcp-Session-Id``), declaring ``resources.subscribe``; every other request
is answered ``{}``, a notification 202. A GET (the session stream) is answered 405, a DELETE
200. Every request is appended to ``DIR/requests.jsonl`` as ``{"verb", "method", "session"}``.

``--huge`` gives the session a stream after all: the first GET is answered with one event of
4 MiB; each later one with ``notifications/resources/updated {"uri": "note://a"}``, then a
``:`` keep-alive every 0.2 s (for two minutes at most).
"""

from __future__ import annotations

import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

DIR = Path(sys.argv[1])
GETS = [0]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        del format, args

    def note(self, method: str | None) -> None:
        entry = {
            "verb": self.command,
            "method": method,
            "session": self.headers.get("mcp-session-id"),
        }
        with (DIR / "requests.jsonl").open("a") as out:
            out.write(json.dumps(entry) + "\n")

    def answer(
        self, status: int, body: dict[str, Any] | None = None, session: bool = False
    ) -> None:
        raw = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        if session:
            self.send_header("Mcp-Session-Id", "s-1")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
        method = message.get("method")
        self.note(method)
        if "id" not in message:
            self.answer(202)
        elif method == "server/discover":
            error = {"code": -32601, "message": "Method not found"}
            self.answer(200, {"jsonrpc": "2.0", "id": message["id"], "error": error})
        elif method == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"resources": {"subscribe": True}},
                "serverInfo": {"name": "no-stream-peer", "version": "1"},
            }
            self.answer(200, {"jsonrpc": "2.0", "id": message["id"], "result": result}, True)
        else:
            self.answer(200, {"jsonrpc": "2.0", "id": message["id"], "result": {}})

    def do_GET(self) -> None:
        self.note(None)
        if "--huge" not in sys.argv:
            self.answer(405)
            return
        GETS[0] += 1
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        try:
            if GETS[0] == 1:
                self.wfile.write(b"data: " + b"x" * (4 * 1024 * 1024) + b"\n\n")
                return
            update = {"jsonrpc": "2.0", "method": "notifications/resources/updated"}
            update["params"] = {"uri": "note://a"}
            self.wfile.write(b"data: " + json.dumps(update).encode() + b"\n\n")
            for _ in range(600):
                self.wfile.flush()
                time.sleep(0.2)
                self.wfile.write(b":\n\n")
        except OSError:  # the client hung up
            return

    def do_DELETE(self) -> None:
        self.note(None)
        self.answer(200)


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
