from django.apps import AppConfig


class EntitiesConfig(AppConfig):
    name = "tmsite.entities"
    label = "tm_entities"
    default_auto_field = "django.db.models.BigAutoField"
