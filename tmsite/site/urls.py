"""The site's routes. The project includes them at the root: ``path("", include(...))``.

The documents routes take any slug and leave it to the page rule (:mod:`tmsite.mounts.http.pages`),
which answers only for files it found under ``docs/``.
"""

from django.urls import include, path, re_path

from tmsite import icon
from tmsite.site import discovery, entity_views, views

app_name = "site"

urlpatterns = [
    path("", views.front, {"lang": "en"}, name="front"),
    path("ja/", views.front, {"lang": "ja"}, name="front-ja"),
    # a documents page's markdown (tmsite.site.discovery), before the pages themselves
    re_path(r"^docs/(?P<slug>[\s\S]+)\.md\Z", discovery.markdown, {"lang": "en"}, name="doc-md"),
    re_path(r"^ja/docs/(?P<slug>[\s\S]+)\.md\Z", discovery.markdown, {"lang": "ja"}),
    re_path(r"^docs(?:/(?P<slug>[\s\S]*))?\Z", views.doc, {"lang": "en"}, name="doc"),
    re_path(r"^ja/docs(?:/(?P<slug>[\s\S]*))?\Z", views.doc, {"lang": "ja"}, name="doc-ja"),
    path("pieces", views.pieces, name="pieces"),
    path("sitemap.xml", views.sitemap, name="sitemap"),
    path("robots.txt", views.robots, name="robots"),
    path("llms.txt", discovery.llms, name="llms"),
    path("static/site.css", views.stylesheet, name="stylesheet"),
    # The box's icon, one route per form (serverInfo and tools/list name them).
    *(path(i.path, views.icon_file, {"name": i.file}, name=f"icon-{i.file}") for i in icon.ICONS),
    path("", include("tmsite.site.explorer")),  # /explore and its modules
    # The entity pages (another issue) add their routes here, and list themselves for the
    # sitemap with tmsite.mounts.http.pages.register_pages("entity", ...).
    re_path(r"^autopsy/games/(?P<key>[0-9a-f]{12})\Z", entity_views.game, name="game"),
]
