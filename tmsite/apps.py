"""The tmsite application: registers system checks at start-up."""

from django.apps import AppConfig
from typing_extensions import override


class TmsiteConfig(AppConfig):
    """The project's own app: its start-up checks and the mounts' blocks assemblers."""

    name = "tmsite"
    verbose_name = "tmsite"
    default_auto_field = "django.db.models.BigAutoField"

    @override
    def ready(self) -> None:
        from tmsite import checks  # noqa: F401  (registers the system checks)
        from tmsite.mounts import registry

        registry.discover_blocks()  # each mount's blocks assemblers register themselves
