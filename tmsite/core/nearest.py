"""Ranking the addresses nearest to one that does not resolve.

A refusal must cost little whatever the directory, so the work of one ranking is capped:

* at most :data:`MAX_RANKED` names are compared (a larger directory is ranked on its first
  names, in listing order);
* each comparison is rapidfuzz's Levenshtein distance (C, bit-parallel) with a cutoff of
  :data:`CUTOFF` edits: a pair further apart stops early and counts as ``CUTOFF + 1``, so one
  comparison costs at most a few machine words per character of the shorter name;
* the tie-break (a shared three-character start, then the name) orders the :data:`MAX_TIES`
  nearest names, ties in listing order: exact unless more than that many names are tied at
  the last distance kept, when the first in listing order are the ones ordered.

Spec: NS8.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from itertools import islice

from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from tmsite.core import work

MAX_NEAREST = 5
#: Names fetched for a ranking where each one costs (a database row, a listing entry built).
MAX_CANDIDATES = 5000
#: Names compared at most by one ranking: the ceiling on the work one miss may do.
MAX_RANKED = 100_000
#: Distances above this count as one more (the comparison stops there).
CUTOFF = 64
#: Names the tie-break orders at most: the nearest, ties in listing order.
MAX_TIES = 1000

#: Folded name lists kept by identity, and the smallest list worth keeping.
_FOLDED: OrderedDict[int, tuple[Sequence[str], list[str]]] = OrderedDict()
_FOLDED_LOCK = threading.Lock()
_FOLDED_SIZE = 8
_FOLD_KEPT_FROM = 1000


def fold(names: Sequence[str]) -> list[str]:
    """The names as they compare: lowercased, without trailing ``/``.

    The last few lists folded are kept by identity (a directory's cached names are folded once
    per scan, not once per miss); a list must not change once handed here.
    """
    with _FOLDED_LOCK:
        kept = _FOLDED.get(id(names))
        if kept is not None and kept[0] is names:
            _FOLDED.move_to_end(id(names))
            return kept[1]
    joined = "\0".join(names)
    if joined.count("\0") != len(names) - 1:  # a name holds NUL: one at a time
        folded = [name.lower().rstrip("/") for name in names]
    else:
        joined = joined.lower()
        while "/\0" in joined:
            joined = joined.replace("/\0", "\0")
        folded = joined.rstrip("/").split("\0") if names else []
    if len(names) >= _FOLD_KEPT_FROM:
        with _FOLDED_LOCK:
            _FOLDED[id(names)] = (names, folded)
            while len(_FOLDED) > _FOLDED_SIZE:
                _FOLDED.popitem(last=False)
    return folded


def rank_names(wanted: str, names: Sequence[str], limit: int = MAX_NEAREST) -> list[int]:
    """The indices of up to ``limit`` of ``names`` nearest ``wanted``, nearest first.

    Names compare lowercased without a trailing ``/``; ties break on a shared three-character
    start, then on the name, then on the index. Only the first :data:`MAX_RANKED` names are
    looked at.
    """
    if limit <= 0 or not names:
        return []
    if len(names) > MAX_RANKED:
        names = names[:MAX_RANKED]
    work.spend("ranked", len(names))
    key = wanted.lower().rstrip("/")
    start = key[:3]
    folded = fold(names)
    # The nearest MAX_TIES names (ties in listing order), all within the cutoff: every name
    # nearer than the last distance kept is among them, and the tie-break orders the rest.
    pool = [
        (int(d), index)
        for _, d, index in process.extract(
            key, folded, scorer=Levenshtein.distance, score_cutoff=CUTOFF, limit=MAX_TIES
        )
    ]
    if len(pool) < limit:
        # Fewer than ``limit`` names within the cutoff: the others all count CUTOFF + 1.
        within = {index for _, index in pool}
        far = (index for index in range(len(folded)) if index not in within)
        pool.extend((CUTOFF + 1, index) for index in islice(far, MAX_TIES))

    def order(item: tuple[int, int]) -> tuple[int, int, str]:
        d, index = item
        return (d, 0 if folded[index].startswith(start) else 1, names[index])

    return [index for _, index in sorted(pool, key=order)[:limit]]


def rank(
    wanted: str,
    candidates: Iterable[tuple[str, str]],
    exclude: str | None = None,
    limit: int = MAX_NEAREST,
) -> list[str]:
    """Up to ``limit`` (five) URIs whose names are nearest ``wanted``.

    Args:
        wanted: The name that did not resolve.
        candidates: ``(name, uri)`` pairs; the first :data:`MAX_RANKED` are ranked.
        exclude: A URI never to suggest (the refused one).
        limit: How many URIs to return at most.

    Names compare lowercased without a trailing ``/``; ties break on a shared three-character
    start, then on the name, then on the order given.
    """
    pairs = [pair for pair in islice(candidates, MAX_RANKED) if pair[1] != exclude]
    return [pairs[index][1] for index in rank_names(wanted, [name for name, _ in pairs], limit)]
