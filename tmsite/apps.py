"""The tmsite application: registers system checks at start-up; the admin with the box's site."""

from django.apps import AppConfig
from django.contrib.admin.apps import AdminConfig
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

        from tmsite.subscriptions import listen, subscribe

        listen.install()  # answered by the ASGI server, refused (saying so) by the others
        subscribe.install()  # likewise, for a 2025-11-25 session


class TmAdminConfig(AdminConfig):
    """Django's admin, with the box's own site (:class:`tmsite.admin_site.TmAdminSite`)."""

    default_site = "tmsite.admin_site.TmAdminSite"
