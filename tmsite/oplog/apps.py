"""The ``tm_oplog`` app: the request log's model, its admin page and its purge command."""

from django.apps import AppConfig
from typing_extensions import override


class OplogConfig(AppConfig):
    """Operating the box; on start, registers the flush of buffered log rows at exit."""

    name = "tmsite.oplog"
    label = "tm_oplog"
    verbose_name = "Operating the box"
    default_auto_field = "django.db.models.BigAutoField"

    @override
    def ready(self) -> None:
        import atexit

        from tmsite.oplog import recorder

        atexit.register(recorder.flush_quietly)
