"""URL configuration: the MCP endpoint, the REST routes, the admin and the site."""

from django.contrib import admin
from django.urls import path

urlpatterns = [
    path("admin/", admin.site.urls),
]
