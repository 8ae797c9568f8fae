"""The ``tm_site`` app: the site's pages, their templates and static files."""

from django.apps import AppConfig


class SiteConfig(AppConfig):
    """The site the http mount reads; it has no models."""

    name = "tmsite.site"
    label = "tm_site"
    default_auto_field = "django.db.models.BigAutoField"
