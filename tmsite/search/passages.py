r"""A document cut into passages a hit can name (``?lines=a-b``), and a hit's snippet.

A passage runs from one markdown heading to the next, at most ``MAX_LINES`` lines; its
heading is kept to be matched with more weight than its body. Lines end at ``\n`` only, as
the ``lines`` part counts them.

Spec: SRCH2.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tmsite.search.query import Query, is_cjk

MAX_LINES = 40
#: Text kept of a document that does not take ``lines`` (one passage).
MAX_WHOLE_CHARS = 64 * 1024
SNIPPET_CHARS = 240
MARK_OPEN, MARK_CLOSE = "«", "»"
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


@dataclass(frozen=True)
class Passage:
    """Lines ``first``–``last`` (1-based, inclusive) of a text, under ``heading``."""

    first: int
    last: int
    heading: str
    text: str


def words(value: Any) -> Iterator[str]:
    """The text of a JSON value, nested lists and objects flattened, one value a line.

    How a mount offers a thing that reads as JSON: the values a reader would see, not its keys.
    """
    if isinstance(value, Mapping):
        for item in value.values():
            yield from words(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from words(item)
    elif isinstance(value, str):
        if value.strip():
            yield value
    elif value is not None and not isinstance(value, bool):
        yield json.dumps(value)


def digest(text: str) -> str:
    """A stamp for a document whose text is cheap to make: the text's digest."""
    return hashlib.blake2s(text.encode("utf-8"), digest_size=8).hexdigest()


def title_of(text: str, fallback: str) -> str:
    """A markdown document's first ``#`` heading, else ``fallback``."""
    for line in text.split("\n", 200)[:200]:
        match = _HEADING.match(line)
        if match and len(match[1]) == 1:
            return match[2][:200] or fallback
    return fallback


def cut(text: str, markdown: bool) -> list[Passage]:
    """``text``'s passages, blank ones left out."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    out: list[Passage] = []
    heading, start, fenced = "", 0, False
    for number, line in enumerate(lines):
        if markdown and _FENCE.match(line):
            fenced = not fenced
        match = _HEADING.match(line) if markdown and not fenced else None
        if match is not None or number - start >= MAX_LINES:
            _keep(out, lines, start, number, heading)
            start = number
            if match is not None:
                heading = match[2]
    _keep(out, lines, start, len(lines), heading)
    return out


def whole(text: str) -> list[Passage]:
    """A document read whole (no ``lines``): one passage of its first ``MAX_WHOLE_CHARS``."""
    return [Passage(0, 0, "", text[:MAX_WHOLE_CHARS])] if text.strip() else []


def _keep(out: list[Passage], lines: list[str], start: int, end: int, heading: str) -> None:
    body = "\n".join(lines[start:end])
    if body.strip():
        out.append(Passage(start + 1, end, heading[:200], body))


def _matches(word: str, term: str) -> bool:
    """Whether a word of the text is the query's ``term`` by stem (a shared stem of 4+)."""
    if word == term:
        return True
    shorter = min(len(word), len(term))
    if shorter < 4:
        return False
    common = 0
    for a, b in zip(word, term, strict=False):
        if a != b:
            break
        common += 1
    return common >= max(4, shorter - 3)


def _pattern(query: Query) -> re.Pattern[str]:
    """Where a match may start: a CJK word itself, an English word's first letters."""
    alternatives = []
    for term in query.needed:
        if is_cjk(term):
            alternatives.append(re.escape(term))
        elif len(term) >= 4:
            alternatives.append(r"\b" + re.escape(term[: max(4, len(term) - 3)]) + r"\w*")
        else:
            alternatives.append(r"\b" + re.escape(term) + r"\b")
    return re.compile("|".join(alternatives), re.IGNORECASE)


def snippet(text: str, query: Query) -> str:
    """Up to ``SNIPPET_CHARS`` of ``text`` around its first match, matches «marked»."""
    normal = unicodedata.normalize("NFKC", text)
    latin = [term for term in query.needed if not is_cjk(term)]
    spans: list[tuple[int, int]] = []
    for match in _pattern(query).finditer(normal):
        found = match[0].lower()
        if is_cjk(found) or any(_matches(found, term) for term in latin):
            spans.append(match.span())
            if match.start() > spans[0][0] + SNIPPET_CHARS:
                break
    spans = _merged(spans)
    start = max(0, spans[0][0] - SNIPPET_CHARS // 3) if spans else 0
    end = min(len(normal), start + SNIPPET_CHARS)
    pieces, at = [], start
    for a, b in spans:
        if a < start or b > end:
            continue
        pieces += [normal[at:a], MARK_OPEN, normal[a:b], MARK_CLOSE]
        at = b
    pieces.append(normal[at:end])
    shown = " ".join("".join(pieces).split())
    return ("…" if start > 0 else "") + shown + ("…" if end < len(normal) else "")


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out
