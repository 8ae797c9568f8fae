"""The REST surface's wire table: the prefix its routes live under and a status per reason.

Refusals become HTTP statuses through this one table, with the same JSON fields the MCP
refusal carries in ``data`` (``refusal_body``).

Spec: TL6.
"""

from __future__ import annotations

from typing import Any

from tmsite.core.errors import REASONS, Refusal

#: The path every REST route lives under.
REST_PREFIX = "/api/v1/"

HTTP_STATUS: dict[str, int] = {
    "not-found": 404,
    "out-of-root": 404,
    "no-such-ref": 404,
    "denied": 403,
    "gated": 403,
    "too-large": 413,
    "binary": 415,
    "redirect": 409,
    "bad-facet": 400,
    "bad-cursor": 400,
    "bad-uri": 400,
    "bad-argument": 400,
    "rate-limited": 429,
    "unreachable": 502,
    "git-error": 502,
    "timeout": 504,
    "exists": 409,
    "queue-full": 503,
    "too-costly": 422,
}
assert set(HTTP_STATUS) == set(REASONS), "every reason has a REST status"


def refusal_body(refusal: Refusal) -> dict[str, Any]:
    """A refusal's REST body: what was refused, for people, and its stable fields."""
    return {"error": refusal.message, **refusal.data}
