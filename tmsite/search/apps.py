"""The Django app that holds the search index (its tables; no models)."""

from django.apps import AppConfig


class SearchConfig(AppConfig):
    """App ``tm_search``: the full-text index of the mounts' documents."""

    name = "tmsite.search"
    label = "tm_search"
    verbose_name = "Search"
