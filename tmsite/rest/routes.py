"""REST routes under ``/api/v1/``: the same operations as the tools, another spelling.

Refusals become HTTP statuses through one table (``tmsite.rest.codes.HTTP_STATUS``), with the same
JSON fields the MCP refusal carries in ``data``. Every route is observed by the request log,
which gets this surface's prefix, refusal and internal-failure answer from here (``ROUTES``).

A failure inside the server is answered in the same JSON shape, ``{"error": …, "reason":
"internal"}`` with status 500 — in a route, in its rate limit, or outside every route
(``failure_outside``, for Django's ``handler500`` under ``/api/v1/``: a middleware that
failed) —
never with Django's HTML page; the request log row says ``internal`` and 500.

Spec: TL6, PR1.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest, HttpResponseBase, JsonResponse
from django.utils import timezone
from ninja import Query, Router, Schema
from pydantic import Field

from tmsite import operations
from tmsite.callers import caller
from tmsite.callers.costs import Priced
from tmsite.core.errors import BadArgument, Refusal
from tmsite.mcp import tools
from tmsite.mcp.convert import prompt_result
from tmsite.mcp.namespace_methods import completion, resource_page
from tmsite.operations import prompts
from tmsite.operations.pieces import Licensing
from tmsite.operations.schemas import (
    Overview,
    PieceStatus,
    ProposalReceipt,
    ProposeInput,
    Resolved,
    SearchInput,
    SearchResult,
)
from tmsite.oplog import failures, hooks
from tmsite.oplog.recorder import Row
from tmsite.rest.codes import HTTP_STATUS, REST_PREFIX, refusal_body


def _asked_uri(route: str, query: Mapping[str, str]) -> str | None:
    """The URI a route reads (``resolve``), for its ``rate-limited`` refusal."""
    return query.get("uri") if route.startswith("resolve") else None


def refused(refusal: Refusal) -> HttpResponseBase:
    """A refusal as this surface answers it outside a route (the bucket was short)."""
    return JsonResponse(refusal_body(refusal), status=HTTP_STATUS[refusal.reason])


INTERNAL_MESSAGE = "The server failed to answer this request; the failure is in its log."
#: Routes that are not written to the request log (health, liveness and readiness checks).
UNLOGGED = frozenset({"health", "live", "ready"})


def failed() -> HttpResponseBase:
    """A failure inside the server, as this surface answers it: 500, the refusal shape."""
    response = JsonResponse({"error": INTERNAL_MESSAGE, "reason": failures.INTERNAL}, status=500)
    return hooks.mark_internal(response)


ROUTES = hooks.Routes("rest", REST_PREFIX, _asked_uri, refused, failed)


def failure_outside(
    request: HttpRequest,
) -> tuple[HttpResponseBase, Row | None, Priced | None]:
    """The answer to a failure outside every route (a middleware), and its log row.

    For ``tmsite.api.server_error``; no row for the routes that are not logged (``UNLOGGED``).
    """
    response = failed()
    if ROUTES.route(request).strip("/") in UNLOGGED:
        return response, None, None
    try:
        row, priced = ROUTES.row(request, timezone.now())
    except Exception:  # the row keeps the surface alone
        return response, Row(at=timezone.now(), surface=ROUTES.surface), None
    return response, row, priced


router = Router(tags=["tmsite"])
# Every route: the caller's rate limit (429 + Retry-After) and a request log row.
router.add_decorator(hooks.observe_routes(ROUTES), mode="view")


class RefusalOut(Schema):
    """The body of every refused route: the message and the refusal's stable fields."""

    error: str = Field(description="What was refused, for people.")
    reason: str = Field(description="The stable reason a program can branch on.")


class AnnotationsOut(Schema):
    """Who an entry is for, how much it matters, when it last changed (ISO 8601, UTC)."""

    audience: list[str] | None = None
    priority: float | None = None
    lastModified: str | None = None


class ResourceOut(Schema):
    """One entry of the map, as ``resources/list`` gives it."""

    uri: str
    name: str
    title: str | None = None
    mimeType: str | None = None
    size: int | None = None
    annotations: AnnotationsOut | None = None


class ResourceMapOut(Schema):
    """One page of the map; ``nextCursor`` asks for the next."""

    resources: list[ResourceOut]
    nextCursor: str | None = None


class CompletionOut(Schema):
    """Completed values (at most 100), how many there are, and whether more were cut.

    ``total`` is left out when the values were cut at a mount's limit (how many there are is
    not known; ``hasMore`` is true), as MCP's completion leaves it out.
    """

    values: list[str]
    total: int | None = None
    hasMore: bool


class CompleteQuery(Schema):
    """The query of ``/complete``: which template argument, and what was typed."""

    template: str = Field(description="A uriTemplate from /api/v1/templates.")
    argument: str = Field(description="The template argument to complete.")
    value: str = Field(default="", description="What has been typed so far.")


_ERRORS: dict[int | frozenset[int], Any] = {frozenset(set(HTTP_STATUS.values())): RefusalOut}
#: The routes (their path under ``REST_PREFIX``) whose query parameters are a tool's
#: arguments, for refusing parameters that do not validate as that tool would. ``pieces/{key}``
#: is not here: a path always validates, and the route checks its query itself.
TWINS: dict[str, str] = {
    "overview": "overview",
    "pieces": "overview",
    "licensing": "licensing",
    "resolve": "resolve",
}


def twin_arguments(request: HttpRequest, tool: str, **path: str) -> None:
    """Hold the query (and path) to the twin tool's arguments.

    Raises:
        BadArgument: an unknown argument, or a missing one, exactly as the tool refuses it.
    """
    query = {key: request.GET[key] for key in request.GET}
    tools.arguments_for(tool, {**query, **path})


# Answers leave out what the operation did not set, as the tools do (``exclude_unset``).
@router.get(
    "/overview",
    response={200: Overview, **_ERRORS},
    summary="What the box is",
    exclude_unset=True,
)
def overview(request: HttpRequest) -> Overview:
    """The ``overview`` tool's answer: what the box is, every piece measured now."""
    twin_arguments(request, "overview")
    return operations.overview()


@router.get(
    "/pieces",
    response={200: list[PieceStatus], **_ERRORS},
    summary="Every piece",
    exclude_unset=True,
)
def pieces(request: HttpRequest) -> list[PieceStatus]:
    """The pieces of ``overview`` alone, each measured now."""
    twin_arguments(request, "overview")
    return operations.overview().pieces


@router.get(
    "/pieces/{key}",
    response={200: PieceStatus, **_ERRORS},
    summary="One piece",
    exclude_unset=True,
)
def piece(request: HttpRequest, key: str) -> PieceStatus:
    """The ``piece`` tool's answer; an unknown key is ``not-found`` (404) with the valid keys."""
    twin_arguments(request, "piece", key=key)
    return operations.piece(key)


@router.get(
    "/licensing",
    response={200: Licensing, **_ERRORS},
    summary="The licence position",
    exclude_unset=True,
)
def licensing(request: HttpRequest) -> dict[str, Any]:
    """The ``licensing`` tool's answer: code licences and data terms, from the pieces."""
    twin_arguments(request, "licensing")
    return operations.licensing()


@router.get(
    "/resolve",
    response={200: Resolved, **_ERRORS},
    summary="Read one tm:// URI",
    exclude_unset=True,
)
def resolve(request: HttpRequest, uri: str) -> Any:
    """The ``resolve`` tool's answer for ``uri``: its content with the links in the body."""
    twin_arguments(request, "resolve")
    return operations.resolve(uri)


@router.get(
    "/search",
    response={200: SearchResult, **_ERRORS},
    summary="Search the box",
    exclude_unset=True,
)
def search(request: HttpRequest, q: str) -> Any:
    """The ``search`` tool's answer for ``q``.

    ``scope``, ``kinds`` (comma-separated), ``limit`` and ``cursor`` as the tool takes them.
    """
    arguments: dict[str, Any] = {key: request.GET[key] for key in request.GET if key != "q"}
    arguments["query"] = q
    if "kinds" in arguments:
        arguments["kinds"] = [kind for kind in arguments["kinds"].split(",") if kind]
    args = tools.arguments_for("search", arguments)
    assert isinstance(args, SearchInput)
    return operations.search(args)


@router.get(
    "/resources",
    response={200: ResourceMapOut, **_ERRORS},
    summary="The map",
    exclude_unset=True,
)
def resources(request: HttpRequest, cursor: str | None = None) -> dict[str, Any]:
    """One page of ``resources/list``: the root, the help document, mounts and collections."""
    return resource_page(cursor)


@router.get(
    "/templates", response={200: list[dict[str, Any]], **_ERRORS}, summary="Resource templates"
)
def templates(request: HttpRequest) -> list[dict[str, Any]]:
    """``resources/templates/list``: every URI template with its grammar."""
    return [item.to_json() for item in operations.templates()]


@router.get(
    "/complete",
    response={200: CompletionOut, **_ERRORS},
    summary="Complete an argument",
    exclude_none=True,
)
def complete(request: HttpRequest, query: Query[CompleteQuery]) -> dict[str, Any]:
    """``completion/complete`` for one template argument, without filled context."""
    return completion(operations.complete(query.template, query.argument, query.value, {}))


class PromptCompleteQuery(Schema):
    """The query of ``/prompts/{name}/complete``: which argument, and what was typed."""

    argument: str = Field(description="The prompt argument to complete.")
    value: str = Field(default="", description="What has been typed so far.")


@router.get("/prompts", response={200: list[dict[str, Any]], **_ERRORS}, summary="The prompts")
def prompt_list(request: HttpRequest) -> list[dict[str, object]]:
    """``prompts/list``: every prompt with its arguments."""
    return prompts.listed()


@router.get(
    "/prompts/{name}", response={200: dict[str, Any], **_ERRORS}, summary="One prompt, rendered"
)
def prompt_get(request: HttpRequest, name: str) -> dict[str, Any]:
    """``prompts/get``: the query parameters are the prompt's arguments; reads are embedded."""
    return prompt_result(prompts.get(name, {key: request.GET[key] for key in request.GET}))


@router.get(
    "/prompts/{name}/complete",
    response={200: CompletionOut, **_ERRORS},
    summary="Complete a prompt argument",
    exclude_none=True,
)
def prompt_complete(
    request: HttpRequest, name: str, query: Query[PromptCompleteQuery]
) -> dict[str, Any]:
    """``completion/complete`` on ``ref/prompt`` for one argument, without filled context."""
    return completion(prompts.complete(name, query.argument, query.value, {}))


@router.post(
    "/proposals",
    response={200: ProposalReceipt, **_ERRORS},
    summary="Propose what the namespace lacks",
    exclude_unset=True,
)
def propose(request: HttpRequest) -> Any:
    """The ``propose`` tool's answer: the body is its arguments (JSON), the answer its receipt."""
    try:
        body = json.loads(request.body or b"{}")
    except ValueError:
        raise BadArgument(None, "the body must be the propose tool's arguments as JSON") from None
    if not isinstance(body, dict):
        raise BadArgument(None, "the body must be a JSON object: the propose tool's arguments")
    args = tools.arguments_for("propose", body)
    assert isinstance(args, ProposeInput)
    return operations.propose(args, caller.address_in(request.META))
