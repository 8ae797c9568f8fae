"""``manage.py tm_trails export DIR [--all] [--checkout PATH]``: the corrected trails as files.

The admin keeps corrections of trails in the database, over the files in the served checkout
(never written there from the web). An operator who wants them committed exports them: each
corrected or added trail is written as ``DIR/<name>.json`` (``--all``: every trail served), in
the shape of a trail file, so copied to ``notes/trails/`` they read as the trails are served
now. Retired trails that still have a file are named on stderr: remove their files by hand.

Spec: OP4, TRAILS.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from typing_extensions import override

from tmsite.trails.corrections import export


class Command(BaseCommand):
    """Export the trails as corrected in the admin to files."""

    help = "Write the trails corrected in the admin as <name>.json files into a directory."

    @override
    def add_arguments(self, parser: CommandParser) -> None:
        commands = parser.add_subparsers(dest="command", required=True)
        out = commands.add_parser("export", help="Write the corrected trails into DIR.")
        out.add_argument("directory", type=Path, help="Where to write <name>.json files.")
        out.add_argument(
            "--all", action="store_true", help="Every trail served, not only the corrected."
        )
        out.add_argument("--checkout", type=Path, default=None, help="Default: TM_CHECKOUT.")

    @override
    def handle(self, *args: Any, **options: Any) -> None:
        directory: Path = options["directory"]
        done = export(directory, every=options["all"], checkout=options["checkout"])
        for name in done.written:
            self.stdout.write(f"wrote {directory / (name + '.json')}")
        self.stdout.write(f"exported {len(done.written)} trails")
        for name in done.retired:
            self.stderr.write(f"retired: remove notes/trails/{name}.json to match")
