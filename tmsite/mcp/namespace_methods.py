"""The resource methods: adapters from JSON-RPC params to ``tmsite.operations``.

Params are checked by small pydantic models (extra members allowed, as the protocol adds its own);
a malformed one is -32602 naming at most five problems. Refusals become JSON-RPC errors through
``tmsite.mcp.codes``.

Spec: NS7, PR1.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tmsite import operations
from tmsite.core.errors import BadArgument, Refusal
from tmsite.core.types import Truncated
from tmsite.mcp.codes import rpc_error
from tmsite.mcp.convert import read_result, resource
from tmsite.mcp.protocol import INVALID_PARAMS, CallContext, RpcError
from tmsite.operations import prompts

COMPLETION_CAP = 100


class Params(BaseModel):
    """The params of one method: extra members allowed (the protocol adds its own)."""

    model_config = ConfigDict(extra="allow")


class ListParams(Params):
    """``resources/list`` and ``resources/templates/list``: an optional opaque cursor."""

    cursor: str | None = None


class ReadParams(Params):
    """``resources/read``: the ``tm://`` URI to read."""

    uri: str


class _Ref(Params):
    type: str
    uri: str | None = None
    name: str | None = None


class _Argument(Params):
    name: str
    value: str = ""


class _Context(Params):
    arguments: dict[str, str] = Field(default_factory=dict)


class CompleteParams(Params):
    """``completion/complete``: the template, the argument being typed, the ones already filled."""

    ref: _Ref
    argument: _Argument
    context: _Context | None = None


M = TypeVar("M", bound=BaseModel)


def parse_params(model: type[M], params: dict[str, Any], method: str) -> M:
    """``params`` as ``model``; a malformed one is -32602 naming at most five problems."""
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or 'params'}: {error['msg']}"
            for error in exc.errors()[:5]
        )
        raise RpcError(INVALID_PARAMS, f"{method}: {problems}") from exc


def list_resources(params: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
    """``resources/list``: one page of the map (root, help, collections), ``nextCursor`` after."""
    parsed = parse_params(ListParams, params, "resources/list")
    try:
        return resource_page(parsed.cursor)
    except Refusal as refusal:
        raise rpc_error(refusal, ctx.era) from refusal


def resource_page(cursor: str | None) -> dict[str, Any]:
    """One page of the map as ``resources/list`` answers it (the REST route's too)."""
    page = operations.resource_map(cursor)
    result: dict[str, Any] = {"resources": [resource(entry) for entry in page.entries]}
    if page.next_cursor is not None:
        result["nextCursor"] = page.next_cursor
    return result


def list_templates(params: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
    """``resources/templates/list``: every URI template, in one page."""
    parse_params(ListParams, params, "resources/templates/list")
    return {"resourceTemplates": [item.to_json() for item in operations.templates()]}


def read_resource(params: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
    """``resources/read``: the content and its links; a refusal is the era's JSON-RPC error."""
    parsed = parse_params(ReadParams, params, "resources/read")
    try:
        return read_result(operations.read(parsed.uri))
    except Refusal as refusal:
        raise rpc_error(refusal, ctx.era) from refusal


def complete(params: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
    """``completion/complete`` for a resource template or a prompt argument: at most 100 values.

    ``ref/resource`` completes a template's argument (``uri`` names the template),
    ``ref/prompt`` a prompt's (``name`` names the prompt); ``context.arguments`` holds the
    arguments already filled.

    Raises:
        RpcError: ``bad-argument`` for another kind of reference, one without its ``uri`` or
            ``name``, an unknown template or prompt, or an argument it does not have.
    """
    parsed = parse_params(CompleteParams, params, "completion/complete")
    ref = parsed.ref
    context = parsed.context.arguments if parsed.context else {}
    name, value = parsed.argument.name, parsed.argument.value
    try:
        if ref.type == "ref/resource" and ref.uri is not None:
            values = operations.complete(ref.uri, name, value, context)
        elif ref.type == "ref/prompt" and ref.name is not None:
            values = prompts.complete(ref.name, name, value, context)
        else:
            raise BadArgument(
                None,
                "completion is for a resource template (ref/resource with a uri) or a prompt "
                "(ref/prompt with a name)",
                valid=["ref/resource", "ref/prompt"],
            )
    except Refusal as refusal:
        raise rpc_error(refusal, ctx.era) from refusal
    return {"completion": completion(values)}


def completion(values: list[str]) -> dict[str, Any]:
    """The first 100 values, the total unless it is not known, and whether there are more.

    Values cut at a mount's limit (:class:`Truncated`) have no known total.
    """
    cut = isinstance(values, Truncated)
    out: dict[str, Any] = {"values": values[:COMPLETION_CAP]}
    if not cut:
        out["total"] = len(values)
    out["hasMore"] = len(values) > COMPLETION_CAP or cut
    return out
