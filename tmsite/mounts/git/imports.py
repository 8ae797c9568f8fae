"""The import manifest: which docs of the checkout were copied from which neighbouring file.

One declarative record in the checkout (``data/imports.json`` by default, setting
``TM_IMPORTS_FILE``) is the single source of truth for both sides: ``manage.py tm_import_docs``
performs the copies it lists, and the ``git`` mount reads it to link each copy
``tm:generated-by`` its origin and the origin ``tm:generates`` the copy. Its shape::

    {
      "about": "free text",
      "imports": [
        {"repo": "nes-bench", "path": "docs/pile.md", "to": "docs/nes/pile.md", "ref": "main"}
      ]
    }

``repo`` is a served neighbouring repository, ``path`` the file in it, ``to`` where the copy
lives in the checkout (under ``docs/``), ``ref`` (optional) the branch, tag or commit copied
from — the repository's default when absent. Every path is checked as the mounts check
client paths: plain segments only, nothing the deny-list refuses.

Spec: GIT, LK2.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from tmsite import gitstore
from tmsite.core.paths import denied_name

#: The checkout directory imported copies must live under.
IMPORT_ROOT = "docs"
_KEYS = frozenset({"repo", "path", "to", "ref"})
_REQUIRED = ("repo", "path", "to")


class ManifestError(ValueError):
    """The manifest cannot be used; the message names the file and the entry."""


@dataclass(frozen=True)
class Import:
    """One imported doc.

    Attributes:
        repo: The neighbouring repository's served name.
        path: The origin file's path in that repository.
        to: The copy's path in the checkout (``docs/…``).
        ref: The ref copied from, or None for the repository's default.
    """

    repo: str
    path: str
    to: str
    ref: str | None = None


@dataclass(frozen=True)
class Manifest:
    """The parsed manifest, indexed both ways."""

    entries: tuple[Import, ...] = ()
    by_copy: dict[str, Import] = field(default_factory=dict)
    by_origin: dict[tuple[str, str], tuple[Import, ...]] = field(default_factory=dict)


EMPTY = Manifest()


def _checked_path(source: str, index: int, key: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ManifestError(f"{source}: imports[{index}].{key} must be a non-empty string")
    try:
        parts = gitstore.normalise(value)
    except gitstore.GitStoreError as exc:
        raise ManifestError(f"{source}: imports[{index}].{key} {value!r}: {exc}") from exc
    if not parts or value.endswith("/"):
        raise ManifestError(f"{source}: imports[{index}].{key} must name a file, not {value!r}")
    if any(denied_name(part) for part in parts):
        raise ManifestError(f"{source}: imports[{index}].{key} {value!r} names a denied file")
    return "/".join(parts)


def _checked_entry(source: str, index: int, item: object) -> Import:
    """Entry ``index`` of the manifest, checked alone: its keys, then each value in turn."""
    if not isinstance(item, dict):
        raise ManifestError(f"{source}: imports[{index}] must be an object")
    unknown = sorted(set(item) - _KEYS)
    missing = [key for key in _REQUIRED if key not in item]
    if unknown or missing:
        raise ManifestError(
            f"{source}: imports[{index}] takes repo, path, to and optionally ref"
            f" (unknown: {unknown}, missing: {missing})"
        )
    repo = item["repo"]
    if not isinstance(repo, str) or not repo:
        raise ManifestError(f"{source}: imports[{index}].repo must be a non-empty string")
    path = _checked_path(source, index, "path", item["path"])
    to = _checked_path(source, index, "to", item["to"])
    if to.split("/", 1)[0] != IMPORT_ROOT or "/" not in to:
        raise ManifestError(f"{source}: imports[{index}].to must lie under {IMPORT_ROOT}/")
    return Import(repo, path, to, _checked_ref(source, index, item.get("ref")))


def _checked_ref(source: str, index: int, ref: object) -> str | None:
    """An entry's ``ref``: absent, or a string of a ref's shape."""
    if ref is None:
        return None
    if not isinstance(ref, str):
        raise ManifestError(f"{source}: imports[{index}].ref must be a string")
    try:
        gitstore.validate_ref(ref)
    except gitstore.BadRef as exc:
        raise ManifestError(f"{source}: imports[{index}].ref: {exc.why}") from exc
    return ref


def parse_manifest(data: object, source: str) -> Manifest:
    """Check and index a manifest already parsed from JSON.

    Raises:
        ManifestError: naming ``source`` and the entry at fault.
    """
    if not isinstance(data, dict) or not isinstance(data.get("imports"), list):
        raise ManifestError(f"{source}: expected an object with an 'imports' list")
    entries: list[Import] = []
    by_copy: dict[str, Import] = {}
    by_origin: dict[tuple[str, str], list[Import]] = {}
    for index, item in enumerate(data["imports"]):
        entry = _checked_entry(source, index, item)
        if entry.to in by_copy:
            raise ManifestError(f"{source}: imports[{index}].to {entry.to!r} is imported twice")
        entries.append(entry)
        by_copy[entry.to] = entry
        by_origin.setdefault((entry.repo, entry.path), []).append(entry)
    return Manifest(
        tuple(entries), by_copy, {key: tuple(value) for key, value in by_origin.items()}
    )


def read_manifest(path: Path) -> Manifest:
    """Read and check the manifest file; a missing file is an empty manifest.

    Raises:
        ManifestError: it cannot be read, is not JSON, or is not a valid manifest.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return EMPTY
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(f"{path.name}: cannot be read ({exc.__class__.__name__})") from exc
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ManifestError(f"{path.name}: not JSON ({exc})") from exc
    return parse_manifest(data, path.name)


class ManifestCache:
    """The manifest of one file, re-read when the file changes (by size and mtime)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._value: Manifest = EMPTY

    def get(self) -> Manifest:
        """The current manifest, read again when the file changes.

        An unreadable or invalid one counts as empty (a system check reports it at start-up).
        """
        if self.path is None:
            return EMPTY
        try:
            info = os.stat(self.path)
            stamp = (info.st_mtime_ns, info.st_size)
        except OSError:
            return EMPTY
        with self._lock:
            if stamp != self._stamp:
                try:
                    self._value = read_manifest(self.path)
                except ManifestError:
                    self._value = EMPTY
                self._stamp = stamp
            return self._value
