"""A proposal's prepared change as a unified diff: what would read differently, line by line.

Plain text for the receipt and the admin (which escapes it); never rendered as HTML.

Spec: PROP1, PROP2, PROP3.
"""

from __future__ import annotations

import difflib
import json
from typing import Any


def _lines(value: Any) -> list[str]:
    text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
    return [line + "\n" for line in text.splitlines()]


def _unified(before: list[str], after: list[str], old: str, new: str) -> str:
    return "".join(difflib.unified_diff(before, after, old, new))


def of(kind: str, change: dict[str, Any]) -> str:
    """The diff of one prepared change."""
    if kind == "address":
        note = change["note"]
        lines = [
            f"address: {note['uri']}",
            f"mount: {note['mount'] or '(none serves it)'}",
            *[f"nearest: {uri}" for uri in note["nearest"]],
            "expected:",
            *note["expected"].splitlines(),
        ]
        return _unified([], [line + "\n" for line in lines], "/dev/null", "queue note")
    if kind == "link":
        after = [
            f"{link['from']} {link['rel']} {link['to']} "
            f"(confidence {link['confidence']}, {link['provenance']})\n"
            for link in change["links"]
        ]
        return _unified([], after, "links as served", "links as curated")
    if kind == "correction":
        row = change["correction"]
        where = row.get("path_template") or row.get("key")
        field = row["field"]
        return _unified(
            _lines(change["old"]), _lines(change["new"]), f"{where} {field}", f"{where} {field}"
        )
    if kind == "trail":
        trail = change["trail"]
        path = f"notes/trails/{trail['name']}.json"
        return _unified([], _lines(trail["file"]), "/dev/null", path)
    return ""
