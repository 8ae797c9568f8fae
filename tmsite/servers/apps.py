"""The Django app of the MCP server records, their declarations and index maps."""

from django.apps import AppConfig


class ServersConfig(AppConfig):
    """App ``tm_servers``: its tables keep the label they were created under."""

    name = "tmsite.servers"
    label = "tm_servers"
    verbose_name = "MCP servers"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Register the start-up checks of the records (``tm.E031``, ``tm.W030``, ``tm.W032``)."""
        from tmsite.servers import programs  # noqa: F401
