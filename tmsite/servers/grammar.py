"""The small grammars of server records and map entries, checked in one place.

A map entry's **path template** names things under ``mcp/<server>/``: segments separated by
``/``, each a literal (letters, digits, ``.``, ``_``, ``-``) or a variable ``{name}``. The first
segment is a literal and not one of the record's own children (``tools``, ``resources``,
``prompts``, ``map``); a variable appears once; at most eight segments. Its **arguments** map
each tool argument to ``"{variable}"`` (the path segment) or to a constant JSON value.

Spec: MCP.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

#: The record's own children: never the first segment of a map path.
RESERVED = frozenset({"tools", "resources", "prompts", "map"})
MAX_SEGMENTS = 8
SERVER_NAME = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,48}[a-z0-9])?", re.ASCII)
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}", re.ASCII)
KIND = re.compile(r"[a-z][a-z0-9-]{0,39}", re.ASCII)
_LITERAL = re.compile(r"[A-Za-z0-9._-]{1,64}", re.ASCII)
_VARIABLE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]{0,63})\}", re.ASCII)


class GrammarError(ValueError):
    """A template, argument mapping, kind or name outside its grammar (the message says why)."""


@dataclass(frozen=True)
class Segment:
    """One template segment: a literal, or a variable (``variable`` set)."""

    text: str
    variable: str | None = None


def parse_template(text: str) -> tuple[Segment, ...]:
    """The segments of a path template.

    Raises:
        GrammarError: the template is outside the grammar.
    """
    if not isinstance(text, str) or not text or text.startswith("/") or text.endswith("/"):
        raise GrammarError("a path template is segments separated by '/', e.g. element/{symbol}")
    raw = text.split("/")
    if len(raw) > MAX_SEGMENTS:
        raise GrammarError(f"a path template has at most {MAX_SEGMENTS} segments")
    segments: list[Segment] = []
    seen: set[str] = set()
    for index, part in enumerate(raw):
        var = _VARIABLE.fullmatch(part)
        if var is not None:
            if index == 0:
                raise GrammarError("the first segment of a path template is a literal")
            if var[1] in seen:
                raise GrammarError(f"the variable {{{var[1]}}} appears twice")
            seen.add(var[1])
            segments.append(Segment(part, var[1]))
        elif _LITERAL.fullmatch(part) and part not in {".", ".."}:
            if index == 0 and part in RESERVED:
                raise GrammarError(
                    f"{part!r} is the record's own child; a map path cannot start with it"
                )
            segments.append(Segment(part))
        else:
            raise GrammarError(
                f"segment {part[:40]!r}: a literal (letters, digits, . _ -) or {{name}}"
            )
    return tuple(segments)


def variables(template: str) -> list[str]:
    """The variables of a template, in order."""
    return [s.variable for s in parse_template(template) if s.variable is not None]


def check_arguments(arguments: Any, template: str) -> dict[str, Any]:
    """Check an argument mapping against its template; return it.

    Raises:
        GrammarError: not an object, a reference to an unknown variable, or a variable of the
            template that no argument takes.
    """
    if not isinstance(arguments, dict):
        raise GrammarError("arguments map each tool argument to '{variable}' or a constant")
    names = set(variables(template))
    used: set[str] = set()
    for key, value in arguments.items():
        if not isinstance(key, str) or not key or len(key) > 128:
            raise GrammarError("argument names are non-empty strings of at most 128 characters")
        ref = reference(value)
        if ref is not None:
            if ref not in names:
                raise GrammarError(f"argument {key!r} takes {{{ref}}}, which the template lacks")
            used.add(ref)
    unused = sorted(names - used)
    if unused:
        raise GrammarError(f"no argument takes the template's {{{unused[0]}}}")
    return arguments


def reference(value: Any) -> str | None:
    """The variable a mapped argument takes (``"{symbol}"`` → ``symbol``), else None."""
    ref = _VARIABLE.fullmatch(value) if isinstance(value, str) else None
    return ref[1] if ref is not None else None


def check_kind(kind: str) -> str:
    """The kind a map entry types its answers by, unchanged once checked.

    Raises:
        GrammarError: it is not lowercase letters, digits and ``-``, starting with a letter.
    """
    if not isinstance(kind, str) or not KIND.fullmatch(kind):
        raise GrammarError("a kind is lowercase letters, digits and '-', starting with a letter")
    return kind
