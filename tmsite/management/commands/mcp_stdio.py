"""``python manage.py mcp_stdio``: serve MCP over newline-delimited JSON on stdin/stdout.

Subscriptions of both eras are held (:mod:`tmsite.streams.stdio_stream`): their
notifications are lines on stdout too.

Spec: T11, SUB1, SUB2.
"""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand
from typing_extensions import override

from tmsite.mcp.stdio import serve
from tmsite.streams.stdio_stream import StdioSubscriptions


class Command(BaseCommand):
    """The stdio transport as a command: serves until stdin closes, exits with its status."""

    help = (
        "Serve the MCP methods over stdio: one JSON-RPC message per line on stdin, one response "
        "or notification per line on stdout, logs on stderr; exits 0 when stdin closes."
    )

    @override
    def handle(self, *args: Any, **options: Any) -> None:
        status = serve(sys.stdin.buffer, sys.stdout.buffer, StdioSubscriptions)
        if status:
            sys.exit(status)
