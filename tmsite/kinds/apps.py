from __future__ import annotations

import atexit

from django.apps import AppConfig


class KindsConfig(AppConfig):
    name = "tmsite.kinds"
    label = "tm_kinds"
    verbose_name = "Kinds served"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.core.signals import request_finished

        from tmsite.kinds.counter import COUNTER

        request_finished.connect(COUNTER.flush_if_due, dispatch_uid="tm-kind-counts")
        atexit.register(COUNTER.flush)
