"""``manage.py tm_index_trails [--checkout PATH]``: rebuild the trail index.

From the files, with the corrections made in the admin over them (the trails as served).

Spec: TRAILS.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from typing_extensions import override

from tmsite.trails.index import current, rebuild


class Command(BaseCommand):
    """Rebuild the trail index; trail files that do not parse are named on stderr."""

    help = "Index notes/trails/*.json in the database (reads also rebuild it when files change)."

    @override
    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--checkout", type=Path, default=None, help="Default: TM_CHECKOUT.")

    @override
    def handle(self, *args: Any, **options: Any) -> None:
        checkout: Path | None = options["checkout"]
        steps = rebuild(checkout)
        view = current(checkout)
        self.stdout.write(f"indexed {len(view.trails)} trails, {steps} steps")
        for name, problem in view.problems.items():
            self.stderr.write(f"notes/trails/{name}.json does not parse: {problem}")
