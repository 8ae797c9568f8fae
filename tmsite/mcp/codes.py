"""The one table that turns a refusal into a JSON-RPC error, per protocol era.

Resource-style refusals (the thing is missing, fenced, too big, or its backend failed) use
-32002 for clients of the ``initialize`` era and -32602 from 2026-07-28 on (the specification's
change of the resource-not-found code); parameter refusals are -32602 in both; a rate limit is
-32000, an implementation-defined server error. Nothing else turns refusals into codes.

Spec: RJ2.
"""

from __future__ import annotations

from tmsite.core.errors import REASONS, Refusal
from tmsite.mcp.protocol import INVALID_PARAMS, RESOURCE_NOT_FOUND, Era, RpcError

RATE_LIMITED = -32000

_RESOURCE = {"2025": RESOURCE_NOT_FOUND, "2026": INVALID_PARAMS}
_PARAMS = {"2025": INVALID_PARAMS, "2026": INVALID_PARAMS}

CODES: dict[str, dict[str, int]] = {
    "not-found": _RESOURCE,
    "out-of-root": _RESOURCE,
    "denied": _RESOURCE,
    "too-large": _RESOURCE,
    "binary": _RESOURCE,
    "redirect": _RESOURCE,
    "unreachable": _RESOURCE,
    "no-such-ref": _RESOURCE,
    "git-error": _RESOURCE,
    "gated": _RESOURCE,
    "timeout": _RESOURCE,
    "bad-facet": _PARAMS,
    "bad-cursor": _PARAMS,
    "bad-uri": _PARAMS,
    "bad-argument": _PARAMS,
    "rate-limited": {"2025": RATE_LIMITED, "2026": RATE_LIMITED},
    "exists": _RESOURCE,
    "queue-full": {"2025": RATE_LIMITED, "2026": RATE_LIMITED},
    "too-costly": _RESOURCE,
}
assert set(CODES) == set(REASONS), "every reason has a code in each era"


def code_for(reason: str, era: Era) -> int:
    """The JSON-RPC error code of refusal ``reason`` for a client of ``era``."""
    return CODES[reason][era]


def rpc_error(refusal: Refusal, era: Era) -> RpcError:
    """The JSON-RPC error a refusal becomes for a client of ``era``."""
    return RpcError(code_for(refusal.reason, era), refusal.message, refusal.data)
