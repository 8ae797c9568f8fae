"""Standing searches: a listened ``?as=search&q=…`` address is told when its hits change.

A search address is watched as itself (:func:`key`), not as the collection it searches: a
change below its scope that leaves its hits as they were tells it nothing. While one is listened
to, a :class:`~tmsite.subscriptions.records.StampWatcher` reads :func:`stamp` (when the index
last changed, one row of the index's own table, the same on every machine) and, when it moved,
reads the search again and compares :func:`results` — its hits' addresses, titles and snippets,
in order — with those it had; only a different answer is published.

Spec: SRCH4.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tmsite.core.errors import Refusal
from tmsite.core.parts import dumps
from tmsite.core.uri import parse
from tmsite.search import index
from tmsite.search.answer import FACET


def key(host: str) -> Callable[[str], str | None]:
    """What a listened URI of ``host`` is watched as: a search address as itself, else None."""

    def watched(uri: str) -> str | None:
        try:
            parsed = parse(uri)
        except Refusal:
            return None
        if parsed.host != host or dict(parsed.params).get("as") != FACET:
            return None
        return parsed.text

    return watched


#: When the index last changed.
stamp = index.applied_text


def results(content: Any) -> list[bytes]:
    """What a search's read is, to compare: its hits' addresses, titles, snippets, in order.

    Scores are left out: a document added elsewhere moves every score a little (the engine's
    term statistics) without changing what is found.
    """
    body = content.body
    hits = [(hit["uri"], hit["title"], hit["snippet"]) for hit in body["hits"]]
    return [dumps([hits, "next" in body]).encode("utf-8", "surrogatepass")]
