"""URL configuration: the MCP endpoint and REST routes, the admin, and the site."""

from django.contrib import admin
from django.urls import include, path

from tmsite.api import api

urlpatterns = [
    path("api/", api.urls),
    path("admin/", admin.site.urls),
    path("", include("tmsite.site.urls")),
]

# A foreign Host is refused before any view runs; on /api/mcp the refusal is JSON-RPC.
handler400 = "tmsite.mcp.endpoint.bad_request"
