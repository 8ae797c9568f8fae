"""The site mounted at the root, as the project mounts it."""

from django.urls import include, path

from tmsite.site.views import not_found

urlpatterns = [path("", include("tmsite.site.urls"))]
handler404 = not_found
