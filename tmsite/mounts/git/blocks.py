"""Assemblers for the git mount's facets: a log is a timeline, blame is code with annotations.

A log body holds ``commits`` (each ``commit``, ``short``, ``author``, ``date``, ``subject``,
``uri``: the file at that commit). Blame is either JSON ``lines`` (each ``line``, ``commit``,
``text`` and optionally ``author``/``date``/``uri``) or the text of ``git blame`` with full
shas; either way the code is shown once, annotated where the commit changes.

Spec: BLOCKS.
"""

from __future__ import annotations

import re
from typing import Any

from tmsite.blocks import vocabulary as v
from tmsite.blocks.assemble import Context
from tmsite.blocks.generic import mapping, title_of
from tmsite.blocks.registry import assembles
from tmsite.blocks.vocabulary import Block
from tmsite.core.errors import Refusal
from tmsite.core.parts import to_text
from tmsite.core.types import Content
from tmsite.core.uri import parse

_BLAME_LINE = re.compile(
    r"^\^?(?P<sha>[0-9a-f]{7,40}) (?:\S+ )?\((?P<who>.*?)\s+(?P<date>\d{4}-\d{2}-\d{2})"
    r"(?:[ T][0-9:+\- ]*)?\s+(?P<n>\d+)\) ?(?P<text>.*)$"
)


@assembles(kinds=("log",), yields=("heading", "timeline", "kv"))
def log(ctx: Context, content: Content) -> list[Block]:
    """History, newest first, each commit followable to the thing as it was then."""
    body = mapping(content.body)
    source = content.uri
    commits = body.get("commits") or body.get("entries") or []
    events = []
    for commit in commits:
        if not isinstance(commit, dict):
            continue
        sha = str(commit.get("commit") or commit.get("sha") or "")
        title = str(commit.get("subject") or commit.get("message") or sha[:12] or "commit")
        href = commit.get("uri") if isinstance(commit.get("uri"), str) else None
        events.append(
            v.event(
                str(commit.get("date") or commit.get("when") or ""),
                title.split("\n")[0],
                href,
                str(commit.get("author") or "") or None,
                str(commit.get("short") or sha[:12]) or None,
            )
        )
    name = body.get("path") or title_of(body, source)
    blocks: list[Block] = [v.heading(source, f"History of {name}")]
    facts = [
        (key, body[key])
        for key in ("at", "n")
        if key in body and not isinstance(body[key], dict | list)
    ]
    if facts:
        blocks.append(v.kv(source, facts))
    blocks.append(v.timeline(source, events))
    return blocks


def _file_at(source: str, sha: str) -> str | None:
    try:
        uri = parse(source)
    except Refusal:
        return None
    return str(uri.keeping(at=sha))


@assembles(kinds=("blame",), yields=("heading", "code"))
def blame(ctx: Context, content: Content) -> list[Block]:
    """The file's text, each run of lines annotated with the commit that last changed it.

    Annotations carry the file's own line numbers, as ``firstLine`` does.
    """
    source = content.uri
    rows: list[tuple[int, str, str, str | None, str]] = []  # line, text, commit, href, label
    if content.is_json and isinstance(content.body, dict):
        for number, row in enumerate(content.body.get("lines") or [], start=1):
            sha = str(row.get("commit", ""))
            date = str(row.get("date") or "")[:10]
            label = " ".join(str(p) for p in (sha[:10], date, row.get("author")) if p)
            href = row.get("uri") if isinstance(row.get("uri"), str) else None
            rows.append(
                (int(row.get("line") or number), str(row.get("text", "")), sha, href, label)
            )
    else:
        for raw in to_text(content.body).split("\n"):
            match = _BLAME_LINE.match(raw)
            if match is not None:
                label = f"{match['sha'][:10]} {match['date']} {match['who'].strip()}"
                rows.append((int(match["n"]), match["text"], match["sha"], None, label))
    notes: list[dict[str, Any]] = []
    previous = None
    for line, _text, sha, href, label in rows:
        if sha and sha != previous:
            href = _file_at(source, sha) if href is None else href
            notes.append({"line": line, "text": label, **({"href": href} if href else {})})
        previous = sha
    texts = [row[1] for row in rows]
    first = rows[0][0] if rows else 1
    name = parse(source).name if source.startswith("tm://") else source
    return [
        v.heading(source, f"Blame of {name}"),
        v.code(source, "\n".join(texts), "text/plain", first_line=first, annotations=notes),
    ]
