"""The django-ninja API: the MCP endpoint at ``/api/mcp`` and the REST routes at ``/api/v1/``.

A refusal raised by a REST route, or parameters ninja cannot validate, are answered here with
the status of ``tmsite.rest.codes`` and the refusal's fields.

Spec: TL6.
"""

from __future__ import annotations

import sys
from datetime import datetime
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.views import defaults
from ninja import NinjaAPI
from ninja.errors import ValidationError
from ninja.renderers import JSONRenderer
from ninja.responses import NinjaJSONEncoder

from tmsite.core.errors import BadArgument, Refusal
from tmsite.mcp import endpoint
from tmsite.oplog import failures, hooks
from tmsite.rest import health, readiness
from tmsite.rest import routes as rest
from tmsite.rest.codes import HTTP_STATUS, REST_PREFIX, refusal_body


class _Encoder(NinjaJSONEncoder):
    """Times to the microsecond, as the tools write them (Django's encoder keeps milliseconds)."""

    def default(self, o: Any) -> Any:
        if isinstance(o, datetime):
            text = o.isoformat()
            return text.removesuffix("+00:00") + "Z" if text.endswith("+00:00") else text
        return super().default(o)


class _Renderer(JSONRenderer):
    encoder_class = _Encoder


api = NinjaAPI(
    title="tmsite",
    version="1",
    description="A box's knowledge for MCP clients. The MCP endpoint is POST /api/mcp; these "
    "REST routes share every function with its tools.",
    urls_namespace="api",
    renderer=_Renderer(),
)
api.add_router("", endpoint.router)
api.add_router("/v1", rest.router)
api.add_router("/v1", health.router)  # GET /api/v1/health (tmsite.oplog)
api.add_router("/v1", readiness.router)  # GET /api/v1/live, /api/v1/ready (tmsite.oplog)


@api.exception_handler(Refusal)
def refusal(request: HttpRequest, exc: Refusal) -> HttpResponse:
    """A refusal raised in a REST route: its status per reason, its fields as the body."""
    return api.create_response(
        request,
        refusal_body(exc),
        status=HTTP_STATUS[exc.reason],
    )


@api.exception_handler(ValidationError)
def invalid_arguments(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    """Parameters that do not validate: ``bad-argument`` (400), never ninja's bare 422.

    Worded as the twin tool words it when the route has one.
    """
    route = request.path.removeprefix(REST_PREFIX)
    twin = rest.TWINS.get(route)
    try:
        if twin is not None:
            rest.twin_arguments(request, twin)
    except Refusal as refused:
        return refusal(request, refused)
    problems = "; ".join(
        f"{'.'.join(str(p) for p in error.get('loc', ())[1:]) or 'a parameter'}: "
        f"{error.get('msg', 'not valid')}"
        for error in exc.errors
    )
    return refusal(
        request, BadArgument(None, f"{route} was called with parameters it cannot take: {problems}")
    )


#: Each surface's answer to a failure outside its views, under its path: where the failure is
#: reported, and the answer with the request's log row (no row: not logged).
_SURFACES = (
    (endpoint.MCP_PATH, "mcp-http outside the endpoint", endpoint.failure_outside),
    (REST_PREFIX, "rest outside the routes", rest.failure_outside),
)


def server_error(request: HttpRequest) -> HttpResponseBase:
    """``handler500``: a failure outside every view's own handling, answered in its surface's shape.

    ``/api/mcp`` answers JSON-RPC -32603 (with the request's id when its body can be read),
    ``/api/v1/`` the REST ``internal`` refusal, every other path Django's page. The failure is
    logged once per class a minute (``tmsite.oplog.failures``), not a traceback per request, and
    the request log gets the request's row unless one was written for it already.
    """
    exc = sys.exc_info()[1] or RuntimeError("handler500")
    for prefix, where, answer in _SURFACES:
        if request.path.startswith(prefix):
            failures.report(where, exc)
            response, row, priced = answer(request)
            if row is not None:
                hooks.record_failure(request, response, row, priced)
            return response
    failures.report("site", exc)
    page = defaults.server_error(request)
    page._has_been_logged = True  # type: ignore[attr-defined]  # reported once, above
    return page
