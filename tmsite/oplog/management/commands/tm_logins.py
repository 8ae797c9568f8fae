"""``manage.py tm_logins unlock ACCOUNT … | --all`` and ``tm_logins purge``: the login throttle.

    tm_logins unlock ACCOUNT …     end the lock-outs of these accounts now
    tm_logins unlock --all         end every lock-out in force (the callers' too)
    tm_logins purge                delete login events older than TM_LOGIN_RETENTION_DAYS

A lock-out ends by itself after ``TM_LOGIN_COOLOFF``; ``unlock`` is for a maintainer who locked
their own account out and has a shell on the box. The lock-out rows stay, with their end moved
to now, so the admin's list still shows them.

Spec: OP4.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from typing_extensions import override

from tmsite.oplog import logins


class Command(BaseCommand):
    """End lock-outs now, or purge old login events."""

    help = "End admin login lock-outs now (unlock), or delete old login events (purge)."

    @override
    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        unlock = sub.add_parser("unlock", help="end the lock-outs of these accounts now")
        unlock.add_argument("accounts", nargs="*")
        unlock.add_argument("--all", action="store_true", help="every lock-out in force")
        sub.add_parser("purge", help="delete events older than TM_LOGIN_RETENTION_DAYS")

    @override
    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "purge":
            deleted = logins.purge()
            days = settings.TM_LOGIN_RETENTION_DAYS
            self.stdout.write(f"deleted {deleted} login events older than {days} days")
            return
        accounts = [logins.account_key(name) for name in options["accounts"]]
        if not accounts and not options["all"]:
            raise CommandError("name the accounts to unlock, or give --all")
        ended = logins.unlock(None if options["all"] else accounts)
        self.stdout.write(f"ended {ended} lock-outs")
