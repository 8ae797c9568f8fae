"""``manage.py tm_load_records [--checkout PATH]``: fill the entity tables from the records.

Spec: ENT.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from typing_extensions import override

from tmsite.entities.loaders import RecordError, load_checkout


class Command(BaseCommand):
    """``manage.py tm_load_records``: load the records, re-apply corrections, say what changed."""

    help = "Load data/autopsy.json and data/lessons.json into the entity tables (idempotent)."
    # The system checks run after the load, not before: before it, every trail step on an
    # entity names a record not loaded yet (tm.W021 on a first start, which no one can fix).
    requires_system_checks = ()

    @override
    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--checkout",
            type=Path,
            default=None,
            help="The checkout whose data/ records to load (default: TM_CHECKOUT).",
        )

    @override
    def handle(self, *args: Any, **options: Any) -> None:
        checkout: Path = options["checkout"] or Path(settings.TM_CHECKOUT)
        try:
            report = load_checkout(checkout)
        except RecordError as exc:
            raise CommandError(str(exc)) from exc
        except OSError as exc:
            raise CommandError(f"cannot read the records: {exc}") from exc
        removed = ", ".join(f"{n} {k}" for k, n in report.removed.items() if n) or "nothing"
        if report.absent:
            self.stdout.write(
                f"{checkout} has no {' or '.join(report.absent)}: "
                "those records are optional, and no entity of theirs is served"
            )
        self.stdout.write(
            f"loaded {report.patterns} patterns, {report.games} games, "
            f"{report.routines} routines, {report.instances} instances, "
            f"{report.lessons} lessons; {report.corrections_applied} corrections applied; "
            f"removed {removed}"
        )
        self.check()
