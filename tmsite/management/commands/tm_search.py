"""``manage.py tm_search reindex|sync|status``: the search index of the served mounts.

``reindex`` forgets the index and reads every document again; ``sync`` rewrites only what
changed (the serving process's keeper's full walk, at its start and every
``TM_SEARCH_FULL_EVERY`` seconds); ``status`` shows documents and passages per mount, the
engine, and when the last change was applied.

Spec: SRCH1.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from typing_extensions import override

from tmsite.mounts.registry import namespace
from tmsite.search import index


class Command(BaseCommand):
    """Build, bring up to date or describe the search index."""

    help = "reindex: build the search index again; sync: apply what changed; status: what it holds."

    @override
    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["reindex", "sync", "status"])

    @override
    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        if action == "status":
            self.stdout.write(json.dumps(index.status(), indent=1))
            return
        mounts = namespace().mounts
        if action == "reindex":
            index.clear()
        done, seconds = index.timed(index.sync, mounts, full=action == "reindex")
        if done.skipped:
            self.stderr.write("another machine is writing the index; nothing was applied")
        self.stdout.write(
            f"{action}: {done.written} documents written, {done.dropped} dropped, "
            f"{done.unchanged} unchanged in {seconds:.2f} s"
        )
