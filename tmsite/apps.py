"""The tmsite application: registers system checks at start-up; the admin with the box's site."""

from django.apps import AppConfig
from django.contrib.admin.apps import AdminConfig
from django_otp.plugins.otp_totp.apps import DefaultConfig as OtpTotpDefaultConfig
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

        from tmsite.streams import listen, subscribe

        listen.install()  # answered by the ASGI server and stdio, refused (saying so) elsewhere
        subscribe.install()  # answered for a session: stdio, or HTTP under the ASGI server

        from tmsite.bus import redis_bus

        redis_bus.install()  # the change bus across machines, with TM_REDIS_URL


class TmAdminConfig(AdminConfig):
    """Django's admin, with the box's own site (:class:`tmsite.admin_site.TmAdminSite`)."""

    default_site = "tmsite.admin_site.TmAdminSite"


class OtpTotpConfig(OtpTotpDefaultConfig):  # type: ignore[misc]
    """django-otp's TOTP devices, under a heading the admin's readers know (not ``OTP_TOTP``)."""

    verbose_name = "Second factor (TOTP)"
