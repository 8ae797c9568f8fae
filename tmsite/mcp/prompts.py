"""The prompt methods: ``prompts/list`` and ``prompts/get`` over ``operations.prompts``.

Both eras answer the same; ``tmsite.mcp.methods`` stamps the 2026-07-28 result (``prompts/list``
with its caching hints; a ``prompts/get`` reads live, so it carries none). A refusal — unknown
prompt, an argument it does not take or needs, an address that does not parse or resolve —
is the era's JSON-RPC error through ``tmsite.mcp.codes``.

Spec: PR1.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from tmsite.core.errors import BadCursor, Refusal
from tmsite.mcp.codes import rpc_error
from tmsite.mcp.convert import prompt_result
from tmsite.mcp.namespace_methods import ListParams, Params, parse_params
from tmsite.mcp.protocol import CallContext
from tmsite.operations import prompts


class GetParams(Params):
    """``prompts/get``: the prompt's name and its arguments (strings, absent means none)."""

    name: str
    arguments: dict[str, str] | None = Field(default=None)


def list_prompts(params: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
    """``prompts/list``: every prompt in one page; a cursor was never issued, so it is refused."""
    parsed = parse_params(ListParams, params, "prompts/list")
    if parsed.cursor is not None:
        refusal = BadCursor(None, "prompts/list is one page; this server issued no cursor for it")
        raise rpc_error(refusal, ctx.era)
    return {"prompts": prompts.listed()}


def get_prompt(params: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
    """``prompts/get``: the prompt rendered with its arguments, reads embedded."""
    parsed = parse_params(GetParams, params, "prompts/get")
    try:
        return prompt_result(prompts.get(parsed.name, parsed.arguments or {}))
    except Refusal as refusal:
        raise rpc_error(refusal, ctx.era) from refusal
