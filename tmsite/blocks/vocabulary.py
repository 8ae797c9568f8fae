"""The closed vocabulary of blocks, and one constructor per block kind.

A block is a JSON object: its ``kind`` (one of :data:`BLOCK_KINDS`), the address it came from
(``from``, a complete ``tm://`` URI) and the fields of its kind. Nothing else draws a thing:
a viewer that knows these thirteen kinds can show any read of the namespace.

======== =====================================================================================
kind     fields
======== =====================================================================================
heading  ``text``, ``level`` (1-3), ``mediaType``? (the type of what it heads)
note     ``text``, ``tone`` (``info``, ``warning``)
kv       ``items``: ``{key, value, href?}`` — value a string, number, boolean or null
list     ``items``: ``{text, href?, type?}``, ``ordered``
table    ``columns``, ``rows`` (cells: scalars or ``{text, href}``), ``total``?, ``next``?
timeline ``events``: ``{when, title, href?, who?, detail?}``, newest first
diff     ``old``, ``new`` (addresses), ``lines``: ``{op: " "|"+"|"-", text}``
code     ``text``, ``mediaType``, ``language``?, ``firstLine``, ``annotations``?
         (``{line, text, href?}``: a commit on a line of blame)
media    ``mediaType``, ``href`` (the bytes' address), ``size``?, ``title``?
question ``prompt``, ``options``: ``{label, href}`` — addresses a reader may choose
finding  ``reason``, ``message``, ``data`` (the refusal's fields), ``target``
trail    ``title``, ``steps``: ``{n, href, note}``
link     ``rel``, ``href``, ``confidence``?, ``title``?, ``type``?, ``count``?
======== =====================================================================================

Spec: BLOCKS.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tmsite.core.links import Link

Block = dict[str, Any]

BLOCK_KINDS: tuple[str, ...] = (
    "heading",
    "note",
    "kv",
    "list",
    "table",
    "timeline",
    "diff",
    "code",
    "media",
    "question",
    "finding",
    "trail",
    "link",
)

Scalar = str | int | float | bool | None


def block(kind: str, source: str, **fields: Any) -> Block:
    """One block of ``kind`` from the address ``source``; ``None`` fields are left out."""
    assert kind in BLOCK_KINDS, f"{kind!r} is not in the block vocabulary"
    assert source.startswith("tm://"), f"a block comes from a tm:// address, not {source!r}"
    out: Block = {"kind": kind, "from": source}
    out.update({key: value for key, value in fields.items() if value is not None})
    return out


def _given(**fields: str | None) -> dict[str, str]:
    """The fields that have a value (an empty one is left out like None)."""
    return {key: value for key, value in fields.items() if value}


def scalar(value: Any) -> Scalar:
    """A value a kv or table cell can hold: scalars as they are, anything else as JSON text."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    import json

    return json.dumps(value, ensure_ascii=False, sort_keys=True)[:2000]


def heading(source: str, text: str, level: int = 1, media_type: str | None = None) -> Block:
    """A heading, ``level`` clamped to 1–3; ``media_type`` is the type of what it heads."""
    return block("heading", source, text=text, level=max(1, min(level, 3)), mediaType=media_type)


def note(source: str, text: str, tone: str = "info") -> Block:
    """A short text about the thing; ``tone`` is ``info`` or ``warning``."""
    return block("note", source, text=text, tone=tone)


def kv(source: str, items: Iterable[tuple[str, Any] | tuple[str, Any, str | None]]) -> Block:
    """Key-value rows from ``(key, value)`` or ``(key, value, href)``; values made scalar."""
    rows = []
    for item in items:
        href = item[2] if len(item) > 2 else None
        rows.append({"key": item[0], "value": scalar(item[1]), **_given(href=href)})
    return block("kv", source, items=rows)


def bullet(text: str, href: str | None = None, type_: str | None = None) -> dict[str, Any]:
    """One item of a list block: its text, and the address and type it points to, if any."""
    return {"text": text, **_given(href=href, type=type_)}


def listing(source: str, items: Sequence[dict[str, Any]], ordered: bool = False) -> Block:
    """A list block of :func:`bullet` items."""
    return block("list", source, items=list(items), ordered=ordered)


def cell(text: Any, href: str | None = None) -> Any:
    """A table cell: a scalar, or ``{text, href}`` when it is an address to follow."""
    if href:
        return {"text": str(text), "href": href}
    return scalar(text)


def table(
    source: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    total: int | None = None,
    next_page: str | None = None,
) -> Block:
    """A table; ``total`` is the whole count when rows are a page, ``next_page`` the next one."""
    return block(
        "table",
        source,
        columns=list(columns),
        rows=[list(r) for r in rows],
        total=total,
        next=next_page,
    )


def event(
    when: str,
    title: str,
    href: str | None = None,
    who: str | None = None,
    detail: str | None = None,
) -> dict[str, Any]:
    """One entry of a timeline: when, what, and optionally its address, who and a detail."""
    return {"when": when, "title": title, **_given(href=href, who=who, detail=detail)}


def timeline(source: str, events: Sequence[dict[str, Any]]) -> Block:
    """A timeline of :func:`event` entries, newest first."""
    return block("timeline", source, events=list(events))


def diff(source: str, old: str, new: str, lines: Sequence[dict[str, str]]) -> Block:
    """The lines that changed between the addresses ``old`` and ``new``."""
    return block("diff", source, old=old, new=new, lines=list(lines))


def code(
    source: str,
    text: str,
    media_type: str,
    language: str | None = None,
    first_line: int = 1,
    annotations: Sequence[dict[str, Any]] | None = None,
) -> Block:
    """Text to show as it is, of ``media_type``, numbered from ``first_line``, maybe annotated."""
    return block(
        "code",
        source,
        text=text,
        mediaType=media_type,
        language=language,
        firstLine=first_line,
        annotations=list(annotations) if annotations is not None else None,
    )


def media(
    source: str, media_type: str, href: str, size: int | None = None, title: str | None = None
) -> Block:
    """Bytes to draw by their type (an image…): they are read at ``href``."""
    return block("media", source, mediaType=media_type, href=href, size=size, title=title)


def question(source: str, prompt: str, options: Sequence[tuple[str, str]]) -> Block:
    """A choice of addresses, ``(label, href)``, for a reader to follow."""
    return block(
        "question",
        source,
        prompt=prompt,
        options=[{"label": label, "href": href} for label, href in options],
    )


def finding(source: str, reason: str, message: str, data: Mapping[str, Any], target: str) -> Block:
    """A refusal as a block: its reason, message and fields, and the address refused."""
    return block("finding", source, reason=reason, message=message, data=dict(data), target=target)


def trail(source: str, title: str, steps: Sequence[dict[str, Any]]) -> Block:
    """A trail's steps, in order."""
    return block("trail", source, title=title, steps=list(steps))


def link(source: str, found: Link) -> Block:
    """One link of the read, with the fields it carries."""
    return block("link", source, **found.to_json())
