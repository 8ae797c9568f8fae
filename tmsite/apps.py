"""The tmsite application: registers system checks at start-up."""

from django.apps import AppConfig


class TmsiteConfig(AppConfig):
    name = "tmsite"
    verbose_name = "tmsite"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from tmsite import checks  # noqa: F401  (registers the system checks)
        from tmsite.mounts import registry

        registry.discover_blocks()  # each mount's blocks assemblers register themselves
