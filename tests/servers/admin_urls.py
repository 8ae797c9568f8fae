"""Only the admin, so the server admin tests do not depend on the rest of the site's routes."""

from django.contrib import admin
from django.urls import path

urlpatterns = [path("admin/", admin.site.urls)]
