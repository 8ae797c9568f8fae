"""Ranking the addresses nearest to one that does not resolve.

Spec: NS8.
"""

from __future__ import annotations

from collections.abc import Iterable

MAX_NEAREST = 5
#: Candidates ranked at most: a huge directory is ranked on its first names only.
MAX_CANDIDATES = 5000


def distance(a: str, b: str, limit: int = 64) -> int:
    """Levenshtein distance, stopping early once it exceeds ``limit``."""
    if a == b:
        return 0
    if len(a) < len(b):
        a, b = b, a
    if len(a) - len(b) > limit:
        return limit + 1
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        best = i
        for j, cb in enumerate(b, 1):
            value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            current.append(value)
            best = min(best, value)
        if best > limit:
            return limit + 1
        previous = current
    return previous[-1]


def rank(
    wanted: str,
    candidates: Iterable[tuple[str, str]],
    exclude: str | None = None,
    limit: int = MAX_NEAREST,
) -> list[str]:
    """Up to ``limit`` (five) URIs whose names are nearest ``wanted``.

    Args:
        wanted: The name that did not resolve.
        candidates: ``(name, uri)`` pairs.
        exclude: A URI never to suggest (the refused one).
        limit: How many URIs to return at most.

    Names compare lowercased without a trailing ``/``; ties break on a shared three-character
    start, then on the name.
    """
    key = wanted.lower().rstrip("/")
    scored = []
    for count, (name, uri) in enumerate(candidates):
        if count >= MAX_CANDIDATES:
            break
        if uri == exclude:
            continue
        candidate = name.lower().rstrip("/")
        scored.append(
            (distance(key, candidate), 0 if candidate.startswith(key[:3]) else 1, name, uri)
        )
    scored.sort()
    return [uri for *_, uri in scored[:limit]]
