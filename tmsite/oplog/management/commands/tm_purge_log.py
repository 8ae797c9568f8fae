"""``python manage.py tm_purge_log``: delete request log rows past their retention now.

Spec: OP2.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand
from typing_extensions import override

from tmsite.oplog import recorder


class Command(BaseCommand):
    """Purge the request log of rows older than the retention, and say how many went."""

    help = (
        "Delete request log rows older than TM_LOG_RETENTION_DAYS (30). The server also does "
        "this by itself, at most once an hour per process, after writing rows."
    )

    @override
    def handle(self, *args: Any, **options: Any) -> None:
        deleted = recorder.purge()
        days = settings.TM_LOG_RETENTION_DAYS
        self.stdout.write(f"deleted {deleted} request log rows older than {days} days")
