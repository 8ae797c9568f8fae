"""A stand-in for koyu-mcp, speaking its protocol exactly as its protocol page documents it.

Hand-written JSON-RPC 2.0 over stdio: one message per line, blank lines skipped, lines that are
not JSON dropped without a reply, notifications and responses ignored, exit 0 at EOF, nothing
but JSON-RPC on stdout. ``initialize`` echoes the client's protocolVersion ("2025-06-18" when
absent), declares tools only, and keeps no state. Twelve tools with the documented required
arguments; results are one text item carrying ``JSON.stringify(value, null, 1)`` (plan_svg: the
SVG source); failures inside a tool are ``isError`` results; the only JSON-RPC errors are
-32601 ``Unsupported method: <m>`` and -32602 ``Unknown tool: <name>``. ``resources/list`` and
``prompts/list`` answer empty although undeclared.

The building language itself is reduced to a toy: a ``.muro`` file is lines ``space <name>
<level>``, ``boundary <a> <b>`` and ``region <level> <width>``; enough to walk every path.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

INSTRUCTIONS = (
    "Server for koyu, a space-first architectural description. Grasp the building with "
    "model_summary, read the original layers with layers, and edit with write_layer. check is "
    "the gatekeeper of the build and returns errors tagged layer:line — it guarantees "
    "structural consistency only. validate delivers the architectural verdicts, which are a "
    "separate and unfrozen surface. doors/light/site/spaces are different questions put to the "
    "same description. Form (plan_svg) is generated, never written."
)

FILE = {
    "type": "string",
    "description": "Path to the entry .muro file (imports are composed automatically)",
}


def _tool(
    name: str, description: str, extra: dict[str, Any], required: list[str]
) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "inputSchema": {
            "type": "object",
            "properties": {"file": FILE, **extra},
            "required": required,
        },
    }


S = {"type": "string"}
TOOLS = [
    _tool("model_summary", "Summarises the building", {}, ["file"]),
    _tool("check", "The gatekeeper of the build", {}, ["file"]),
    _tool("layers", "Reads the original layers", {}, ["file"]),
    _tool(
        "write_layer", "Writes one layer", {"layer": S, "content": S}, ["file", "layer", "content"]
    ),
    _tool("new_uids", "Mints new uids", {"count": {"type": "integer"}}, ["file"]),
    _tool("doors", "Doors between two spaces", {"from": S, "to": S}, ["file", "from", "to"]),
    _tool("spaces", "Lists the spaces", {"level": S}, ["file"]),
    _tool("light", "Daylight per space", {}, ["file"]),
    _tool("validate", "Architectural verdicts", {}, ["file"]),
    _tool("site", "The site", {}, ["file"]),
    _tool(
        "plan_svg",
        "Generates and returns the plan SVG for a level (form is generated, not written — the "
        "lowest level doubles as the site plan)",
        {"level": {"type": "string", "description": "Level name (e.g. L5)"}},
        ["file", "level"],
    ),
    _tool("canonical_json", "The canonical JSON of the description", {}, ["file"]),
]
BY_NAME = {t["name"]: t for t in TOOLS}


class ToolFailure(Exception):
    pass


def load(path: str) -> tuple[str, list[list[str]]]:
    absolute = os.path.abspath(path)
    try:
        with open(absolute, encoding="utf-8") as handle:
            text = handle.read()
    except OSError:
        raise ToolFailure(f"line 0: Cannot read file: {absolute}") from None
    rows: list[list[str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if words[0] == "region" and len(words) == 3 and words[2] == "0":
            raise ToolFailure(f"{absolute}:line {number}: The region has zero width")
        if words[0] not in ("space", "boundary", "region"):
            raise ToolFailure(f"{absolute}:line {number}: Unexpected {words[0]}")
        rows.append(words)
    return absolute, rows


def run_tool(name: str, args: dict[str, Any]) -> str:
    for key in BY_NAME[name]["inputSchema"]["required"]:
        if not isinstance(args.get(key), str):
            raise ToolFailure(f"{key} (a string) is required")
    _, rows = load(args["file"])
    spaces = [r for r in rows if r[0] == "space"]
    boundaries = [r for r in rows if r[0] == "boundary"]
    levels = sorted({r[2] for r in spaces if len(r) > 2})
    value: Any
    if name == "plan_svg":
        if args["level"] not in levels:
            raise ToolFailure(f"There is no space with a region on level {args['level']}")
        return f'<svg xmlns="http://www.w3.org/2000/svg"><title>{args["level"]}</title></svg>'
    if name == "check":
        value = {
            "ok": True,
            "spaces": len(spaces),
            "boundaries": len(boundaries),
            "errors": [],
            "warnings": [],
            "diagnostics": [],
        }
    elif name == "spaces":
        level = args.get("level")
        if level is not None and level not in levels:
            raise ToolFailure(f"There is no space with a region on level {level}")
        value = {"spaces": [r[1] for r in spaces if level is None or r[2:3] == [level]]}
    elif name == "new_uids":
        value = {"uids": [f"u{i:04d}" for i in range(int(args.get("count", 1)))]}
    elif name == "doors":
        value = {"from": args["from"], "to": args["to"], "doors": []}
    else:
        value = {"tool": name, "spaces": len(spaces), "levels": levels}
    return json.dumps(value, indent=1, ensure_ascii=False)


def handle(message: dict[str, Any]) -> dict[str, Any] | None:
    method = message.get("method")
    if not isinstance(method, str):
        return None  # a response: ignored
    if "id" not in message:
        return None  # a notification: no reply
    rid = message["id"]
    params = message.get("params") or {}
    if method == "initialize":
        version = params.get("protocolVersion", "2025-06-18")
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "koyu", "version": "0.16.0"},
            "instructions": INSTRUCTIONS,
        }
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        name = params.get("name")
        if name not in BY_NAME:
            return {
                "jsonrpc": "2.0",
                "id": rid,
                "error": {"code": -32602, "message": f"Unknown tool: {name}"},
            }
        try:
            result = {
                "content": [{"type": "text", "text": run_tool(name, params.get("arguments") or {})}]
            }
        except ToolFailure as exc:
            result = {"content": [{"type": "text", "text": str(exc)}], "isError": True}
    elif method == "resources/list":
        result = {"resources": []}
    elif method == "prompts/list":
        result = {"prompts": []}
    else:
        return {
            "jsonrpc": "2.0",
            "id": rid,
            "error": {"code": -32601, "message": f"Unsupported method: {method}"},
        }
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def main() -> int:
    out = sys.stdout
    for raw in sys.stdin.buffer:
        line = raw.strip()
        if not line:
            continue
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict):
            continue
        reply = handle(message)
        if reply is not None:
            out.write(json.dumps(reply, ensure_ascii=False) + "\n")
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
