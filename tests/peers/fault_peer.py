"""A stdio MCP server that misbehaves in one chosen way: ``fault_peer.py MODE [--pidfile P]``.

Until its fault triggers it speaks plain 2025-era MCP (``server/discover`` is -32601, so clients
fall back to ``initialize``). Modes:

hang-start    reads stdin and never answers anything (with --pidfile: first starts a grandchild
              in its own process group and writes that grandchild's pid to P)
hang-call     answers the handshake and tools/list; on tools/call stops answering
ignore-eof    answers normally, but ignores SIGTERM and does not exit when stdin closes
flood         on tools/call writes non-JSON lines to stdout without end
huge          answers tools/call with one 100 MB line
cycle         tools/list pages whose cursors come back: a → b → a
endless       tools/list pages with a fresh cursor every time, forever
many          tools/list with 30 pages of 500 tools
sampling      on tools/call first asks the client for sampling/createMessage,
              elicitation/create and roots/list, and returns the answers it got as JSON
stray-id      answers tools/call with an id it was never sent
not-jsonrpc   answers tools/call with a JSON object that is not JSON-RPC
exit-early    writes a complaint to stderr and exits 3 before answering anything
stderr-flood  writes 2 MB to stderr while answering tools/call normally
refuse-init   answers initialize with a JSON-RPC error (-32602)
echo-env      answers tools/call with its environment and working directory as JSON
deep-N        answers tools/call with a message nested N levels deep in all (its
              structuredContent holds arrays nested N - 3 levels)
deep-text-N   answers tools/call with one text item holding JSON arrays nested N levels deep
deep-failure-N  the same text, as a tool failure (isError)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

MODE = sys.argv[1]
PIDFILE = sys.argv[sys.argv.index("--pidfile") + 1] if "--pidfile" in sys.argv else None
OUT = sys.stdout.buffer


def send(message: dict[str, Any]) -> None:
    OUT.write(json.dumps(message).encode() + b"\n")
    OUT.flush()


def reply(rid: Any, result: dict[str, Any]) -> None:
    send({"jsonrpc": "2.0", "id": rid, "result": result})


def read() -> dict[str, Any] | None:
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        if line.strip():
            message: dict[str, Any] = json.loads(line)
            return message


def nested(levels: int) -> bytes:
    """JSON arrays nested ``levels`` deep, written by hand (``json.dumps`` recurses)."""
    return b"[" * levels + b"]" * levels


def deep(rid: Any) -> None:
    """The ``deep-N``, ``deep-text-N`` and ``deep-failure-N`` answers, as raw bytes."""
    levels = int(MODE.rsplit("-", 1)[1])
    head = b'{"jsonrpc":"2.0","id":%s,"result":' % json.dumps(rid).encode()
    if MODE.startswith(("deep-text-", "deep-failure-")):
        text = json.dumps(nested(levels).decode()).encode()
        failed = b"true" if MODE.startswith("deep-failure-") else b"false"
        body = b'{"content":[{"type":"text","text":%s}],"isError":%s}' % (text, failed)
    else:  # message, result, structuredContent: three levels before the arrays
        body = b'{"content":[],"structuredContent":{"nest":%s}}' % nested(levels - 3)
    OUT.write(head + body + b"}\n")
    OUT.flush()


def hang() -> None:
    while True:
        time.sleep(3600)


def tools_page(cursor: str | None) -> dict[str, Any]:
    tool = {"name": f"t-{cursor or 'first'}", "inputSchema": {"type": "object"}}
    if MODE == "cycle":
        return {"tools": [tool], "nextCursor": {None: "a", "a": "b", "b": "a"}[cursor]}
    if MODE == "endless":
        return {"tools": [tool], "nextCursor": f"c{int((cursor or 'c0')[1:]) + 1}"}
    if MODE == "many":
        page = int(cursor or "0")
        tools = [{"name": f"t{page}-{i}", "inputSchema": {"type": "object"}} for i in range(500)]
        return {"tools": tools, **({"nextCursor": str(page + 1)} if page < 29 else {})}
    return {"tools": [tool]}


def call_tool(rid: Any) -> None:
    if MODE == "hang-call":
        hang()
    if MODE == "flood":
        while True:
            OUT.write(b"debug: still thinking about it\n" * 100)
            OUT.flush()
    if MODE == "huge":
        OUT.write(
            b'{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"'
            % json.dumps(rid).encode()
        )
        block = b"x" * (1 << 20)
        for _ in range(100):
            OUT.write(block)
        OUT.write(b'"}]}}\n')
        OUT.flush()
        return
    if MODE == "sampling":
        answers = []
        for n, method in enumerate(("sampling/createMessage", "elicitation/create", "roots/list")):
            send({"jsonrpc": "2.0", "id": f"srv-{n}", "method": method, "params": {}})
            answer = read()
            answers.append(answer)
        reply(rid, {"content": [{"type": "text", "text": json.dumps(answers)}]})
        return
    if MODE == "stray-id":
        reply(9999, {"content": []})
        return
    if MODE == "not-jsonrpc":
        send({"hello": "world"})
        return
    if MODE == "echo-env":
        seen = {"env": dict(os.environ), "cwd": os.getcwd()}
        reply(rid, {"content": [{"type": "text", "text": json.dumps(seen)}]})
        return
    if MODE.startswith("deep-"):
        deep(rid)
        return
    if MODE == "stderr-flood":
        for _ in range(2048):
            sys.stderr.write("noise " * 170 + "\n")
        sys.stderr.flush()
    reply(rid, {"content": [{"type": "text", "text": "ok"}]})


def main() -> int:
    if MODE == "exit-early":
        sys.stderr.write("fatal: no configuration found\n")
        return 3
    if MODE == "hang-start":
        if PIDFILE:
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            with open(PIDFILE, "w") as handle:
                handle.write(str(child.pid))
        hang()
    if MODE == "ignore-eof":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        message = read()
        if message is None:
            if MODE == "ignore-eof":
                hang()
            return 0
        if "id" not in message or "method" not in message:
            continue
        rid, method = message["id"], message["method"]
        if method == "initialize" and MODE == "refuse-init":
            error = {
                "code": -32602,
                "message": "Unsupported protocol version",
                "data": {"supported": ["1999-01-01"]},
            }
            send({"jsonrpc": "2.0", "id": rid, "error": error})
        elif method == "initialize":
            reply(
                rid,
                {
                    "protocolVersion": message["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": f"fault-{MODE}", "version": "0"},
                },
            )
        elif method == "tools/list":
            reply(rid, tools_page((message.get("params") or {}).get("cursor")))
        elif method == "tools/call":
            call_tool(rid)
        else:
            send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "error": {"code": -32601, "message": f"Unsupported method: {method}"},
                }
            )


if __name__ == "__main__":
    sys.exit(main())
