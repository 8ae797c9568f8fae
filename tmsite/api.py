"""The django-ninja API: the MCP endpoint at ``/api/mcp`` and the REST routes at ``/api/v1/``."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI

from tmsite import rest
from tmsite.mcp import endpoint
from tmsite.mounts.errors import Refusal
from tmsite.oplog import health

api = NinjaAPI(
    title="tmsite",
    version="1",
    description="A box's knowledge for MCP clients. The MCP endpoint is POST /api/mcp; these "
    "REST routes share every function with its tools.",
    urls_namespace="api",
)
api.add_router("", endpoint.router)
api.add_router("/v1", rest.router)
api.add_router("/v1", health.router)  # GET /api/v1/health (tmsite.oplog)


@api.exception_handler(Refusal)
def refusal(request: HttpRequest, exc: Refusal) -> HttpResponse:
    return api.create_response(
        request,
        {"error": exc.message, **exc.data},
        status=rest.HTTP_STATUS[exc.reason],
    )
