"""URL configuration: the MCP endpoint and REST routes, the admin, and the site."""

from django.contrib import admin
from django.contrib.staticfiles.views import serve
from django.urls import include, path, re_path

from tmsite.api import api

urlpatterns = [
    path("api/", api.urls),
    path("admin/", admin.site.urls),
    path("", include("tmsite.site.urls")),
    # The admin's and the API docs' files, from the installed packages, whatever DEBUG says:
    # the embedded default has no other server, and nginx passes /static/ through.
    re_path(r"^static/(?P<path>.+)\Z", serve, {"insecure": True}),
]

# A foreign Host is refused before any view runs; on /api/mcp the refusal is JSON-RPC.
handler400 = "tmsite.mcp.endpoint.bad_request"
