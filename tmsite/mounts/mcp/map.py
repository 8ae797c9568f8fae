"""The ``mcp`` mount's map-named reads: match, check the arguments, shape the tool's answer.

A path is matched to a map entry, its arguments are checked, the tool is run, the answer is
shaped into the thing, and every failure is translated.

Decisions, in one place:

* **Matching.** A path under ``mcp/<server>/`` matches an entry when it has as many segments
  as the entry's template and every literal is equal; entries with more literals win, then the
  template text decides. Segments bound to variables are data: at most ``MAX_SEGMENT``
  characters, no control characters.
* **Arguments** are built from the entry's mapping and checked against the tool's declared
  input schema *before* the call: a segment for an ``integer`` must be ASCII digits (an optional
  ``-``), a ``number`` a decimal, a ``boolean`` ``true``/``false``; ``enum``, ``minLength``,
  ``maxLength``, ``minimum`` and ``maximum`` are honoured; ``required`` must be met and, with
  ``additionalProperties: false``, no other argument passed. Regular-expression ``pattern`` is
  not evaluated (an upstream regex is data, not code to run). A failure is ``bad-argument`` with
  ``argument`` and ``valid`` (what the schema expects).
* **The answer** becomes the thing: ``structuredContent``, else the JSON a lone text item
  carries, else the text. A JSON object is the body itself; any other value is ``{"value": …}``;
  text is ``{"text": …}``. The body's ``_meta["tinymachines.ai/provenance"]`` holds the server,
  tool, arguments, when it was called, the server's ``sources`` and ``licenceBasis``, the map
  entry's confidence, and any server→client requests that were refused.
* **A tool error** (``isError: true``) is ``not-found``: the map path names nothing the tool can
  answer for (an unknown symbol, a file that is not there). The refusal carries the tool's own
  words in ``toolError`` (capped) and ``nearest`` the server's map. A map entry naming a tool
  the server no longer declares is ``not-found`` too.
* **Faults** (the client's errors, a missing token) translate in one place,
  :mod:`tmsite.mounts.mcp.errors`.

Spec: MCP.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tmsite.core import errors
from tmsite.mcpclient import ToolResult
from tmsite.servers import grammar
from tmsite.servers.models import MapEntry, McpServer

MAX_SEGMENT = 512
MAX_TOOL_ERROR = 2000
PROVENANCE = "tinymachines.ai/provenance"
_INTEGER = re.compile(r"-?[0-9]{1,18}", re.ASCII)
_NUMBER = re.compile(r"-?[0-9]{1,18}(\.[0-9]{1,18})?", re.ASCII)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Match:
    """A map entry a path fits: its parsed template and the segment bound to each variable."""

    entry: MapEntry
    segments: tuple[grammar.Segment, ...]
    bindings: dict[str, str]


def match(entries: Sequence[MapEntry], path: Sequence[str]) -> Match | None:
    """The entry whose template ``path`` fits (most literals first), with its bindings."""
    candidates: list[tuple[int, str, Match]] = []
    for entry in entries:
        try:
            segments = grammar.parse_template(entry.path_template)
        except grammar.GrammarError:
            continue
        if len(segments) != len(path):
            continue
        bindings: dict[str, str] = {}
        for segment, given in zip(segments, path, strict=True):
            if segment.variable is None:
                if segment.text != given:
                    break
            else:
                bindings[segment.variable] = given
        else:
            literals = sum(1 for s in segments if s.variable is None)
            candidates.append((-literals, entry.path_template, Match(entry, segments, bindings)))
    return min(candidates, key=lambda c: c[:2])[2] if candidates else None


def _expects(schema: Mapping[str, Any]) -> list[str]:
    enum = schema.get("enum")
    if isinstance(enum, list):
        return [str(v) for v in enum[:50]]
    kind = schema.get("type")
    return [str(kind)] if isinstance(kind, str) else []


def arguments(uri: str, found: Match, tool: Mapping[str, Any]) -> dict[str, Any]:
    """The tool's arguments for a matched path, checked against its input schema.

    Raises:
        BadArgument: a segment or argument the schema refuses (``argument``, ``valid``).
    """
    schema = tool.get("inputSchema")
    schema = schema if isinstance(schema, dict) else {}
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    for variable, value in found.bindings.items():
        if len(value) > MAX_SEGMENT or _CONTROL.search(value) or not value:
            raise errors.BadArgument(
                uri,
                f"the segment for {{{variable}}} must be 1 to {MAX_SEGMENT} characters with no "
                "control characters",
                argument=variable,
                valid=[],
            )
    out: dict[str, Any] = {}
    for name, mapped in found.entry.arguments.items():
        ref = grammar.reference(mapped)
        declared = props.get(name)
        prop: dict[str, Any] = declared if isinstance(declared, dict) else {}
        if ref is None:
            out[name] = mapped
            continue
        out[name] = _convert(uri, name, found.bindings[ref], prop)
    required = schema.get("required")
    if isinstance(required, list):
        missing = [r for r in required if isinstance(r, str) and r not in out]
        if missing:
            raise errors.BadArgument(
                uri,
                f"the map entry gives the tool no {missing[0]!r}, which it requires",
                argument=missing[0],
                valid=sorted(out),
            )
    if schema.get("additionalProperties") is False:
        unknown = sorted(set(out) - set(props))
        if unknown:
            raise errors.BadArgument(
                uri,
                f"the tool takes no argument {unknown[0]!r}",
                argument=unknown[0],
                valid=sorted(str(p) for p in props),
            )
    return out


#: A path segment read as a JSON Schema scalar type: whether it fits, what it becomes, and
#: the refusal's words when it does not fit. Other types take the segment as a string, or
#: refuse it.
_SCALARS: dict[str, tuple[Callable[[str], bool], Callable[[str], Any], str]] = {
    "integer": (
        lambda text: bool(_INTEGER.fullmatch(text)),
        int,
        "an integer (ASCII digits) is expected",
    ),
    "number": (
        lambda text: bool(_NUMBER.fullmatch(text)),
        lambda text: float(text) if "." in text else int(text),
        "a number is expected",
    ),
    "boolean": (
        lambda text: text in {"true", "false"},
        lambda text: text == "true",
        "true or false is expected",
    ),
}


def _convert(uri: str, name: str, text: str, prop: Mapping[str, Any]) -> Any:
    """The segment ``text`` as the argument ``name`` the property schema ``prop`` describes.

    Raises:
        BadArgument: the segment has the wrong form, is not in ``enum``, or is out of bounds.
    """
    kind = prop.get("type")
    scalar = _SCALARS.get(kind) if isinstance(kind, str) else None
    why: str | None = None
    value: Any = text
    if scalar is not None:
        fits, convert, expected = scalar
        if fits(text):
            value = convert(text)
        else:
            why = expected
    elif kind not in (None, "string") and not (isinstance(kind, list) and "string" in kind):
        why = f"the tool takes a {kind} here, which a path segment cannot give"
    if why is None:
        enum = prop.get("enum")
        if isinstance(enum, list) and value not in enum:
            why = "one of the listed values is expected"
        else:
            why = _out_of_bounds(value, prop)
    if why is not None:
        raise errors.BadArgument(
            uri, f"{name}: {why}", argument=name, valid=_expects(prop) or [str(kind)]
        )
    return value


def _out_of_bounds(value: Any, prop: Mapping[str, Any]) -> str | None:
    """Why ``value`` breaks the schema's length (strings) or numeric bounds, or None."""
    if isinstance(value, str):
        low, high = prop.get("minLength"), prop.get("maxLength")
        if isinstance(low, int) and len(value) < low:
            return f"at least {low} characters"
        if isinstance(high, int) and len(value) > high:
            return f"at most {high} characters"
    elif isinstance(value, int | float) and not isinstance(value, bool):
        low, high = prop.get("minimum"), prop.get("maximum")
        if isinstance(low, int | float) and value < low:
            return f"at least {low}"
        if isinstance(high, int | float) and value > high:
            return f"at most {high}"
    return None


def tool_error(uri: str, result: ToolResult, nearest: list[str]) -> errors.NotFound:
    """The refusal for a tool's ``isError`` answer: ``not-found``, its words in ``toolError``."""
    text = result.text
    if len(text) > MAX_TOOL_ERROR:
        text = text[: MAX_TOOL_ERROR - 1] + "…"
    return errors.NotFound(
        uri,
        "the tool found nothing for this path (its words are in toolError)",
        nearest=nearest,
        toolError=text,
    )


def body_of(result: ToolResult, provenance: dict[str, Any]) -> dict[str, Any]:
    """The thing a tool's answer becomes (see the module docstring)."""
    data = result.data()
    body: dict[str, Any]
    if isinstance(data, dict):
        body = dict(data)
    elif data is not None:
        body = {"value": data}
    else:
        body = {"text": result.text}
    upstream = body.pop("_meta", None)
    meta: dict[str, Any] = {PROVENANCE: provenance}
    if upstream is not None:
        meta["upstream"] = upstream
    if result.meta:
        meta["result"] = result.meta
    body["_meta"] = meta
    return body


def provenance(
    record: McpServer, entry: MapEntry, args: dict[str, Any], server_uri: str, tool_uri: str
) -> dict[str, Any]:
    """How a thing was read: server, tool, arguments, map entry, when, and the server's sources."""
    return {
        "server": record.name,
        "serverUri": server_uri,
        "tool": entry.tool,
        "toolUri": tool_uri,
        "arguments": args,
        "mapEntry": entry.path_template,
        "confidence": entry.confidence,
        "calledAt": datetime.now(UTC).isoformat(),
        "sources": list(record.sources),
        "licenceBasis": record.licence_basis,
    }


def named_values(data: Any, limit: int = 2000) -> Iterator[tuple[str, str]]:
    """(field name, scalar value) pairs in the answer, breadth first, at most ``limit`` nodes."""
    queue: list[tuple[Any, int]] = [(data, 0)]
    seen = 0
    while queue and seen < limit:
        node, depth = queue.pop(0)
        seen += 1
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "_meta":
                    continue
                if isinstance(value, str | int) and not isinstance(value, bool):
                    text = str(value)
                    if 0 < len(text) <= 256 and not _CONTROL.search(text):
                        yield str(key), text
                elif depth < 4:
                    queue.append((value, depth + 1))
        elif isinstance(node, list) and depth < 4:
            queue.extend((item, depth + 1) for item in node[:500])


def field_targets(
    entries: Sequence[MapEntry], data: Any, build: Callable[[MapEntry, dict[str, str]], str]
) -> list[tuple[MapEntry, str]]:
    """Map paths the answer's fields name: a single-variable entry whose variable is a field."""
    single: dict[str, list[MapEntry]] = {}
    for entry in entries:
        try:
            names = grammar.variables(entry.path_template)
        except grammar.GrammarError:
            continue
        if len(names) == 1:
            single.setdefault(names[0], []).append(entry)
    out: list[tuple[MapEntry, str]] = []
    if not single:
        return out
    for key, value in named_values(data):
        for entry in single.get(key, []):
            out.append((entry, build(entry, {key: value})))
            if len(out) >= 500:
                return out
    return out
