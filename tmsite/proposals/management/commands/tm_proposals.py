"""``manage.py tm_proposals expire``: mark the proposals past their age, delete the long expired.

Open proposals older than ``TM_PROPOSALS_EXPIRE_DAYS`` are read as expired at once (receipts,
the admin's queue) and marked so whenever a proposal is taken; this marks them without waiting
for one, and deletes expired proposals that expired more than ``TM_PROPOSALS_EXPIRED_KEEP_DAYS``
ago (their receipts then read as ``not-found``). Decided proposals are never deleted. Run it
from cron, daily, on one machine.

Spec: PROP3, OP4.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction
from typing_extensions import override

from tmsite.operations import intake


class Command(BaseCommand):
    """Expire old open proposals and delete expired ones past their retention."""

    help = (
        "Mark open proposals older than TM_PROPOSALS_EXPIRE_DAYS expired, and delete expired "
        "ones past TM_PROPOSALS_EXPIRED_KEEP_DAYS. Decided proposals are kept."
    )

    @override
    def add_arguments(self, parser: CommandParser) -> None:
        commands = parser.add_subparsers(dest="command", required=True)
        commands.add_parser("expire", help="Mark the old open ones, delete the long expired.")

    @override
    def handle(self, *args: Any, **options: Any) -> None:
        with transaction.atomic():
            marked = intake.expire()
            deleted = intake.sweep()
        self.stdout.write(
            f"expired {marked} open proposals older than "
            f"{settings.TM_PROPOSALS_EXPIRE_DAYS:g} days; deleted {deleted} expired more than "
            f"{settings.TM_PROPOSALS_EXPIRED_KEEP_DAYS:g} days ago"
        )
