"""A stdio MCP server that sends notifications when a test asks it to: ``notify_peer.py DIR``.

Plain 2025-era MCP declaring ``resources`` (with ``subscribe`` and ``listChanged``) and
``tools`` (``listChanged``). ``resources/list`` answers ``note://a`` and ``note://b``;
``tools/list`` answers the tools in ``DIR/tools.json`` (default: one, ``first``).
``resources/subscribe`` and ``resources/unsubscribe`` append ``<method> <uri>`` to
``DIR/asked``. A thread watches for ``DIR/send.jsonl``: each of its lines, a notification, is
written to stdout as it is found, and the file is removed; a line ``{"exit": true}`` ends the
process there.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

DIR = Path(sys.argv[1])
OUT = sys.stdout.buffer
LOCK = threading.Lock()


def send(message: dict[str, Any]) -> None:
    with LOCK:
        OUT.write(json.dumps(message).encode() + b"\n")
        OUT.flush()


def tools() -> list[dict[str, Any]]:
    path = DIR / "tools.json"
    names = json.loads(path.read_text()) if path.exists() else ["first"]
    return [{"name": n, "inputSchema": {"type": "object"}} for n in names]


def watch() -> None:
    path = DIR / "send.jsonl"
    while True:
        if path.exists():
            taken = path.with_suffix(".taken")
            os.replace(path, taken)
            for line in taken.read_text().splitlines():
                if line.strip() == '{"exit": true}':
                    taken.unlink()
                    os._exit(0)
                if line.strip():
                    send({"jsonrpc": "2.0", **json.loads(line)})
            taken.unlink()
        time.sleep(0.02)


def main() -> int:
    threading.Thread(target=watch, daemon=True).start()
    for raw in sys.stdin.buffer:
        if not raw.strip():
            continue
        message = json.loads(raw)
        if "id" not in message or "method" not in message:
            continue
        rid, method = message["id"], message["method"]
        params = message.get("params") or {}
        result: dict[str, Any]
        if method == "initialize":
            result = {
                "protocolVersion": params["protocolVersion"],
                "capabilities": {
                    "resources": {"subscribe": True, "listChanged": True},
                    "tools": {"listChanged": True},
                },
                "serverInfo": {"name": "notify", "version": "0"},
            }
        elif method == "resources/list":
            result = {
                "resources": [{"uri": "note://a", "name": "a"}, {"uri": "note://b", "name": "b"}]
            }
        elif method == "tools/list":
            result = {"tools": tools()}
        elif method in ("resources/subscribe", "resources/unsubscribe"):
            with open(DIR / "asked", "a", encoding="utf-8") as log:
                log.write(f"{method} {params.get('uri')}\n")
            result = {}
        elif method == "resources/read":
            result = {"contents": [{"uri": params.get("uri"), "text": "note"}]}
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": method}})
            continue
        send({"jsonrpc": "2.0", "id": rid, "result": result})
    return 0


if __name__ == "__main__":
    sys.exit(main())
