"""A stdio MCP server with resources, answering ``resources/read`` in one chosen way.

``resource_peer.py MODE [--log PATH]``: plain 2025-era MCP (``server/discover`` is -32601).
It declares the resources in ``RESOURCES`` and the templates ``peer://files/{name}`` and
``peer://tree/{+path}``; with ``--log`` every URI ``resources/read`` is asked for is appended
to PATH, one a line, so a test can tell whether the server was asked at all. Modes, for
``resources/read``:

ok          the resource as declared (text, JSON, a PNG blob, 300 KiB of text); a template's
            URI reads as ``<template name> <value>``; ``peer://missing`` is -32002
hang        never answers
huge        one 100 MB line
many        101 content items
both        an item with both text and blob
neither     an item with neither
bad-base64  a blob that is not base64
bad-mime    a mimeType with a line break in it
not-list    contents as an object
other-uri   one item whose uri is another than the one asked
meta        the item carries its own ``_meta``
"""

from __future__ import annotations

import base64
import json
import sys
from typing import Any

MODE = sys.argv[1]
LOG = sys.argv[sys.argv.index("--log") + 1] if "--log" in sys.argv else None
OUT = sys.stdout.buffer

#: A 1×1 PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
BIG = "line of text\n" * (300 * 1024 // 13)
RESOURCES: dict[str, tuple[str, dict[str, Any]]] = {
    "peer://notes/readme": ("text/markdown", {"text": "# Readme\n\nHello from the peer.\n"}),
    "peer://data/table.json": ("application/json", {"text": json.dumps({"rows": [1, 2, 3]})}),
    "peer://img/dot.png": ("image/png", {"blob": base64.b64encode(PNG).decode()}),
    "peer://big/text": ("text/plain", {"text": BIG}),
    "peer://missing": ("text/plain", {}),
}
TEMPLATES = [
    {"uriTemplate": "peer://files/{name}", "name": "files", "mimeType": "text/plain"},
    {"uriTemplate": "peer://tree/{+path}", "name": "tree"},
]


def send(message: dict[str, Any]) -> None:
    OUT.write(json.dumps(message).encode() + b"\n")
    OUT.flush()


def reply(rid: Any, result: dict[str, Any]) -> None:
    send({"jsonrpc": "2.0", "id": rid, "result": result})


def error(rid: Any, code: int, message: str) -> None:
    send({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})


def item(uri: str) -> dict[str, Any] | None:
    """The one content item ``ok`` answers for ``uri``, or None when there is none."""
    if uri in RESOURCES and uri != "peer://missing":
        mime, body = RESOURCES[uri]
        return {"uri": uri, "mimeType": mime, **body}
    for prefix, name in (("peer://files/", "files"), ("peer://tree/", "tree")):
        if uri.startswith(prefix):
            return {"uri": uri, "text": f"{name} {uri[len(prefix) :]}"}
    return None


def read_resource(rid: Any, uri: str) -> None:
    if LOG:
        with open(LOG, "a", encoding="utf-8") as log:
            log.write(uri + "\n")
    if MODE == "hang":
        sys.stdin.buffer.read()  # until the client gives up and closes
        return
    if MODE == "huge":
        OUT.write(
            b'{"jsonrpc":"2.0","id":%s,"result":{"contents":[{"uri":"x","text":"'
            % (json.dumps(rid).encode())
        )
        block = b"x" * (1 << 20)
        for _ in range(100):
            OUT.write(block)
        OUT.write(b'"}]}}\n')
        OUT.flush()
        return
    found = item(uri)
    if found is None:
        error(rid, -32002, f"Resource not found: {uri}")
        return
    contents: Any = [found]
    if MODE == "many":
        contents = [{"uri": f"{uri}#{n}", "text": str(n)} for n in range(101)]
    elif MODE == "both":
        contents = [{"uri": uri, "text": "a", "blob": "YQ=="}]
    elif MODE == "neither":
        contents = [{"uri": uri, "mimeType": "text/plain"}]
    elif MODE == "bad-base64":
        contents = [{"uri": uri, "blob": "not base64!"}]
    elif MODE == "bad-mime":
        contents = [{"uri": uri, "mimeType": "text/html\r\nX-Injected: 1", "text": "<b>hi</b>"}]
    elif MODE == "not-list":
        contents = {"uri": uri, "text": "one"}
    elif MODE == "other-uri":
        contents = [{"uri": "peer://elsewhere", "text": "from elsewhere"}]
    elif MODE == "meta":
        contents = [{**found, "_meta": {"peer.example/etag": "v7"}}]
    reply(rid, {"contents": contents})


def main() -> int:
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return 0
        if not line.strip():
            continue
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue
        rid, method = message["id"], message["method"]
        params = message.get("params") or {}
        if method == "initialize":
            reply(
                rid,
                {
                    "protocolVersion": params["protocolVersion"],
                    "capabilities": {"resources": {}},
                    "serverInfo": {"name": f"resource-{MODE}", "version": "0"},
                },
            )
        elif method == "resources/list":
            listed = [
                {"uri": uri, "name": uri.rsplit("/", 1)[1], "mimeType": mime}
                for uri, (mime, _) in RESOURCES.items()
            ]
            listed[0]["size"] = len(RESOURCES["peer://notes/readme"][1]["text"])
            reply(rid, {"resources": listed})
        elif method == "resources/templates/list":
            reply(rid, {"resourceTemplates": TEMPLATES})
        elif method == "resources/read":
            read_resource(rid, str(params.get("uri")))
        else:
            error(rid, -32601, f"Unsupported method: {method}")


if __name__ == "__main__":
    sys.exit(main())
