"""Maintainers' corrections of trails, each kept with who and when; and their export as files.

Used by the admin and by ``manage.py tm_trails``, so both keep the same history. Nothing here
writes into the checkout: a correction is a :class:`~tmsite.trails.models.TrailCorrection` row,
served over the trail's file (:func:`tmsite.trails.index.current`); :func:`export` writes the
corrected trails as files into a directory the operator names.

Spec: OP4, TRAILS.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import transaction

from tmsite.trails import index
from tmsite.trails.models import TrailCorrection

#: What a correction may change, in the order ``changed`` names them.
FIELDS = ("title", "description", "steps")


def _changes(before: index.Trail | None, after: index.Trail | None) -> list[str]:
    if before is None or after is None:
        return list(FIELDS) if before is not after else []
    old, new = index.as_json(before), index.as_json(after)
    return [f for f in FIELDS if old[f] != new[f]]


def _keep(
    name: str,
    action: str,
    changed: list[str],
    value: index.Trail | None,
    known: index.Known | None,
    user: Any,
    by: str,
    checkout: Path | None,
) -> TrailCorrection:
    """Write one correction row; the index is brought up to date at once."""
    file = None
    if known is not None and known.has_file and not known.problem:
        file = _file_json(name, checkout)
    with transaction.atomic():
        row = TrailCorrection.objects.create(
            trail=name,
            action=action,
            changed=", ".join(changed),
            value=index.as_json(value) if value is not None else None,
            file_value=file,
            corrected_by=user,
            corrected_by_name=by,
        )
    index.current(checkout)
    return row


def _file_json(name: str, checkout: Path | None) -> dict[str, Any] | None:
    try:
        return index.as_json(index.read_trail(name, checkout))
    except (index.TrailError, OSError):
        return None


def correct(
    name: str,
    value: Any,
    user: Any,
    by: str,
    *,
    retired: bool = False,
    checkout: Path | None = None,
) -> TrailCorrection | None:
    """Correct (or add) the trail ``name`` to ``value`` (``{title, description, steps}``).

    ``retired`` retires it instead (``value``, if it parses, is kept as what it was). None when
    nothing would change.

    Raises:
        TrailError: ``value`` does not parse as a trail file would not (not when retiring), or
            ``name`` is not a trail name.
    """
    if not index.NAME_RE.fullmatch(name):
        raise index.TrailError(name, "the name must be a-z, 0-9 and -, at most 64 characters")
    known = index.current(checkout).known.get(name)
    if retired:
        try:
            trail = index.from_json(name, value) if value is not None else None
        except index.TrailError:
            trail = None
        if known is not None and known.state == "retired":
            return None
        shown = trail or (known.shown if known is not None else None)
        return _keep(name, "retire", ["retired"], shown, known, user, by, checkout)
    trail = index.from_json(name, value)
    if known is None:
        return _keep(name, "add", list(FIELDS), trail, known, user, by, checkout)
    changed = _changes(known.trail, trail)
    if known.state == "retired":
        changed = ["retired", *_changes(known.shown, trail)]
    if not changed:
        return None
    return _keep(name, "correct", changed, trail, known, user, by, checkout)


def retire(name: str, user: Any, by: str, checkout: Path | None = None) -> TrailCorrection | None:
    """Retire the trail ``name``: not served, file or not (None: it is not served now)."""
    known = index.current(checkout).served(name)
    if known is None:
        return None
    return _keep(name, "retire", ["retired"], known.trail, known, user, by, checkout)


def revert(name: str, user: Any, by: str, checkout: Path | None = None) -> TrailCorrection | None:
    """Give the trail ``name`` back to its file (None: it has no file, or is not corrected)."""
    known = index.current(checkout).known.get(name)
    if known is None or not known.has_file or not known.corrected:
        return None
    after = _file_json(name, checkout)
    before = index.as_json(known.shown) if known.shown is not None else None
    changed = [f for f in FIELDS if before is None or after is None or before[f] != after[f]]
    if known.state == "retired":
        changed = ["retired", *changed]
    return _keep(name, "revert", changed, None, known, user, by, checkout)


@dataclass(frozen=True)
class Exported:
    """What ``export`` did: the files written, and the trails retired (files to remove)."""

    written: list[str]
    retired: list[str]


def export(directory: Path, *, every: bool = False, checkout: Path | None = None) -> Exported:
    """Write each corrected or added trail as ``<directory>/<name>.json`` (``every``: all served).

    The files are what a trail file holds (:func:`tmsite.trails.index.file_text`), so copied to
    ``notes/trails/`` they read as the trails are served now. Retired trails that still have a
    file are named, not deleted: the files are the operator's.
    """
    view = index.current(checkout)
    directory.mkdir(parents=True, exist_ok=True)
    written: list[str] = []
    retired: list[str] = []
    for known in view.known.values():
        if known.state == "retired" and known.has_file:
            retired.append(known.name)
        if known.trail is None or not (every or known.state in {"corrected", "added"}):
            continue
        path = directory / f"{known.name}.json"
        path.write_text(index.file_text(known.trail), encoding="utf-8")
        written.append(known.name)
    return Exported(written, retired)
