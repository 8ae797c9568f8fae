"""URL configuration: the MCP endpoint and REST routes, the admin (``TM_ADMIN_PATH``), the site."""

from django.conf import settings
from django.contrib import admin
from django.contrib.staticfiles.views import serve
from django.http import Http404, HttpRequest, HttpResponseBase
from django.urls import URLPattern, URLResolver, include, path, re_path

from tmsite.api import api
from tmsite.oplog import exposition


def package_file(request: HttpRequest, path: str) -> HttpResponseBase:
    """A static file of an installed package, by its exact path.

    Raises:
        Http404: a path with an empty, ``.`` or ``..`` segment (or a backslash) is not one,
            rather than being folded onto another file.
    """
    segments = path.split("/")
    if any(s in {"", ".", ".."} or "\\" in s for s in segments):
        raise Http404("no such file")
    return serve(request, path, insecure=True)


def patterns() -> list[URLPattern | URLResolver]:
    """The box's routes; the admin at ``TM_ADMIN_PATH`` (``admin/`` unless set)."""
    return [
        path("api/", api.urls),
        path("metrics", exposition.metrics_view),  # loopback and TM_METRICS_ALLOWED only
        path(str(settings.TM_ADMIN_PATH), admin.site.urls),
        path("", include("tmsite.site.urls")),
        # The admin's and the API docs' files, from the installed packages, whatever DEBUG
        # says: the embedded default has no other server, and nginx passes /static/ through.
        re_path(r"^static/(?P<path>.+)\Z", package_file),
    ]


urlpatterns = patterns()

# A foreign Host is refused before any view runs; on /api/mcp the refusal is JSON-RPC.
handler400 = "tmsite.mcp.endpoint.bad_request"
# A failure outside a view's own handling: JSON on /api/mcp and /api/v1/, logged once a minute.
handler500 = "tmsite.api.server_error"
