"""Markdown to HTML for the documents pages, cached by (path, mtime, size).

The extensions are the site's fixed set: fenced code blocks, code highlighted by Pygments with
CSS classes (the colours live in ``static/site.css``), tables, and a table of contents that
gives every heading an ``id`` and a permalink.
"""

from __future__ import annotations

import html
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import markdown
from markdown.extensions.toc import slugify_unicode

EXTENSIONS = ["fenced_code", "codehilite", "tables", "toc"]
EXTENSION_CONFIGS: dict[str, dict[str, Any]] = {
    "codehilite": {"css_class": "highlight", "guess_lang": False},
    "toc": {
        "permalink": True,
        "permalink_title": "Link to this section",
        "slugify": slugify_unicode,
    },
}
#: How many rendered documents one process keeps.
CACHE_SIZE = 512


@dataclass(frozen=True)
class Heading:
    """One heading of a document, for a table of contents."""

    level: int
    id: str
    text: str


@dataclass(frozen=True)
class Rendered:
    """A rendered document.

    Attributes:
        html: the body HTML (no document frame).
        title: the text of the first level-1 heading, else None.
        headings: every heading in document order.
        mtime: the source's modification time (seconds since the epoch).
        size: the source's size in bytes.
    """

    html: str
    title: str | None
    headings: tuple[Heading, ...]
    mtime: float
    size: int


_lock = threading.Lock()
_cache: OrderedDict[tuple[str, int, int], Rendered] = OrderedDict()


def _flatten(tokens: list[dict[str, Any]]) -> list[Heading]:
    out: list[Heading] = []
    for token in tokens:
        out.append(Heading(int(token["level"]), str(token["id"]), html.unescape(token["name"])))
        out.extend(_flatten(token.get("children", [])))
    return out


def render_text(text: str) -> tuple[str, tuple[Heading, ...]]:
    """Render Markdown text with the site's extensions; returns the HTML and its headings."""
    md = markdown.Markdown(extensions=EXTENSIONS, extension_configs=EXTENSION_CONFIGS)
    body = md.convert(text)
    return body, tuple(_flatten(getattr(md, "toc_tokens", [])))


def render_file(path: Path) -> Rendered:
    """Render one Markdown file, from the cache when its mtime and size have not changed.

    Args:
        path: the file (already checked by the page rule; this function does not check it).

    Raises:
        OSError: the file cannot be read.
    """
    st = os.stat(path)
    key = (str(path), st.st_mtime_ns, st.st_size)
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    text = path.read_bytes().decode("utf-8", errors="replace")
    body, headings = render_text(text)
    title = next((h.text for h in headings if h.level == 1), None)
    rendered = Rendered(body, title, headings, st.st_mtime, st.st_size)
    with _lock:
        for stale in [k for k in _cache if k[0] == key[0] and k != key]:
            del _cache[stale]
        _cache[key] = rendered
        _cache.move_to_end(key)
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return rendered
