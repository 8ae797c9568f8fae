"""The page rule: which file of the served checkout makes which page of the site, and back.

One module, used by the views that render the pages and by the ``http`` mount that reads them,
so the two cannot disagree.

Forward (:func:`page_for`), for a checkout-relative file path:

1. Only files under ``docs/`` whose name ends in ``.md`` have a page (the site renders
   Markdown; nothing else is a page).
2. ``README.md``, and any file or directory whose name starts with ``_`` or ``.``, has no page;
   nor has anything whose first segment under ``docs/`` is ``styles`` (owner storage).
3. ``docs/`` and the extension are stripped; a leading ``ja/`` becomes the language prefix
   ``/ja``.
4. ``index`` names its directory: ``docs/index.md`` is ``/docs``, ``docs/nes/index.md`` is
   ``/docs/nes``.
5. The page is ``[/ja]/docs[/<inner>]``.

Inverse (:func:`source_for`), for a language and the slug after ``/docs/``: candidate stems
``<slug>`` (or ``index`` for the empty slug) then ``<slug>/index``; Japanese looks in
``docs/ja/`` first and then falls back to the English file in ``docs/``. The first file that
exists wins.

Client text never becomes a path on disk: the inverse only matches against an index of the
files found by walking ``docs/`` (symlinks that leave ``docs/`` and non-regular files are left
out). The index is cached and rebuilt when the modification time of a directory under
``docs/`` changes, so adding, removing or renaming a file is seen on the next request. A lookup
of one page checks only the directories its candidate files lie in (and re-resolves a candidate
that is a symlink), a few ``stat`` calls whatever the tree; the answers about every page
(:func:`all_pages`) check every directory.

Spec: OP3, HTTP.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import stat
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal
from urllib.parse import quote, unquote, urlsplit

from django.conf import settings

#: The languages the site serves; the first is the default and has no URL prefix.
LANGUAGES: tuple[str, ...] = ("en", "ja")
#: The file extension that makes a page.
PAGE_EXT = ".md"
#: The directory of the checkout that holds the documents.
DOCS_DIR = "docs"
#: First segments under ``docs/`` that hold no pages.
NO_PAGE_DIRS = frozenset({"styles"})
#: File names that hold no page (compared case-insensitively).
NO_PAGE_NAMES = frozenset({"readme.md"})


@dataclass(frozen=True)
class Page:
    """One documents page the site serves.

    Attributes:
        lang: ``"en"`` or ``"ja"``.
        slug: the path after ``/docs/`` (``""`` for the documents index).
        path: the URL path, e.g. ``/ja/docs/nes/pile`` (not percent-encoded).
        source: the checkout-relative file that makes it, e.g. ``docs/nes/pile.md``.
        fallback: True for a Japanese page served from the English file (no translation yet).
    """

    lang: str
    slug: str
    path: str
    source: str
    fallback: bool


def checkout() -> Path:
    """The served checkout (``settings.TM_CHECKOUT``)."""
    return Path(settings.TM_CHECKOUT)


def source_path(source: str) -> Path:
    """The absolute path of a checkout-relative source file returned by this module."""
    return checkout().joinpath(*PurePosixPath(source).parts)


def _segment_ok(segment: str) -> bool:
    """A path segment that may be part of a page: no hidden, private or control names."""
    if not segment or segment[0] in "._":
        return False
    return not any(ch == "\\" or ch == "/" or ord(ch) < 32 or ord(ch) == 127 for ch in segment)


def _docs_url(lang: str, inner: str) -> str:
    prefix = "" if lang == LANGUAGES[0] else f"/{lang}"
    return f"{prefix}/docs/{inner}" if inner else f"{prefix}/docs"


def page_for(relpath: str) -> str | None:
    """The URL path of the page a checkout-relative file makes, or None when it makes none.

    Args:
        relpath: a POSIX path relative to the checkout, e.g. ``docs/nes/pile.md``.

    Returns:
        The page's URL path (``/docs/nes/pile``, ``/ja/docs``…) or None.
    """
    inner_parts = _document_stem(relpath)
    if inner_parts is None:
        return None
    found = _language_of(inner_parts)
    if found is None:
        return None
    lang, inner_parts = found
    if inner_parts[-1] == "index":
        inner_parts = inner_parts[:-1]
    return _docs_url(lang, "/".join(inner_parts))


def _document_stem(relpath: str) -> list[str] | None:
    """Rules 1–2: the segments under ``docs/`` of a Markdown file that may make a page.

    The extension is stripped from the last segment; None for anything else.
    """
    if "\\" in relpath or "\x00" in relpath or relpath.startswith("/"):
        return None
    parts = relpath.split("/")
    if len(parts) < 2 or parts[0] != DOCS_DIR:
        return None
    inner_parts = parts[1:]
    name = inner_parts[-1]
    if not name.endswith(PAGE_EXT) or name.lower() in NO_PAGE_NAMES:
        return None
    inner_parts[-1] = name[: -len(PAGE_EXT)]
    if not all(_segment_ok(p) for p in inner_parts):
        return None
    return inner_parts


def _language_of(inner_parts: list[str]) -> tuple[str, list[str]] | None:
    """Rule 3 (and the rest of rule 2): the page's language and the segments after its prefix.

    None when nothing is left after ``ja/`` (``docs/ja.md`` makes neither a Japanese page nor
    an English one), or when the first segment is owner storage or another language.
    """
    lang = LANGUAGES[0]
    if inner_parts[0] in LANGUAGES[1:]:
        lang = inner_parts[0]
        inner_parts = inner_parts[1:]
        if not inner_parts:
            return None
    if inner_parts[0] in NO_PAGE_DIRS or inner_parts[0] in LANGUAGES[1:]:
        return None
    return lang, inner_parts


def link_for(source: str, lang: str, href: str) -> str | None:
    """Where a relative link to a Markdown file, written in a document, goes on the site.

    Documents link to each other by file (``[MCP](../mcp.md#tools)``), which works in the
    checkout and in git; on the site the link must name the page instead. A link in a page
    read in Japanese goes to the Japanese page (which exists: it falls back to the English file).

    Args:
        source: the checkout-relative file the link is written in.
        lang: the language of the page being rendered.
        href: the link as written.

    Returns:
        The percent-encoded page address (with the link's fragment), or None to leave the link
        as written (absolute or external links, links to files that make no page).
    """
    parts = urlsplit(href)
    if parts.scheme or parts.netloc or not parts.path or parts.path.startswith("/"):
        return None
    path = unquote(parts.path)
    if not path.endswith(PAGE_EXT):
        return None
    url = page_for(posixpath.normpath(posixpath.join(posixpath.dirname(source), path)))
    if url is None:
        return None
    if lang != LANGUAGES[0] and not url.startswith(f"/{lang}/"):
        url = f"/{lang}{url}"
    return quote(url, safe="/") + (f"#{parts.fragment}" if parts.fragment else "")


# --- the index of docs/ ----------------------------------------------------------------------


@dataclass(frozen=True)
class _Index:
    root: Path
    #: every directory walked (and, when docs/ is missing, the checkout) with its mtime_ns
    dirs: dict[str, int]
    #: checkout-relative files under docs/ that have a page, as ``docs/...`` POSIX strings
    files: frozenset[str]
    #: every ``.md`` symlink met: what it resolved to, and whether that made it a document
    links: dict[str, tuple[str, bool]]
    #: ``docs/`` resolved, inside which a symlinked document must end
    docs_real: Path


_lock = threading.Lock()
_index: _Index | None = None


def _walk(root: Path) -> _Index:
    """Index ``docs/`` under ``root``: every directory walked, every file that makes a page."""
    docs = root / DOCS_DIR
    dirs: dict[str, int] = {}
    files: set[str] = set()
    links: dict[str, tuple[str, bool]] = {}
    if not docs.is_dir():
        # No docs/ yet: watch the checkout itself, so that creating docs/ is seen.
        with contextlib.suppress(OSError):
            dirs[str(root)] = os.stat(root).st_mtime_ns
        return _Index(root, dirs, frozenset(), links, root)
    docs_real = docs.resolve()
    pending = [docs]
    while pending:
        directory = pending.pop()
        try:
            dirs[str(directory)] = os.stat(directory).st_mtime_ns
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            kind = _entry_kind(entry, docs_real)
            if kind == "directory":
                pending.append(Path(entry.path))
                continue
            linked = _linked_document(entry)
            if kind != "document" and not linked:
                continue
            rel = Path(entry.path).relative_to(root).as_posix()
            if kind == "document" and page_for(rel) is not None:
                files.add(rel)
            if linked:
                links[rel] = _link_state(Path(entry.path), docs_real)
    return _Index(root, dirs, frozenset(files), links, docs_real)


def _linked_document(entry: os.DirEntry[str]) -> bool:
    """Whether an entry is a symlink that may make a page (what it points at decides)."""
    if not entry.name.endswith(PAGE_EXT) or not _segment_ok(entry.name):
        return False
    try:
        return entry.is_symlink()
    except OSError:
        return False


def _link_state(path: Path, docs_real: Path) -> tuple[str, bool]:
    """Where a symlink resolves now, and whether that is a regular file inside ``docs/``."""
    real = os.path.realpath(path)
    try:
        regular = stat.S_ISREG(os.stat(real).st_mode)
    except OSError:
        regular = False
    return real, regular and Path(real).is_relative_to(docs_real)


def _entry_kind(
    entry: os.DirEntry[str], docs_real: Path
) -> Literal["directory", "document"] | None:
    """What one entry of a walked directory is to the index: walked into, indexed, or skipped.

    Hidden and private names, and anything that cannot be stat-ed, are skipped; a directory is
    not followed through a symlink; a ``.md`` file is a document only when it (through any
    symlink) is a regular file inside ``docs/``.
    """
    if not _segment_ok(entry.name):
        return None
    path = Path(entry.path)
    try:
        if entry.is_dir(follow_symlinks=False):
            return "directory"
        if not entry.name.endswith(PAGE_EXT):
            return None
        mode = os.stat(path).st_mode  # follows a symlink: it must end in a regular file
        real = path.resolve(strict=True)
    except OSError:
        return None
    if not stat.S_ISREG(mode) or not real.is_relative_to(docs_real):
        return None
    return "document"


def _unchanged(directory: str, mtime: int) -> bool:
    try:
        return os.stat(directory).st_mtime_ns == mtime
    except OSError:
        return False


def _fresh(index: _Index) -> bool:
    """Whether no directory of the index changed: every one is stat-ed."""
    return all(_unchanged(directory, mtime) for directory, mtime in index.dirs.items())


def _fresh_for(index: _Index, rels: Iterable[str]) -> bool:
    """Whether the files ``rels`` are as the index has them: only their directories are checked.

    A file's presence can change only with the modification time of its directory, and a
    directory's only with its parent's, so the directories from ``docs/`` down to each file's
    are checked, stopping at the first the walk did not index (one created since shows as its
    parent's change). A file that is a symlink is resolved again: its target can change where
    no page lives.
    """
    docs = str(index.root / DOCS_DIR)
    if docs not in index.dirs:  # no docs/ when walked: the checkout alone is watched
        return _fresh(index)
    checked: set[str] = set()
    for rel in rels:
        directory = docs
        for segment in ["", *rel.split("/")[1:-1]]:
            if segment:
                directory = f"{directory}/{segment}"
            if directory in checked:
                continue
            mtime = index.dirs.get(directory)
            if mtime is None:
                break
            if not _unchanged(directory, mtime):
                return False
            checked.add(directory)
        state = index.links.get(rel)
        if state is not None and _link_state(index.root / rel, index.docs_real) != state:
            return False
    return True


def _current(rels: Iterable[str] | None = None) -> _Index:
    """The index, walked again if it changed: everywhere, or where ``rels`` lie when given."""
    global _index
    root = checkout()
    with _lock:
        index = _index
        fresh = _fresh if rels is None else lambda index: _fresh_for(index, rels)
        if index is not None and index.root == root and fresh(index):
            return index
        index = _index = _walk(root)
        return index


def is_source(relpath: str) -> bool:
    """Whether the checkout-relative file ``relpath`` makes a page (its directories checked)."""
    return page_for(relpath) is not None and relpath in _current([relpath]).files


# --- the inverse -----------------------------------------------------------------------------


def _slug_parts(lang: str, slug: str) -> list[str] | None:
    if lang not in LANGUAGES:
        return None
    if slug == "":
        return []
    parts = slug.split("/")
    if not all(_segment_ok(p) for p in parts):
        return None
    if parts[0] in NO_PAGE_DIRS or parts[0] in LANGUAGES[1:]:
        return None
    return parts


def _candidates(lang: str, parts: list[str]) -> list[tuple[str, bool]]:
    """The files that may make the page, first preferred, each with whether it is a fallback."""
    stems = ["/".join(parts) if parts else "index"]
    if parts:
        stems.append("/".join([*parts, "index"]))
    bases = [(f"{DOCS_DIR}/{lang}", False), (DOCS_DIR, True)]
    if lang == LANGUAGES[0]:
        bases = [(DOCS_DIR, False)]
    return [(f"{base}/{stem}{PAGE_EXT}", fallback) for base, fallback in bases for stem in stems]


def source_for(lang: str, slug: str) -> str | None:
    """The checkout-relative file that makes the page ``(lang, slug)``, or None.

    Args:
        lang: ``"en"`` or ``"ja"``.
        slug: the path after ``/docs/`` without a trailing slash (``""`` for the index).

    Returns:
        E.g. ``docs/nes/pile.md``; for Japanese the ``docs/ja/`` file when there is one, else
        the English file (a fallback); None when no file makes that page.
    """
    page = page_at_slug(lang, slug)
    return page.source if page else None


def page_at_slug(lang: str, slug: str) -> Page | None:
    """The page ``(lang, slug)`` as :func:`source_for` finds it, or None.

    The returned page's ``path`` is canonical: ``(en, "nes/index")`` finds ``docs/nes/index.md``
    whose page is ``/docs/nes``, so a caller can redirect a non-canonical address. Only the
    directories of the page's candidate files are checked for a change.
    """
    parts = _slug_parts(lang, slug)
    if parts is None:
        return None
    rels = [candidate for candidate, _ in _candidates(lang, parts)]
    return _page_in(_current(rels).files, lang, slug)


def _page_in(files: frozenset[str], lang: str, slug: str) -> Page | None:
    parts = _slug_parts(lang, slug)
    if parts is None:
        return None
    found = next((c for c in _candidates(lang, parts) if c[0] in files), None)
    if found is None:
        return None
    source, fallback = found
    url = page_for(source)
    if url is None:  # pragma: no cover - the index holds only files that have a page
        return None
    if fallback:
        url = f"/{lang}{url}"
    inner = url.split("/docs", 1)[1].lstrip("/")
    return Page(lang=lang, slug=inner, path=url, source=source, fallback=fallback)


def page_at(url_path: str) -> Page | None:
    """The documents page at a URL path (``/docs/...`` or ``/ja/docs/...``), or None.

    Only canonical paths answer: ``/docs/nes/index`` and ``/docs/nes/`` are not pages.
    """
    lang = LANGUAGES[0]
    rest = url_path
    for other in LANGUAGES[1:]:
        if rest == f"/{other}/docs" or rest.startswith(f"/{other}/docs/"):
            lang, rest = other, rest[len(other) + 1 :]
            break
    if rest == "/docs":
        slug = ""
    elif rest.startswith("/docs/"):
        slug = rest[len("/docs/") :]
    else:
        return None
    page = page_at_slug(lang, slug)
    return page if page is not None and page.path == url_path else None


def all_pages() -> list[Page]:
    """Every documents page the site serves, sorted by URL path.

    English pages come from ``docs/`` (not ``docs/ja/``); every Japanese page either has its own
    file in ``docs/ja/`` or falls back to the English one (``fallback=True``). Where two files
    would make the same page (``docs/nes.md`` and ``docs/nes/index.md``), the one
    :func:`source_for` prefers is the page's source.
    """
    files = _current().files
    keys: set[tuple[str, str]] = set()
    for source in files:
        url = page_for(source)
        if url is None:  # pragma: no cover - the index holds only files that have a page
            continue
        lang = LANGUAGES[0]
        for other in LANGUAGES[1:]:
            if url.startswith(f"/{other}/"):
                lang = other
        inner = url.split("/docs", 1)[1].lstrip("/")
        keys.add((lang, inner))
        if lang == LANGUAGES[0]:
            keys.update((other, inner) for other in LANGUAGES[1:])
    pages = [_page_in(files, lang, slug) for lang, slug in keys]
    return sorted((p for p in pages if p is not None), key=lambda p: p.path)


# --- every page of the site --------------------------------------------------------------------


@dataclass(frozen=True)
class SitePage:
    """One page the site serves, for the sitemap and the ``http`` mount's site listing.

    Attributes:
        path: the URL path (not percent-encoded).
        lang: the page's language.
        source: the checkout-relative file it is made from, if it is made from one.
    """

    path: str
    lang: str
    source: str | None = None


#: Further families of pages register a function here that lists their pages (the entity pages
#: of the entity issue are the first). Use :func:`register_pages`.
_families: dict[str, Callable[[], Iterable[SitePage]]] = {}


def register_pages(family: str, lister: Callable[[], Iterable[SitePage]]) -> None:
    """Add a family of pages to :func:`site_pages` (and so to the sitemap).

    Args:
        family: a unique name (e.g. ``"entity"``); registering a name twice is an error.
        lister: returns the family's pages when called.
    """
    if family in _families and _families[family] is not lister:
        raise ValueError(f"a page family named {family!r} is already registered")
    _families[family] = lister


#: The pages that are not documents: the front pages, the pieces page, the explorer and
#: ``/llms.txt`` (tmsite.site.discovery).
FIXED_PAGES: tuple[SitePage, ...] = (
    SitePage("/", "en"),
    SitePage("/ja/", "ja"),
    SitePage("/pieces", "en"),
    SitePage("/explore", "en"),
    SitePage("/llms.txt", "en"),
)


def site_pages() -> list[SitePage]:
    """Every page the site serves: the fixed pages, the documents, then registered families."""
    found = list(FIXED_PAGES)
    found.extend(SitePage(p.path, p.lang, p.source) for p in all_pages())
    for name in sorted(_families):
        found.extend(_families[name]())
    return found
