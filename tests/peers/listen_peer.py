"""A 2026-07-28 HTTP MCP server that speaks ``subscriptions/listen``: ``listen_peer.py DIR``.

Binds 127.0.0.1 on a free port, prints ``PORT <n>`` and serves ``/mcp`` (stateless, JSON
answers) until killed. ``server/discover`` declares ``resources`` (``subscribe``,
``listChanged``) and ``tools`` (``listChanged``); ``resources/list`` answers ``note://a`` and
``note://b``; ``tools/list`` the tools named in ``DIR/tools.json`` (default: ``first``).

Each ``subscriptions/listen`` appends ``{"at": <time>, "notifications": <its filter>}``, as
one JSON line, to ``DIR/listens``, answers with an event stream whose first event is
``notifications/subscriptions/acknowledged`` (the filter, with the subscription id), and sends
a ``:`` keep-alive every 0.5 s. The newest stream watches for ``DIR/send.jsonl``: each line is
sent as it is found (a notification gets the subscription id in its ``_meta``), and the file is
removed. Lines that are not notifications do what they say: ``{"close": true}`` ends the
stream; ``{"huge": N}`` sends a data line of N bytes that never ends; ``{"flood": true}`` sends
``tools/list_changed`` without pause until the client hangs up, ``{"comments": true}``
comment lines that never end an event (the number sent is then written to ``DIR/flooded``).
While ``DIR/close_at_once`` exists, a stream ends right after its acknowledgement.
``--2025`` makes it a 2025-era server instead: no ``server/discover``, ``initialize``
answered at 2025-11-25.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

DIR = Path(sys.argv[1])
VERSION = "2026-07-28"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
LOCK = threading.Lock()
NEWEST = [0]


def tools() -> list[dict[str, Any]]:
    path = DIR / "tools.json"
    names = json.loads(path.read_text()) if path.exists() else ["first"]
    return [{"name": n, "inputSchema": {"type": "object"}} for n in names]


RESULTS: dict[str, Any] = {
    "server/discover": lambda: {
        "supportedVersions": [VERSION],
        "capabilities": {
            "resources": {"subscribe": True, "listChanged": True},
            "tools": {"listChanged": True},
        },
        "serverInfo": {"name": "listen-peer", "version": "1"},
    },
    "tools/list": lambda: {"tools": tools()},
    "resources/list": lambda: {
        "resources": [{"uri": "note://a", "name": "a"}, {"uri": "note://b", "name": "b"}]
    },
    "resources/templates/list": lambda: {"resourceTemplates": []},
    "ping": lambda: {},
}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        del format, args

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        message = json.loads(self.rfile.read(length))
        method = message.get("method")
        if "id" not in message:
            self.send_response(202)
            self.end_headers()
            return
        if method == "subscriptions/listen":
            self.listen(message)
            return
        make = RESULTS.get(method)
        answer: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        if make is None:
            answer["error"] = {"code": -32601, "message": f"no method {method}"}
        else:
            answer["result"] = make()
        body = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def event(self, message: dict[str, Any]) -> None:
        self.wfile.write(b"data: " + json.dumps(message).encode() + b"\n\n")
        self.wfile.flush()

    def listen(self, message: dict[str, Any]) -> None:
        wanted = message.get("params", {}).get("notifications", {})
        meta = {SUBSCRIPTION_ID: message["id"]}
        with LOCK:
            NEWEST[0] += 1
            mine = NEWEST[0]
            with (DIR / "listens").open("a") as log:
                log.write(json.dumps({"at": time.time(), "notifications": wanted}) + "\n")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("X-Accel-Buffering", "no")
        self.end_headers()
        ack = {
            "method": "notifications/subscriptions/acknowledged",
            "params": {"notifications": wanted, "_meta": meta},
        }
        try:
            self.event({"jsonrpc": "2.0", **ack})
            if (DIR / "close_at_once").exists():
                return
            alive = time.monotonic()
            path = DIR / "send.jsonl"
            while True:
                if NEWEST[0] == mine and path.exists():
                    taken = path.with_suffix(f".taken{mine}")
                    os.replace(path, taken)
                    lines = taken.read_text().splitlines()
                    taken.unlink()
                    for line in lines:
                        if not line.strip():
                            continue
                        if not self.told(json.loads(line), meta):
                            return
                if time.monotonic() - alive > 0.5:
                    self.wfile.write(b": keep-alive\n\n")
                    self.wfile.flush()
                    alive = time.monotonic()
                time.sleep(0.02)
        except (BrokenPipeError, ConnectionResetError):
            return

    def told(self, line: dict[str, Any], meta: dict[str, Any]) -> bool:
        """Send one line's worth; False once the stream is to end."""
        if line.get("close"):
            return False
        if "huge" in line:
            self.wfile.write(b"data: " + b"x" * int(line["huge"]))
            self.wfile.flush()
            time.sleep(30)
            return False
        if line.get("comments"):
            sent = 0
            try:
                while True:
                    self.wfile.write(b":" + b"x" * 200 + b"\n")
                    sent += 1
            finally:
                flooded(sent)
        if line.get("flood"):
            sent = 0
            flood = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
            try:
                while True:
                    self.event({**flood, "params": {"_meta": meta}})
                    sent += 1
            finally:
                flooded(sent)
        params = {**line.get("params", {}), "_meta": meta}
        self.event({"jsonrpc": "2.0", **line, "params": params})
        return True


def flooded(sent: int) -> None:
    """Say how much a flood sent before the client hung up: the file appears whole (a test
    waiting for it never reads it empty)."""
    part = DIR / "flooded.part"
    part.write_text(str(sent))
    os.replace(part, DIR / "flooded")


def main() -> None:
    if "--2025" in sys.argv:
        del RESULTS["server/discover"]
        RESULTS["initialize"] = lambda: {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "listen-peer", "version": "1"},
        }
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
