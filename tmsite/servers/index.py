"""The index driver: map entries derived from a server's own schemas.

A tool **reads one thing by identifiers** when every required argument is identifier-like — a
string (no free-text name such as ``query`` or ``content``, no ``maxLength`` over 512) or an
integer — and there is at least one. Then:

* its name starts with ``get``, ``read`` or ``fetch`` (``get_element``, ``fetchUser``) and it
  does not say it writes (``readOnlyHint: false`` or ``destructiveHint: true``) → an entry
  with confidence ``inferred``: path ``<noun>/{arg}/…`` (``element/{symbol}``), kind ``<noun>``;
* otherwise, if its annotations say ``readOnlyHint: true`` and its name does not start like a
  listing, search or write (``list``, ``search``, ``find``, ``query``, ``write``, ``set``,
  ``create``, ``update``, ``delete``, ``new``…) → an entry with confidence ``low``, path
  ``<name>/{arg}/…``.

No other tool is mapped, and only mapped tools are ever run. The argument mapping is the
identity (``{"symbol": "{symbol}"}``). What is known of a program's tools beyond their schemas
(``programs.CONFIRMED``: the demo program's ``get_element`` reads exactly one element) is given
to the entry derived for a server running that program: still a derived entry.

:func:`rederive` applies a derivation to the stored map: it adds entries for tools not yet
mapped, updates derived entries no maintainer touched, and removes derived entries no
maintainer touched whose tool is no longer derived. A touched entry (``touched``: a maintainer
changed it) is never changed, nor is a path a maintainer's entry already holds. Every change is
a :class:`~tmsite.servers.models.MapEntryChange` by ``"index driver"``.

Spec: MCP.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from django.db import transaction
from django.utils import timezone

from tmsite.servers import grammar, programs
from tmsite.servers.changes import entry_values, log_entry
from tmsite.servers.models import MapEntry, McpServer, ServerDeclaration

DRIVER = "index driver"
_READ_PREFIX = re.compile(r"(?:get|read|fetch)(?:_|-|(?=[A-Z]))(.+)", re.ASCII)
_NOT_ONE_THING = re.compile(
    r"(?:list|search|find|query|write|set|put|post|create|update|delete|remove|new|add|"
    r"run|exec|send|make|generate)(?:_|-|(?=[A-Z])|$)",
    re.ASCII | re.IGNORECASE,
)
FREE_TEXT = frozenset(
    {
        "query",
        "q",
        "text",
        "content",
        "contents",
        "body",
        "prompt",
        "message",
        "messages",
        "code",
        "script",
        "data",
        "json",
        "input",
        "description",
        "filter",
        "search",
        "sql",
        "expression",
        "command",
    }
)


@dataclass(frozen=True)
class Derived:
    """One entry the driver proposes."""

    tool: str
    path_template: str
    arguments: dict[str, Any]
    kind: str
    confidence: str
    reason: str
    notes: str = ""

    def values(self) -> dict[str, Any]:
        """The entry's correctable fields as :class:`~tmsite.servers.models.MapEntry` holds them."""
        return entry_values(self)


def _slug(text: str) -> str:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", text)
    slug = re.sub(r"[^a-z0-9]+", "-", spaced.lower()).strip("-")
    if not slug or not slug[0].isalpha():
        slug = f"x-{slug}".rstrip("-")
    return slug[:40].rstrip("-")


def identifier_like(name: str, schema: Any) -> bool:
    """Whether one argument's schema reads as an identifier (a short string or an integer)."""
    if name.lower() in FREE_TEXT or not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    if kind == "integer":
        return True
    if kind != "string":
        return False
    max_length = schema.get("maxLength")
    return not (isinstance(max_length, int) and max_length > 512)


def derive_tool(tool: dict[str, Any]) -> Derived | str:
    """The entry one tool derives, or why it derives none (the rules of the module docstring)."""
    ordered = _identifier_arguments(tool)
    if isinstance(ordered, str):
        return ordered
    name: str = tool["name"]
    annotations = tool.get("annotations")
    annotations = annotations if isinstance(annotations, dict) else {}
    if annotations.get("readOnlyHint") is False or annotations.get("destructiveHint") is True:
        return "its annotations say it writes"
    arguments = {arg: f"{{{arg}}}" for arg in ordered}
    tail = "/".join(f"{{{arg}}}" for arg in ordered)
    prefixed = _READ_PREFIX.fullmatch(name)
    if prefixed is not None:
        noun, confidence, why = _slug(prefixed[1]), "inferred", "starts like a read"
    elif annotations.get("readOnlyHint") is True and not _NOT_ONE_THING.match(name):
        noun, confidence, why = _slug(name), "low", "is marked read-only"
    else:
        return "its name does not start like a read of one thing"
    return Derived(
        name,
        f"{noun}/{tail}",
        arguments,
        noun,
        confidence,
        f"{name} {why} and takes identifiers only ({', '.join(ordered)})",
    )


def _identifier_arguments(tool: dict[str, Any]) -> list[str] | str:
    """A tool's required arguments in schema order, or why it does not read one thing by them.

    The tool must have a plain name, an input schema and at least one required argument, each
    with a plain name and an identifier-like schema (:func:`identifier_like`).
    """
    name = tool.get("name")
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9._-]{1,128}", name):
        return "its name is not a plain identifier"
    schema = tool.get("inputSchema")
    if not isinstance(schema, dict):
        return "no input schema"
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    required = schema.get("required")
    if not isinstance(required, list) or not required:
        return "no required arguments: it does not name one thing"
    if not all(isinstance(r, str) and grammar.ENV_NAME.fullmatch(r) for r in required):
        return "an argument name is not a plain identifier"
    loose = [r for r in required if not identifier_like(r, props.get(r))]
    if loose:
        return f"required argument {loose[0]!r} is not identifier-like"
    return [p for p in props if p in required] + [r for r in required if r not in props]


def derive(declaration: ServerDeclaration) -> tuple[list[Derived], dict[str, str]]:
    """Entries derived from a declaration's tools, and why each other tool derived none."""
    out: list[Derived] = []
    skipped: dict[str, str] = {}
    paths: set[str] = set()
    for tool in declaration.tools:
        found = derive_tool(tool)
        name = str(tool.get("name", ""))
        if isinstance(found, str):
            skipped[name] = found
            continue
        try:
            grammar.parse_template(found.path_template)
        except grammar.GrammarError as exc:
            skipped[name] = f"its path would be {found.path_template!r}: {exc}"
            continue
        if found.path_template in paths:
            skipped[name] = f"another tool already derives {found.path_template!r}"
            continue
        paths.add(found.path_template)
        out.append(found)
    return out, skipped


@dataclass
class Summary:
    """What one :func:`rederive` did to a map.

    The paths added, updated, removed and kept as corrected; and, by tool, why a tool was
    not mapped.
    """

    added: list[str]
    updated: list[str]
    removed: list[str]
    kept: list[str]
    skipped: dict[str, str]


def rederive(server: McpServer) -> Summary:
    """Apply the derivation from the server's latest declaration to its map (see the module)."""
    summary = Summary([], [], [], [], {})
    declaration = server.latest_declaration()
    if declaration is None:
        return summary
    derived, summary.skipped = derive(declaration)
    known = programs.CONFIRMED.get(server.program, {}) if server.program else {}
    derived = [_confirmed(item, known.get(item.tool)) for item in derived]
    now = timezone.now()
    with transaction.atomic():
        entries = list(MapEntry.objects.select_for_update().filter(server=server))
        by_key = {e.derived_key: e for e in entries if e.origin == "derived" and e.derived_key}
        taken = {e.path_template: e for e in entries}
        wanted = {d.tool for d in derived}
        for gone in entries:
            if gone.origin == "derived" and not gone.touched and gone.derived_key not in wanted:
                log_entry(gone, "remove", "*", entry_values(gone), None, None, DRIVER, now)
                summary.removed.append(gone.path_template)
                taken.pop(gone.path_template, None)
                gone.delete()
        for item in derived:
            _apply(server, item, by_key.get(item.tool), taken, summary, now)
    return summary


def _confirmed(item: Derived, fields: dict[str, str] | None) -> Derived:
    """The derived item with what is known of its program's tool (the confidence, notes)."""
    if not fields:
        return item
    return replace(
        item,
        confidence=fields.get("confidence", item.confidence),
        notes=fields.get("notes", item.notes),
        reason=f"{item.reason}; confirmed for the program",
    )


def _apply(
    server: McpServer,
    item: Derived,
    entry: MapEntry | None,
    taken: dict[str, MapEntry],
    summary: Summary,
    now: Any,
) -> None:
    """Bring one derived item into the map, ``entry`` being the one it derived before.

    A touched entry is kept; a path another entry holds is skipped; otherwise the entry is
    added, or its changed fields are rewritten (each change logged). ``taken`` (path → entry)
    follows along.
    """
    if entry is not None and entry.touched:
        summary.kept.append(entry.path_template)
        return
    holder = taken.get(item.path_template)
    if holder is not None and holder is not entry:
        summary.skipped[item.tool] = (
            f"{item.path_template!r} is held by another entry ({holder.tool})"
        )
        return
    if entry is None:
        entry = MapEntry(
            server=server,
            origin="derived",
            derived_key=item.tool,
            derived_reason=item.reason,
            updated_at=now,
            **item.values(),
        )
        entry.save()
        log_entry(entry, "derive", "*", None, entry_values(entry), None, DRIVER, now)
        summary.added.append(entry.path_template)
        taken[entry.path_template] = entry
        return
    changed = []
    for field, value in item.values().items():
        old = getattr(entry, field)
        if old != value:
            log_entry(entry, "rederive", field, old, value, None, DRIVER, now)
            setattr(entry, field, value)
            changed.append(field)
    if changed or entry.derived_reason != item.reason:
        taken.pop(entry.path_template, None)
        entry.derived_reason = item.reason
        entry.updated_at = now
        entry.save()
        taken[entry.path_template] = entry
        summary.updated.append(entry.path_template)
