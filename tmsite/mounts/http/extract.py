"""A page's readable text and its title, from the HTML a visitor gets.

The text is the content of ``<main>`` (else ``<article>``, else ``<body>``), without the
page's chrome: ``nav``, ``aside``, ``script``, ``style``, ``noscript`` and ``template`` are
dropped with everything inside them, and so are ``head`` (the ``<title>`` is never body text)
and heading permalinks (``class="headerlink"``).
Block elements break lines; whitespace folds to one space except inside ``pre``, whose lines are
kept as written. Lines are stripped (``pre`` lines only on the right), empty lines outside
``pre`` dropped, and the text ends with a newline.

Spec: HTTP.
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

SKIPPED = frozenset({"nav", "aside", "script", "style", "noscript", "template", "head", "title"})
#: Classes of elements that are chrome inside the content: heading permalinks.
SKIPPED_CLASSES = frozenset({"headerlink"})
BLOCKS = frozenset(
    {
        "address", "article", "blockquote", "br", "dd", "details", "div", "dl", "dt",
        "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5",
        "h6", "header", "hr", "li", "main", "ol", "p", "pre", "section", "summary", "table",
        "tbody", "td", "tfoot", "th", "thead", "tr", "ul",
    }
)  # fmt: skip
#: Elements that never have content or an end tag.
VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
)
_SPACE = re.compile(r"\s+")
_TITLE = re.compile(rb"<title[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)
TITLE_WINDOW = 16 * 1024


class _Collector(HTMLParser):
    """Collects text per container (main, article, body) in one pass."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool]] = []  # (tag, whether it started a skipped span)
        self.skip = 0
        self.pre = 0
        #: container → list of (is_pre, text) pieces, with "\n" pieces as line breaks
        self.parts: dict[str, list[tuple[bool, str]]] = {"main": [], "article": [], "body": []}
        self.inside: dict[str, int] = {"main": 0, "article": 0, "body": 0}
        self.seen_body = False
        self.opened: set[str] = set()

    def _emit(self, piece: tuple[bool, str]) -> None:
        for name, depth in self.inside.items():
            if depth or (name == "body" and not self.seen_body):
                self.parts[name].append(piece)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in VOID:
            if tag == "br" and not self.skip:
                self._emit((False, "\n"))
            return
        classes = " ".join(v or "" for k, v in attrs if k == "class").split()
        skipped = tag in SKIPPED or any(c in SKIPPED_CLASSES for c in classes)
        self.stack.append((tag, skipped))
        if tag == "body":
            self.seen_body = True
            self.inside["body"] += 1
            return
        if skipped:
            self.skip += 1
            return
        if self.skip:
            return
        if tag in self.inside:
            self.inside[tag] += 1
            self.opened.add(tag)
        if tag == "pre":
            self.pre += 1
        if tag in BLOCKS:
            self._emit((False, "\n"))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "br" and not self.skip:
            self._emit((False, "\n"))

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID or all(open_tag != tag for open_tag, _ in self.stack):
            return
        while self.stack:
            open_tag, skipped = self.stack.pop()
            self._close(open_tag, skipped)
            if open_tag == tag:
                break

    def _close(self, tag: str, skipped: bool) -> None:
        if tag == "body":
            self.inside["body"] = max(0, self.inside["body"] - 1)
            return
        if skipped:
            self.skip = max(0, self.skip - 1)
            return
        if self.skip:
            return
        if tag in BLOCKS:
            self._emit((False, "\n"))
        if tag == "pre":
            self.pre = max(0, self.pre - 1)
        if tag in self.inside:
            self.inside[tag] = max(0, self.inside[tag] - 1)

    def handle_data(self, data: str) -> None:
        if self.skip:
            return
        self._emit((self.pre > 0, data))


def _lines(pieces: list[tuple[bool, str]]) -> str:
    """The text of a container's pieces: one line per block, ``pre`` lines as written."""
    lines: list[tuple[bool, str]] = []  # (from a pre, text)
    current: list[str] = []
    current_pre = False

    def flush() -> None:
        nonlocal current, current_pre
        text = "".join(current)
        if current_pre:
            lines.append((True, text.rstrip()))
        elif text.strip():
            lines.append((False, text.strip()))
        current = []
        current_pre = False

    for is_pre, text in pieces:
        if not is_pre:
            if text == "\n":
                flush()
            else:
                current.append(_SPACE.sub(" ", text))
            continue
        for index, chunk in enumerate(text.split("\n")):
            if index:
                current_pre = True
                flush()
            current_pre = True
            current.append(chunk)
    flush()
    out = _without_stray_blank_pre(lines)
    return "\n".join(out) + "\n" if out else ""


def _without_stray_blank_pre(lines: list[tuple[bool, str]]) -> list[str]:
    """The lines' text, keeping a blank pre line only between two written pre lines."""
    out: list[str] = []
    last_pre = False
    for index, (is_pre, text) in enumerate(lines):
        if is_pre and not text:
            later = next((p for p, t in lines[index + 1 :] if not p or t), False)
            if not (last_pre and later):
                continue
        out.append(text)
        last_pre = is_pre
    return out


def page_text(document: str) -> str:
    """The readable text of an HTML document (see the module docstring)."""
    collector = _Collector()
    collector.feed(document)
    collector.close()
    for container in ("main", "article"):
        if container in collector.opened:
            return _lines(collector.parts[container])
    return _lines(collector.parts["body"])


def page_title(body: bytes, site_suffix: bool = True) -> str | None:
    """The ``<title>`` of an HTML document (its first 16 KiB), without a trailing " · site"."""
    match = _TITLE.search(body[:TITLE_WINDOW])
    if match is None:
        return None
    title = html.unescape(match.group(1).decode("utf-8", "replace"))
    title = _SPACE.sub(" ", title).strip()
    if site_suffix and " · " in title:
        title = title.rsplit(" · ", 1)[0].strip()
    return title or None


def decode(body: bytes, content_type: str) -> str:
    """The text of a body in the charset its type names (UTF-8 by default), never failing."""
    charset = "utf-8"
    for param in content_type.split(";")[1:]:
        key, _, value = param.strip().partition("=")
        if key.lower() == "charset" and value:
            charset = value.strip().strip('"')
    try:
        return body.decode(charset, "replace")
    except LookupError:
        return body.decode("utf-8", "replace")
