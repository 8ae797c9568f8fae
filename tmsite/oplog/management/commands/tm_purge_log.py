"""``python manage.py tm_purge_log``: delete request log rows past their retention now.

On PostgreSQL it also makes the day partitions ahead and drops the days past the retention
whole; run it from a timer (``deploy/systemd/tmsite-purge.timer``).

Spec: OP2, OBS5.
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
        "Delete request log rows older than TM_LOG_RETENTION_DAYS (30); on PostgreSQL, make the "
        "day partitions ahead and drop the days past it. The server also does this by itself, "
        "at most once an hour per process, after writing rows."
    )

    @override
    def handle(self, *args: Any, **options: Any) -> None:
        purged = recorder.purge()
        days = settings.TM_LOG_RETENTION_DAYS
        self.stdout.write(f"deleted {purged.deleted} request log rows older than {days} days")
        if purged.dropped:
            self.stdout.write(
                f"dropped {len(purged.dropped)} day partitions past {days} days: "
                + ", ".join(purged.dropped)
            )
        if purged.created:
            self.stdout.write(f"made {len(purged.created)} day partitions ahead")
