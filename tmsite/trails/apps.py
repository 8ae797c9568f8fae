"""The Django app of the trails' corrections (the trail index itself is ``tm_entities``')."""

from django.apps import AppConfig


class TrailsConfig(AppConfig):
    """App ``tm_trails``: the trails as served, and the maintainers' corrections of them."""

    name = "tmsite.trails"
    label = "tm_trails"
    verbose_name = "Trails"
    default_auto_field = "django.db.models.BigAutoField"
