"""Markdown to HTML for the documents pages, cached by (path, mtime, size).

The extensions are the site's fixed set: fenced code blocks, code highlighted by Pygments with
CSS classes (the colours live in ``static/site.css``), tables, and a table of contents that
gives every heading an ``id`` and a permalink. Relative links from one document to another
Markdown file are rewritten to the page that file makes (:func:`tmsite.mounts.http.pages.link_for`).

Spec: OP3.
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

from tmsite.mounts.http.pages import link_for

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
_cache: OrderedDict[tuple[str, str | None, str, int, int], Rendered] = OrderedDict()


def _flatten(tokens: list[dict[str, Any]]) -> list[Heading]:
    out: list[Heading] = []
    for token in tokens:
        out.append(Heading(int(token["level"]), str(token["id"]), html.unescape(token["name"])))
        out.extend(_flatten(token.get("children", [])))
    return out


class _PageLinks:
    """A Markdown tree processor: links to Markdown files become links to their pages."""

    def __init__(self, source: str, lang: str) -> None:
        self.source = source
        self.lang = lang

    def run(self, root: Any) -> None:
        for anchor in root.iter("a"):
            target = link_for(self.source, self.lang, anchor.get("href") or "")
            if target is not None:
                anchor.set("href", target)


def render_text(
    text: str, source: str | None = None, lang: str = "en"
) -> tuple[str, tuple[Heading, ...]]:
    """Render Markdown text with the site's extensions; returns the HTML and its headings.

    Args:
        text: the Markdown.
        source: the checkout-relative file it came from; when given, links to other Markdown
            files become links to their pages, as read in ``lang``.
        lang: the language of the page being rendered.
    """
    md = markdown.Markdown(extensions=EXTENSIONS, extension_configs=EXTENSION_CONFIGS)
    if source is not None:
        # after the inline patterns (priority 20) have made the <a> elements
        md.treeprocessors.register(_PageLinks(source, lang), "tm_page_links", 1)
    body = md.convert(text)
    return body, tuple(_flatten(getattr(md, "toc_tokens", [])))


def render_file(path: Path, source: str | None = None, lang: str = "en") -> Rendered:
    """Render one Markdown file, from the cache when its mtime and size have not changed.

    Args:
        path: the file (already checked by the page rule; this function does not check it).
        source: its checkout-relative name, to rewrite links (see :func:`render_text`).
        lang: the language of the page being rendered.

    Raises:
        OSError: the file cannot be read.
    """
    st = os.stat(path)
    key = (str(path), source, lang, st.st_mtime_ns, st.st_size)
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    text = path.read_bytes().decode("utf-8", errors="replace")
    body, headings = render_text(text, source, lang)
    title = next((h.text for h in headings if h.level == 1), None)
    rendered = Rendered(body, title, headings, st.st_mtime, st.st_size)
    with _lock:
        for stale in [k for k in _cache if k[:3] == key[:3] and k != key]:
            del _cache[stale]
        _cache[key] = rendered
        _cache.move_to_end(key)
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return rendered
