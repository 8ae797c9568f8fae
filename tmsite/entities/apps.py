"""The Django app of the entity records (patterns, games, routines, lessons)."""

from django.apps import AppConfig


class EntitiesConfig(AppConfig):
    """App ``tm_entities``: its tables keep the label they were created under."""

    name = "tmsite.entities"
    label = "tm_entities"
    verbose_name = "Entities"
    default_auto_field = "django.db.models.BigAutoField"
