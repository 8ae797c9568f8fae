"""``python manage.py tm_import_docs``: copy the docs the import manifest names into ``docs/``.

The manifest (``TM_IMPORTS_FILE``, default ``data/imports.json``) is the one source of truth:
this command performs the copies it lists, and the ``git`` mount reads the same file to link
each copy to its origin. Each origin is read through :mod:`tmsite.gitstore` (dulwich, no
subprocess) at the entry's ref or the repository's default, and written to the checkout only
inside ``docs/``, atomically, and only when its bytes differ.

Spec: GIT.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from typing_extensions import override

from tmsite import gitstore
from tmsite.mounts.git.imports import IMPORT_ROOT, Import, ManifestError, read_manifest
from tmsite.mounts.git.settings import read_settings


def _destination(checkout: Path, entry: Import) -> Path:
    """Where a copy goes, refused if any existing component would lead outside ``docs/``."""
    root = (checkout / IMPORT_ROOT).resolve()
    target = checkout.joinpath(*entry.to.split("/"))
    parent = Path(os.path.realpath(target.parent))
    if not parent.is_relative_to(root):
        raise CommandError(f"{entry.to}: its directory leads outside {IMPORT_ROOT}/")
    if target.is_symlink():
        raise CommandError(f"{entry.to}: is a symlink; imports never write through one")
    return parent / target.name


def _write(path: Path, data: bytes) -> bool:
    """Write ``data`` atomically; False when the file already holds exactly it."""
    if path.is_file() and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".import-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


class Command(BaseCommand):
    """Perform (or, with ``--check``, verify) every copy the import manifest lists."""

    help = (
        "Copy every doc the import manifest names from its neighbouring repository into the "
        "checkout's docs/ (through dulwich; only files whose bytes changed are written)."
    )

    @override
    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--check",
            action="store_true",
            help="write nothing; exit non-zero when a copy differs from its origin",
        )

    @override
    def handle(self, *args: Any, **options: Any) -> None:
        conf = read_settings()
        checkout = conf.checkout
        if conf.imports_file is None:
            raise CommandError("TM_IMPORTS_FILE is empty: there is no import manifest")
        try:
            manifest = read_manifest(conf.imports_file)
        except ManifestError as exc:
            raise CommandError(str(exc)) from exc
        repos = conf.neighbours
        default_refs = conf.default_refs
        stale: list[str] = []
        for entry in manifest.entries:
            if entry.repo not in repos:
                raise CommandError(f"{entry.to}: {entry.repo!r} is not in TM_GIT_REPOS")
            try:
                with gitstore.open_repo(repos[entry.repo]) as repo:
                    found = gitstore.resolve(repo, entry.ref, default_refs.get(entry.repo))
                    node = gitstore.lookup(repo, found.commit, entry.path)
                    if node.kind != "blob":
                        raise CommandError(f"{entry.repo}:{entry.path} is a {node.kind}")
                    data = gitstore.read_blob(repo, node.sha)
            except gitstore.GitStoreError as exc:
                raise CommandError(f"{entry.to}: {entry.repo}:{entry.path}: {exc}") from exc
            destination = _destination(checkout, entry)
            origin = f"{entry.repo}:{entry.path}@{found.commit[:12]}"
            if options["check"]:
                current = destination.read_bytes() if destination.is_file() else None
                if current != data:
                    stale.append(entry.to)
                    self.stdout.write(f"differs  {entry.to} <- {origin}")
                continue
            changed = _write(destination, data)
            self.stdout.write(f"{'copied ' if changed else 'same   '}  {entry.to} <- {origin}")
        if stale:
            raise CommandError(f"{len(stale)} imported doc(s) differ from their origin")
