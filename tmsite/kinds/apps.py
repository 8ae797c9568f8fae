"""The Django app that counts the kinds served and flushes the counts to the database."""

from __future__ import annotations

import atexit

from django.apps import AppConfig
from typing_extensions import override


class KindsConfig(AppConfig):
    """App ``tm_kinds``: flushes the counters after requests (when due) and at exit."""

    name = "tmsite.kinds"
    label = "tm_kinds"
    verbose_name = "Kinds served"
    default_auto_field = "django.db.models.BigAutoField"

    @override
    def ready(self) -> None:
        from django.core.signals import request_finished

        from tmsite.kinds.counter import COUNTER

        request_finished.connect(COUNTER.flush_if_due, dispatch_uid="tm-kind-counts")
        atexit.register(COUNTER.flush)
