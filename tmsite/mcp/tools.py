"""The six tools: one table of what is advertised, one of what runs, cross-checked at import.

``TOOLS`` says name → title, description (written for the model), input and output schemas
(generated from the models in ``tmsite.operations.schemas``, the same the REST routes use).
``RUNNERS`` says name → the operation. An advertised tool without a runner, or a runner without
a tool, is a start-up error (``check_tables``). A refusal inside a tool is a tool error
(``isError``) whose text is the JSON of the refusal's fields.

Spec: TL1, TL2, TL3, RJ3.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from pydantic import BaseModel, ValidationError

from tmsite import icon, operations
from tmsite.core.errors import BadArgument, Refusal
from tmsite.mcp.lifecycle import public_url
from tmsite.mcp.protocol import INVALID_PARAMS, CallContext, RpcError
from tmsite.operations.pieces import Licensing
from tmsite.operations.schemas import (
    LicensingInput,
    Overview,
    OverviewInput,
    PieceInput,
    PieceStatus,
    ProposalReceipt,
    ProposeInput,
    Resolved,
    ResolveInput,
    SearchInput,
    SearchResult,
)
from tmsite.oplog import metrics


@dataclass(frozen=True)
class Tool:
    """One advertised tool: its name, what the model is told, its input and output models.

    ``open_world``: whether it reaches beyond the box (``openWorldHint``). ``read_only``:
    whether it changes nothing (every tool but ``propose``, which keeps a proposal for the
    maintainers: not read-only, yet not destructive, and idempotent — an identical proposal is
    counted onto the first).
    """

    name: str
    title: str
    description: str
    input_model: type[BaseModel]
    output_model: type[BaseModel]
    open_world: bool
    read_only: bool = True

    def to_json(self, icons: list[dict[str, object]]) -> dict[str, Any]:
        """The ``tools/list`` entry: schemas from the models, the box's ``icons``, the hints."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": input_schema(self.input_model),
            "outputSchema": self.output_model.model_json_schema(),
            "icons": icons,
            "annotations": {
                "title": self.title,
                "readOnlyHint": self.read_only,
                "destructiveHint": False,
                "idempotentHint": True,
                "openWorldHint": self.open_world,
            },
        }


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """An object schema that refuses unknown keys (the model forbids extras)."""
    schema = model.model_json_schema()
    schema.setdefault("properties", {})
    schema["type"] = "object"
    schema["additionalProperties"] = False
    return schema


TOOLS: tuple[Tool, ...] = (
    Tool(
        "overview",
        "What tinymachines is, and what is up",
        "Call this first. Answers what the six pieces of the 6502 work are — what each is, "
        "where its source is, how it ships, its code licence and its data terms — and whether "
        "each public surface answers, measured when you call (a short cache applies; every "
        "measurement is timestamped). 'up' answered below 400, 'down' answered 400 or above, "
        "'unreachable' did not answer, 'not_probed' has no public URL. The chip itself runs "
        "behind the 6502 API's own MCP endpoint, named in the answer. Takes no arguments.",
        OverviewInput,
        Overview,
        open_world=True,  # it measures the pieces' public surfaces, off the box
    ),
    Tool(
        "piece",
        "One piece in detail",
        "One piece by its key, with the same live reachability measurement as overview. "
        "Keys: halfphi, explorer, chip-api, halfwave, console, registry. An unknown key is "
        "refused with the list of valid keys, never guessed.",
        PieceInput,
        PieceStatus,
        open_world=True,  # the same measurement, of one piece
    ),
    Tool(
        "licensing",
        "What may be published, and under what terms",
        "The licence position is not one licence: code licences and die-data terms are "
        "separate, and the data terms travel to everything derived from the die data. "
        "Assembled from the pieces' own records. Read before suggesting publishing, "
        "relicensing or charging. Takes no arguments.",
        LicensingInput,
        Licensing,
        open_world=False,  # the pieces' own records, on the box
    ),
    Tool(
        "resolve",
        "Read a tm:// URI, with its links",
        "Reads one tm:// URI exactly as resources/read does and returns its content with its "
        "typed links in the body. Start at tm://tinymachines/ (the mounts); a URI ending in / "
        "lists its children; ?as=stat gives metadata; ?as=links every link. Links say how "
        "things relate: tm:source / tm:renders-as tie a page to its markdown, version-history "
        "leads to a file's log. A URI that does not resolve is refused with a reason and the "
        "nearest URIs that do. Binary content comes as its size unless ?as=raw asks for "
        "base64.",
        ResolveInput,
        Resolved,
        # The mcp mount runs other servers' tools (those its map says read one thing).
        open_world=True,
    ),
    Tool(
        "search",
        "Find things by what they say",
        "Full-text search over the box's documents, English by stem and Japanese by character "
        "pairs: the checkout's files, with more mounts as they offer theirs. Use it when you "
        "know what you want but not where it is; walk from tm://tinymachines/ when you want "
        "to see what exists. Each hit is an address narrowed to the passage that matched "
        "(?lines=FIRST-LAST): read it with resolve for the full passage. Arguments: query "
        "(plain words), scope (a collection address to search below), kinds (mounts or kinds "
        "to keep), limit (1-50, default 10), cursor (nextCursor, for more). The same search "
        "is an address: <collection>?as=search&q=<words>.",
        SearchInput,
        SearchResult,
        open_world=False,
    ),
    Tool(
        "propose",
        "Propose what the namespace lacks, for a maintainer to decide",
        "Only when reading cannot help: first read the refusal's nearest, the links and the "
        "listings, and use what exists. Then propose one of four kinds: address (uri that "
        "does not resolve, expected: what you expected there), link (from, rel, to, why: both "
        "ends resolve, rel is a tm: relation of docs/links.md), correction (uri of an entity "
        "or mcp/<server>/map with entry, field, value, why: a field the maintainers correct), "
        "trail (name, title, description, steps: [{uri, note}]). Nothing changes until a "
        "maintainer approves it. The answer is a receipt address: read it for the status, "
        "the change as a diff, and the decision with its reason. Identical proposals are one, "
        "counted. Costs a large share of your rate budget (a refusal of bad arguments costs what "
        "a read does); refusals name what is valid.",
        ProposeInput,
        ProposalReceipt,
        open_world=False,
        read_only=False,
    ),
)


# Each runner is handed its tool's input model, validated (``arguments_for``), and the
# caller's address (None outside HTTP; in memory only: a proposal counts against its caller).
RUNNERS: dict[str, Callable[[Any, str | None], BaseModel]] = {
    "overview": lambda args, address: operations.overview(),
    "piece": lambda args, address: operations.piece(args.key),
    "licensing": lambda args, address: Licensing.model_validate(operations.licensing()),
    "resolve": lambda args, address: operations.resolve(args.uri),
    "search": lambda args, address: operations.search(args),
    "propose": operations.propose,
}


def check_tables(tools: tuple[Tool, ...], runners: Mapping[str, object]) -> None:
    """Fail unless every advertised tool runs and every runner is advertised."""
    advertised = [tool.name for tool in tools]
    missing = sorted(set(advertised) - set(runners))
    unadvertised = sorted(set(runners) - set(advertised))
    if missing or unadvertised or len(set(advertised)) != len(advertised):
        raise RuntimeError(
            f"tool table and runners disagree: tools with no runner {missing}, "
            f"runners with no tool {unadvertised}"
        )


check_tables(TOOLS, RUNNERS)
_BY_NAME = {tool.name: tool for tool in TOOLS}
metrics.name_tools(_BY_NAME)  # a tools/call's label: one of these, else "other"


@cache
def _listed(origin: str) -> list[dict[str, Any]]:
    icons = icon.icons(origin)
    return [tool.to_json(icons) for tool in TOOLS]


def list_tools(params: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
    """``tools/list``: the tools in table order (built once per public front door)."""
    return {"tools": _listed(public_url())}


def _text_result(payload: dict[str, Any], *, is_error: bool) -> dict[str, Any]:
    result: dict[str, Any] = {
        "content": [{"type": "text", "text": json.dumps(payload, ensure_ascii=False, indent=1)}],
        "isError": is_error,
    }
    if not is_error:
        result["structuredContent"] = payload
    return result


def call_tool(params: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
    """``tools/call``: run the named tool on its arguments (absent arguments are ``{}``).

    Raises:
        RpcError: -32602 for an unknown tool name (with ``valid``) or arguments that are not an
            object; everything after that is a tool result, errors included.
    """
    name = params.get("name")
    if not isinstance(name, str) or name not in _BY_NAME:
        raise RpcError(
            INVALID_PARAMS,
            f"no tool named {name!r}; the tools are {', '.join(_BY_NAME)}",
            {"valid": list(_BY_NAME)},
        )
    arguments = params.get("arguments")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise RpcError(INVALID_PARAMS, "tools/call: arguments must be an object")
    return run(name, arguments, ctx.exchange.address if ctx.exchange is not None else None)


def arguments_for(name: str, arguments: Mapping[str, Any]) -> BaseModel:
    """``arguments`` checked against tool ``name``'s input schema (the REST twin's too).

    Raises:
        BadArgument: an argument the tool does not take, or one it needs and did not get, with
            ``valid`` (every argument it takes) and ``required``.
    """
    tool = _BY_NAME[name]
    try:
        return tool.input_model.model_validate(dict(arguments))
    except ValidationError as exc:
        message, valid, required = _argument_error(tool, exc)
        raise BadArgument(None, message, valid=valid, required=required) from None


def run(name: str, arguments: dict[str, Any], address: str | None = None) -> dict[str, Any]:
    """Validate ``arguments`` against the tool's schema and run it; refusals are tool errors.

    ``address`` is the caller's (None outside HTTP).
    """
    try:
        output = RUNNERS[name](arguments_for(name, arguments), address)
    except Refusal as refusal:
        return _text_result({"error": refusal.message, **refusal.data}, is_error=True)
    # What the operation set stays, nulls included: a nullable field the output schema
    # requires must be present; what it left unset (an optional field) is left out.
    return _text_result(output.model_dump(mode="json", exclude_unset=True), is_error=False)


def _argument_error(tool: Tool, exc: ValidationError) -> tuple[str, list[str], list[str]]:
    schema = input_schema(tool.input_model)
    properties = schema.get("properties", {})
    problems = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "arguments"
        if error["type"] == "extra_forbidden":
            problems.append(f"{where}: not an argument of {tool.name}")
        else:
            problems.append(f"{where}: {error['msg']}")
    expected = ", ".join(f"{key} ({value.get('type', 'any')})" for key, value in properties.items())
    message = (
        f"{tool.name} was called with arguments it does not take: {'; '.join(problems)}. "
        f"It takes {expected or 'no arguments'}."
    )
    return message, sorted(properties), list(schema.get("required", []))
