"""``manage.py tm_registry server-json [--output FILE]``: the box's entry for the MCP Registry.

Writes ``server.json`` (the registry's schema ``2025-12-11``) for ``mcp-publisher publish``:
one ``streamable-http`` remote at ``TM_PUBLIC_URL`` + ``/api/mcp``, with the name, title,
description, version, icons and website the box gives on ``initialize``. Run it with the
settings the public box runs with (``TM_PUBLIC_URL`` above all).

Spec: OBS4.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from typing_extensions import override

from tmsite.site import discovery


class Command(BaseCommand):
    """Write the box's discovery documents."""

    help = "server-json: write the box's server.json for the MCP Registry (stdout, or --output)."

    @override
    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("document", choices=["server-json"])
        parser.add_argument("--output", type=Path, default=None, help="Default: stdout.")

    @override
    def handle(self, *args: Any, **options: Any) -> None:
        text = discovery.server_json_text()
        output: Path | None = options["output"]
        if output is None:
            self.stdout.write(text, ending="")
        else:
            output.write_text(text, encoding="utf-8")
            self.stderr.write(f"wrote {output}")
