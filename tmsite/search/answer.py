"""One search, answered the same through every door: the tool, the REST route, the address.

``?as=search&q=<words>`` on a collection address searches below it (on the root, everything);
``kinds`` (comma-separated mounts or kinds), ``limit`` (1–50, default 10) and ``cursor`` narrow
and page it. The tool and the REST route build that same address from their arguments, so a
cursor from one door pages the others, and a standing search is an address like any other.

A hit names its document narrowed to the passage that matched (``?lines=a-b`` where the
document reads by lines): reading that address gives the text the snippet was cut from.

Spec: SRCH1, SRCH2, SRCH3, SRCH4.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tmsite.core import cursor as cursors
from tmsite.core.errors import BadArgument, Refusal, Timeout
from tmsite.core.links import Link
from tmsite.core.types import Content, Reader, vnd
from tmsite.core.uri import TmUri, parse
from tmsite.search import blocks as _blocks  # noqa: F401  (registers the search assembler)
from tmsite.search import index
from tmsite.search.engines import FETCH, Found
from tmsite.search.passages import snippet
from tmsite.search.query import MAX_QUERY_CHARS, Query, parse_query

FACET = "search"
DEFAULT_LIMIT = 10
MAX_LIMIT = 50
MAX_KINDS = 12
#: The deepest a cursor pages: hits past it are not worth a client's reading.
MAX_RESULTS = FETCH
#: The parameters a search address takes.
PARAMS = ("as", "q", "kinds", "limit", "cursor")
_KIND = re.compile(r"[a-z0-9][a-z0-9.+-]{0,63}", re.ASCII)
_LIMIT = re.compile(r"[0-9]{1,2}", re.ASCII)

#: Links other mounts hold about a thing (the namespace's ``links_into``), for a hit's links.
LinksOf = Callable[[TmUri], list[Link]]


@dataclass(frozen=True)
class Asked:
    """A checked search: its words, the collection it searches, what it keeps, its page."""

    query: Query
    scope: TmUri
    kinds: tuple[str, ...]
    limit: int
    cursor: str | None

    @property
    def address(self) -> TmUri:
        """The search as an address (without its cursor): what a cursor is bound to."""
        return self.scope.with_params(
            {
                "as": FACET,
                "q": self.query.text,
                "kinds": ",".join(self.kinds) or None,
                "limit": str(self.limit) if self.limit != DEFAULT_LIMIT else None,
            }
        )


def ask(
    host: str,
    query: object,
    scope: object = None,
    kinds: Sequence[object] = (),
    limit: object = DEFAULT_LIMIT,
    cursor: str | None = None,
) -> Asked:
    """Check a search's arguments (the tool's and the REST route's).

    Raises:
        BadArgument: naming the argument that is wrong and what it takes.
    """
    words = parse_query(query)
    scope_uri = _scope(host, scope)
    if len(kinds) > MAX_KINDS or not all(isinstance(k, str) and _KIND.fullmatch(k) for k in kinds):
        raise BadArgument(
            None,
            f"kinds takes at most {MAX_KINDS} names of mounts or kinds (fs, git, file, game …)",
            valid=["kinds"],
        )
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise BadArgument(None, f"limit takes a whole number from 1 to {MAX_LIMIT}")
    return Asked(words, scope_uri, tuple(sorted(set(map(str, kinds)))), limit, cursor)


def ask_address(host: str, uri: TmUri) -> Asked:
    """Check a search address, ``<collection>?as=search&q=…``.

    Raises:
        BadArgument: a missing ``q`` or a wrong value; BadFacet: a parameter it does not take.
    """
    extra = sorted(set(uri.query) - set(PARAMS))
    if extra:
        raise BadArgument(
            str(uri),
            f"a search takes no {extra[0]!r} parameter; it takes {', '.join(PARAMS[1:])}",
            valid=list(PARAMS[1:]),
        )
    if uri.param("q") is None:
        raise BadArgument(str(uri), "a search needs q=<words>", required=["q"])
    raw_limit = uri.param("limit")
    if raw_limit is not None and not _LIMIT.fullmatch(raw_limit):
        raise BadArgument(str(uri), f"limit takes a whole number from 1 to {MAX_LIMIT}")
    kinds = [k for k in (uri.param("kinds") or "").split(",") if k]
    try:
        return ask(
            host,
            uri.param("q"),
            str(uri.identity),
            kinds,
            int(raw_limit) if raw_limit is not None else DEFAULT_LIMIT,
            uri.param("cursor"),
        )
    except BadArgument as refusal:
        refusal.uri = str(uri)
        raise


def _scope(host: str, scope: object) -> TmUri:
    root = TmUri(host, collection=True)
    if scope is None:
        return root
    if not isinstance(scope, str) or len(scope) > MAX_QUERY_CHARS * 4:
        raise BadArgument(None, "scope is a collection address such as tm://{host}/fs/docs/")
    try:
        uri = parse(scope)
    except Refusal:
        raise BadArgument(None, f"scope is not a tm:// address: {scope[:80]!r}") from None
    if uri.host != host or not uri.collection or uri.params:
        raise BadArgument(
            None,
            f"scope is a collection address of this box, ending in / with no query, "
            f"such as {root}fs/docs/",
            valid=[str(root)],
        )
    return uri


def answer(asked: Asked, links_of: LinksOf | None = None, using: str = "default") -> Content:
    """The hits of ``asked``: one page, with ``next`` while there are more.

    Raises:
        BadCursor: a cursor this search did not issue.
        Timeout: the search went past the engine's work one search may spend.
    """
    address = asked.address
    key = str(address)
    offset = cursors.redeem(asked.cursor, key, key) if asked.cursor is not None else 0
    offset = min(offset, MAX_RESULTS)
    want = min(offset + asked.limit + 1, MAX_RESULTS)
    try:
        found = index.search(asked.query, str(asked.scope), asked.kinds, want, using)
    except Timeout as refusal:
        refusal.uri = key
        raise
    page = found[offset : offset + asked.limit]
    hits = [_hit(hit, asked.query, links_of) for hit in page]
    body: dict[str, Any] = {
        "uri": key,
        "query": asked.query.text,
        "scope": str(asked.scope),
        "hits": hits,
    }
    links = [Link("collection", str(asked.scope))]
    links += [Link("item", hit["uri"], title=hit["title"]) for hit in hits]
    if len(found) > offset + asked.limit:
        token = cursors.issue(key, offset + asked.limit)
        body["nextCursor"] = token
        body["next"] = str(address.with_params(cursor=token))
        links.append(Link("next", body["next"]))
    return Content(key, vnd(FACET), body, links, kind=FACET)


def _hit(found: Found, query: Query, links_of: LinksOf | None) -> dict[str, Any]:
    document = parse(found.uri)
    links = []
    parent = document.parent()
    if parent is not None:
        links.append(Link("collection", str(parent)))
    if links_of is not None:
        links += links_of(document)
    hit: dict[str, Any] = {
        "uri": found.address,
        "document": found.uri,
        "title": found.title,
        "snippet": snippet(found.body, query) if found.body else found.title,
        "score": round(float(found.score), 6),
        "kind": found.kind,
        "mimeType": found.mime_type,
        "links": [link.to_json() for link in links],
    }
    if found.heading:
        hit["heading"] = found.heading
    return hit


def facet(reader: Reader, uri: TmUri) -> Content:
    """``?as=search`` on any collection address (the namespace's facet assembler)."""
    links_of: LinksOf | None = getattr(reader, "links_into", None)
    return answer(ask_address(reader.host, uri), links_of)
