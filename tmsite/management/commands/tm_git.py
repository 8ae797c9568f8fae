"""``manage.py tm_git maintain [--repo NAME] [--no-filters]``: write the commit-graphs.

History (``?as=log``, ``?as=blame``, ``?at=<date>``) reads a repository's commit-graph where it
has one: parents, dates and root trees without inflating a commit, and changed-path Bloom
filters that pass over the commits that left a path alone. ``maintain`` writes that file —
every commit reachable from a ref, with the filters — for each served repository (the
checkout and ``TM_GIT_REPOS``), or the one ``--repo`` names, the same file
``git commit-graph write --reachable --changed-paths`` writes. Run it after the repository
gains commits (``deploy/`` says when); a commit newer than the graph is read the slow way until
then, never wrongly. Once there is a graph, ``maintain`` writes only the commits it lacks, as a
new layer of a split chain (``git commit-graph write --split``'s format; git reads and extends
it), and the whole graph again as one file when the new commits are more than half the top
layer's, so a chain stays short. ``--whole`` writes the one file now, superseding a chain, as
git's own whole write does. Each pack is also given a table of its objects' sizes
(``objects/info/sizes/``), which a listing reads in place of each blob's pack entry.

Spec: ANY2.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from typing_extensions import override

from tmsite import gitstore
from tmsite.gitstore.graphwrite import write_commit_graph, write_size_tables
from tmsite.mounts.git.settings import is_repository, read_settings


class Command(BaseCommand):
    """Maintain the served git repositories."""

    help = "Write each served repository's commit-graph with changed-path Bloom filters."

    @override
    def add_arguments(self, parser: CommandParser) -> None:
        commands = parser.add_subparsers(dest="command", required=True)
        maintain = commands.add_parser(
            "maintain", help="Write objects/info/commit-graph, with Bloom filters."
        )
        maintain.add_argument("--repo", default=None, help="Only this served repository.")
        maintain.add_argument(
            "--no-filters", action="store_true", help="Leave the Bloom filters out."
        )
        maintain.add_argument(
            "--whole", action="store_true", help="Write every commit into one file."
        )

    @override
    def handle(self, *args: Any, **options: Any) -> None:
        served = _served()
        wanted = options["repo"]
        if wanted is not None:
            if wanted not in served:
                raise CommandError(
                    f"no served repository is called {wanted!r}; served: {', '.join(served)}"
                )
            served = {wanted: served[wanted]}
        for name, path in served.items():
            started = time.perf_counter()
            try:
                with gitstore.open_repo(path) as repo:
                    done = write_commit_graph(
                        repo, filters=not options["no_filters"], whole=options["whole"]
                    )
                    tables = write_size_tables(repo)
            except gitstore.GitError as exc:
                raise CommandError(f"{name}: {exc}") from exc
            if done.path is None:
                self.stdout.write(f"{name}: the commit-graph holds every commit already")
            else:
                self.stdout.write(
                    f"{name}: wrote {done.path} — {done.commits} commits, {done.filters} Bloom "
                    f"filters ({done.too_many} marked as changing too many paths) in "
                    f"{time.perf_counter() - started:.1f} s"
                )
            if tables:
                self.stdout.write(f"{name}: wrote the size table of {tables} pack(s)")


def _served() -> dict[str, str]:
    """Served repository name → path: the checkout's (when it is one) and the neighbours."""
    settings = read_settings()
    out: dict[str, str] = {}
    if settings.checkout_name is not None and is_repository(settings.checkout):
        out[settings.checkout_name] = str(settings.checkout)
    out.update({name: str(path) for name, path in settings.neighbours.items()})
    return out
