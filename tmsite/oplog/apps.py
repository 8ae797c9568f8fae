from django.apps import AppConfig


class OplogConfig(AppConfig):
    name = "tmsite.oplog"
    label = "tm_oplog"
    verbose_name = "Operating the box"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        import atexit

        from tmsite.oplog import recorder

        atexit.register(recorder.flush_quietly)
