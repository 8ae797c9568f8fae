"""``python manage.py tm_purge_log``: delete request log rows past their retention now."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from tmsite.oplog import recorder


class Command(BaseCommand):
    help = (
        "Delete request log rows older than TM_LOG_RETENTION_DAYS (30). The server also does "
        "this by itself, at most once an hour per process, after writing rows."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        deleted = recorder.purge()
        days = settings.TM_LOG_RETENTION_DAYS
        self.stdout.write(f"deleted {deleted} request log rows older than {days} days")
