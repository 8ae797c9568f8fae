"""JSON-RPC dispatch through one method table.

Each entry names the handler, the eras that may call it, and whether its result is a list or
read that carries ``ttlMs``/``cacheScope`` in the stateless era. Handlers are short adapters over
``tmsite.operations``; params are validated before the handler runs.

Spec: T7, T10, PR1.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from tmsite.mcp import lifecycle, namespace_methods, prompts, tools
from tmsite.mcp.protocol import METHOD_NOT_FOUND, CallContext, Era, RpcError, StreamResult

Handler = Callable[[dict[str, Any], CallContext], dict[str, Any] | StreamResult]

BOTH: frozenset[Era] = frozenset({"2025", "2026"})

#: How an answer that depends on no mount's data is prepared once (``tmsite.mcp.prepared``):
#: ``fixed``, one per protocol version; ``first-page``, one per version unless the request
#: carries a ``cursor``; ``negotiated``, one per version and the version ``initialize``
#: negotiates.
Prepare = Literal["fixed", "first-page", "negotiated"]


@dataclass(frozen=True)
class Method:
    """One row of the method table: who answers, in which eras, and for how long it holds."""

    handler: Handler
    eras: frozenset[Era] = BOTH
    #: Seconds a 2026-07-28 client may reuse the result (``ttlMs``), or None for no cache hint.
    ttl_seconds: int | None = None
    #: Whether its answer is prepared once, and per what (None: built for every request).
    prepared: Prepare | None = None


METHODS: dict[str, Method] = {
    "initialize": Method(lifecycle.initialize, frozenset({"2025"}), prepared="negotiated"),
    "ping": Method(lifecycle.ping, frozenset({"2025"}), prepared="fixed"),
    "server/discover": Method(
        lifecycle.discover, frozenset({"2026"}), ttl_seconds=300, prepared="fixed"
    ),
    "tools/list": Method(tools.list_tools, ttl_seconds=300, prepared="fixed"),
    "tools/call": Method(tools.call_tool),
    "resources/list": Method(namespace_methods.list_resources, ttl_seconds=60),
    "resources/templates/list": Method(
        namespace_methods.list_templates, ttl_seconds=300, prepared="first-page"
    ),
    "resources/read": Method(namespace_methods.read_resource, ttl_seconds=60),
    "prompts/list": Method(prompts.list_prompts, ttl_seconds=300, prepared="first-page"),
    "prompts/get": Method(prompts.get_prompt),
    "completion/complete": Method(namespace_methods.complete),
}


def dispatch(
    method: str, params: dict[str, Any], ctx: CallContext
) -> dict[str, Any] | StreamResult:
    """Answer one request. Raises ``RpcError`` for every error the client should see."""
    entry = METHODS.get(method)
    if entry is None or ctx.era not in entry.eras:
        raise RpcError(METHOD_NOT_FOUND, f"method {method!r} is not offered by this server")
    result = entry.handler(params, ctx)
    if isinstance(result, StreamResult):  # the transport holds it open; no result is sent
        return result
    if ctx.era == "2026":
        result = {**result, "resultType": "complete"}
        if entry.ttl_seconds is not None:
            result.setdefault("ttlMs", entry.ttl_seconds * 1000)
            result.setdefault("cacheScope", "public")
    return result
