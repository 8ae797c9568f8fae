"""Trail files and their index in the database.

A trail file ``notes/trails/<name>.json`` is::

    {"title": "...", "description": "...",
     "steps": [{"uri": "tm://<host>/...", "note": "..."}, ...]}

The files are the operator's, and a trail is read from its file — unless a maintainer
corrected it in the admin: corrections are kept in the database
(:class:`~tmsite.trails.models.TrailCorrection`, never written into the checkout), and the
latest correction of a trail wins over its file. A correction may also add a trail that has
no file, retire one (it is then not served, file or not), or give a trail back to its file.
:func:`current` is the trails as served — the files with the corrections over them — and
every reader goes through it: the trail mount's reads, listings and dates, the reverse index,
the start-up checks. A correction is validated by the same :func:`parse_trail` as a file.

The database also holds the reverse index (:class:`~tmsite.entities.models.TrailStep`, keyed by
each step's target) so that the read of any step can name every trail it is on, and one row per
trail known for the admin (:class:`~tmsite.trails.models.Trail`). The index remembers each
file's size and modification time (:class:`~tmsite.entities.models.TrailFile`) and the
corrections' version it was built at (:class:`~tmsite.trails.models.TrailsVersion`, written
afresh by every correction); :func:`current` compares them with the directory and the
database and rebuilds when anything changed, so adding, editing or removing a trail file, or
correcting a trail on any machine, is seen on the next read. ``manage.py tm_index_trails``
rebuilds it by hand; ``manage.py tm_trails export DIR`` writes the corrected trails as files.

A step's *target* is its address without parameters except ``at`` — the identity the link walk
compares — so reading ``git/tmsite/docs/x.md?as=log`` and ``git/tmsite/docs/x.md`` both find
a trail whose step names either.

Spec: TRAILS.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import OuterRef, Subquery

from tmsite import version_rows
from tmsite.core.errors import Refusal
from tmsite.core.uri import TmUri, parse
from tmsite.entities import models as m
from tmsite.trails import models as tm

#: Where the trails live in the checkout.
TRAILS_DIR = ("notes", "trails")
NAME_RE = re.compile(r"[a-z0-9][a-z0-9-]{0,63}", re.ASCII)
MAX_TRAIL_BYTES = 256 * 1024
MAX_STEPS = 200
MAX_STEP_URI = 1000


class TrailError(ValueError):
    """A trail file that does not parse: which file and what is wrong."""

    def __init__(self, name: str, message: str) -> None:
        self.name = name
        self.message = message
        super().__init__(f"notes/trails/{name}.json: {message}")


@dataclass(frozen=True)
class Step:
    """One step: a canonical tm:// address and why it is there."""

    position: int
    uri: str
    note: str

    @property
    def target(self) -> str:
        """The identity the step is indexed under (see :func:`target_of`)."""
        return target_of(parse(self.uri))


@dataclass(frozen=True)
class Trail:
    """One parsed trail file: its name (the file's stem), title, description and steps."""

    name: str
    title: str
    description: str
    steps: tuple[Step, ...]


def target_of(uri: TmUri) -> str:
    """The identity a step is indexed under: the address and its part, at its revision."""
    return str(uri.keeping("at", "pointer", "lines", "range"))


def trails_dir(checkout: Path | None = None) -> Path:
    """``notes/trails/`` of ``checkout`` (by default the served checkout)."""
    return Path(checkout or settings.TM_CHECKOUT).joinpath(*TRAILS_DIR)


def scan(checkout: Path | None = None) -> dict[str, tuple[int, int]]:
    """``{name: (mtime_ns, size)}`` of every trail file (regular ``<name>.json`` files only)."""
    found: dict[str, tuple[int, int]] = {}
    try:
        entries = list(os.scandir(trails_dir(checkout)))
    except OSError:
        return found
    for entry in entries:
        name = entry.name.removesuffix(".json")
        if not entry.name.endswith(".json") or not NAME_RE.fullmatch(name):
            continue
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        found[name] = (info.st_mtime_ns, info.st_size)
    return dict(sorted(found.items()))


def parse_trail(name: str, content: bytes) -> Trail:
    """Validate one trail file's content.

    Raises:
        TrailError: naming the field that is wrong.
    """
    if len(content) > MAX_TRAIL_BYTES:
        raise TrailError(name, f"larger than {MAX_TRAIL_BYTES} bytes")
    try:
        data = json.loads(content.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise TrailError(name, f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise TrailError(name, "must be an object with title, description and steps")
    texts = {field: _text(name, data, field) for field in ("title", "description")}
    raw_steps = data.get("steps")
    if not isinstance(raw_steps, list) or not raw_steps:
        raise TrailError(name, "steps must be a non-empty array")
    if len(raw_steps) > MAX_STEPS:
        raise TrailError(name, f"at most {MAX_STEPS} steps")
    steps = [_step(name, index, raw) for index, raw in enumerate(raw_steps)]
    return Trail(name, texts["title"], texts["description"], tuple(steps))


def _text(name: str, data: dict[str, Any], field: str) -> str:
    """A trail's ``title`` or ``description``: a non-blank string of at most 2000 characters.

    Raises:
        TrailError: it is missing, blank, too long or not a string.
    """
    value = data.get(field)
    if not isinstance(value, str) or not value.strip() or len(value) > 2000:
        raise TrailError(name, f"{field} must be a non-empty string")
    return value


def _step(name: str, index: int, raw: Any) -> Step:
    """Step ``index`` (0-based) of a trail, its address made canonical.

    Raises:
        TrailError: it is not an object with a non-blank note and a ``tm://`` address that
            parses and names a host.
    """
    where = f"steps[{index}]"
    if not isinstance(raw, dict):
        raise TrailError(name, f"{where} must be an object with uri and note")
    uri_text, note = raw.get("uri"), raw.get("note")
    if not isinstance(note, str) or not note.strip():
        raise TrailError(name, f"{where}.note must be a non-empty string")
    if not isinstance(uri_text, str) or len(uri_text) > MAX_STEP_URI:
        raise TrailError(name, f"{where}.uri must be a tm:// address")
    try:
        uri = parse(uri_text)
    except Refusal as exc:
        raise TrailError(name, f"{where}.uri: {exc.message}") from None
    if uri.is_hosts:
        raise TrailError(name, f"{where}.uri must name a host")
    return Step(index + 1, str(uri), note)


def read_trail(name: str, checkout: Path | None = None) -> Trail:
    """Read and parse ``notes/trails/<name>.json``.

    Raises:
        FileNotFoundError: there is no such trail.
        TrailError: it does not parse.
    """
    if not NAME_RE.fullmatch(name):
        raise FileNotFoundError(name)
    path = trails_dir(checkout) / f"{name}.json"
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as handle:
        return parse_trail(name, handle.read(MAX_TRAIL_BYTES + 1))


def read_all(checkout: Path | None = None) -> tuple[list[Trail], dict[str, str]]:
    """Every trail that parses, and ``{name: problem}`` for those that do not."""
    trails: list[Trail] = []
    problems: dict[str, str] = {}
    for name in scan(checkout):
        trail, problem = _read_file(name, checkout)
        if trail is None:
            problems[name] = problem
        else:
            trails.append(trail)
    return trails, problems


def as_json(trail: Trail) -> dict[str, Any]:
    """A trail as its file writes it: ``{title, description, steps: [{uri, note}, …]}``."""
    return {
        "title": trail.title,
        "description": trail.description,
        "steps": [{"uri": s.uri, "note": s.note} for s in trail.steps],
    }


def file_text(trail: Trail) -> str:
    """The trail as a file's text (what ``tm_trails export`` writes); it parses back the same."""
    return json.dumps(as_json(trail), indent=2, ensure_ascii=False) + "\n"


def from_json(name: str, value: Any) -> Trail:
    """A trail from a correction's value, by the same rules (and limits) as a file.

    Raises:
        TrailError: it does not parse as a trail file would not.
    """
    return parse_trail(name, json.dumps(value, ensure_ascii=False).encode())


# --- the trails as served: the files, with the corrections over them ----------------------


@dataclass(frozen=True)
class Known:
    """One trail known, from its file or from a correction, and what is served of it.

    ``state``: ``file`` (served from its file), ``corrected`` (a correction over its file),
    ``added`` (a correction, no file), ``retired`` (not served), ``broken`` (its file does not
    parse and no correction is over it: not served).
    """

    name: str
    state: str
    #: What is served; None when retired or broken.
    trail: Trail | None
    #: What the admin shows: the served trail, or a retired one as it was.
    shown: Trail | None
    #: What its file says, if it has one that parses.
    file: Trail | None = None
    #: Why its file does not parse ("" when it does, or there is no file).
    problem: str = ""
    has_file: bool = False
    file_modified: datetime | None = None
    corrected_at: datetime | None = None
    corrected_by: str = ""

    @property
    def modified(self) -> datetime | None:
        """When what is served of it last changed: the later of its file and its correction."""
        times = [t for t in (self.file_modified, self.corrected_at) if t is not None]
        return max(times) if times else None

    @property
    def corrected(self) -> bool:
        """Whether a correction, not its file, says what is served (or that it is not)."""
        return self.state in {"corrected", "added", "retired"}


@dataclass(frozen=True)
class View:
    """The trails as served at one signature (the files' and the corrections' version)."""

    signature: tuple[dict[str, tuple[int, int]], str | None]
    known: dict[str, Known]
    by_target: dict[str, list[tuple[str, int, str]]] = field(default_factory=dict)

    @property
    def trails(self) -> list[Trail]:
        """Every trail served, by name."""
        return [k.trail for k in self.known.values() if k.trail is not None]

    @property
    def problems(self) -> dict[str, str]:
        """``{name: problem}`` of the trail files that do not parse, no correction over them."""
        return {k.name: k.problem for k in self.known.values() if k.state == "broken"}

    def served(self, name: str) -> Known | None:
        """The trail ``name`` if it is served (None: unknown, retired or broken)."""
        known = self.known.get(name)
        return known if known is not None and known.trail is not None else None


@dataclass(frozen=True)
class Latest:
    """The latest correction of one trail."""

    action: str
    value: Any
    at: datetime
    by: str


def version() -> tuple[str, str] | None:
    """``(version, indexed)`` of the corrections, one query; None without the tables."""
    row = version_rows.read(tm.TrailsVersion, ("version", "indexed"))
    return None if row is None else (row[0], row[1])


def latest_corrections() -> dict[str, Latest]:
    """The latest correction of every trail corrected, by trail name (one query)."""
    newest = tm.TrailCorrection.objects.filter(trail=OuterRef("trail")).order_by(
        "-corrected_at", "-id"
    )
    rows = tm.TrailCorrection.objects.filter(id=Subquery(newest.values("id")[:1])).values_list(
        "trail", "action", "value", "corrected_at", "corrected_by_name"
    )
    return {trail: Latest(action, value, at, by) for trail, action, value, at, by in rows}


def _file_time(mtime_ns: int) -> datetime:
    return datetime.fromtimestamp(mtime_ns / 1e9, tz=UTC)


def overlay(
    files: dict[str, tuple[int, int]], corrections: dict[str, Latest], checkout: Path | None
) -> dict[str, Known]:
    """Each trail known: its file (``files``, as :func:`scan` found them) under its correction."""
    known: dict[str, Known] = {}
    for name in sorted({*files, *corrections}):
        file, problem = _read_file(name, checkout) if name in files else (None, "")
        dated: dict[str, Any] = {
            "file": file,
            "has_file": name in files,
            "file_modified": _file_time(files[name][0]) if name in files else None,
            "problem": problem,
        }
        latest = corrections.get(name)
        if latest is not None:  # given back to its file, too: what is served changed then
            dated.update(corrected_at=latest.at, corrected_by=latest.by)
        if latest is not None and latest.action != "revert":
            known[name] = _corrected(name, latest, dated)
        elif file is not None:
            known[name] = Known(name, "file", file, file, **dated)
        elif name in files:
            known[name] = Known(name, "broken", None, None, **dated)
    return known


def _read_file(name: str, checkout: Path | None) -> tuple[Trail | None, str]:
    """A trail file's trail, or why it does not parse."""
    try:
        return read_trail(name, checkout), ""
    except TrailError as exc:
        return None, exc.message
    except OSError as exc:
        return None, f"cannot be read ({exc.__class__.__name__})"


def _corrected(name: str, latest: Latest, dated: dict[str, Any]) -> Known:
    """A trail whose latest correction says what is served of it (or that nothing is)."""
    try:
        value = from_json(name, latest.value) if latest.value is not None else None
    except TrailError:
        value = None  # saved through the same rules: a row edited by hand
    if latest.action == "retire" or value is None:
        return Known(name, "retired", None, value or dated["file"], **dated)
    state = "corrected" if dated["has_file"] else "added"
    return Known(name, state, value, value, **dated)


# --- the database index ---------------------------------------------------------------------


def _write_index(files: dict[str, tuple[int, int]], stamp: str, known: dict[str, Known]) -> int:
    """Make the index hold exactly ``known`` (built from ``files`` at ``stamp``); steps indexed."""
    with transaction.atomic():
        m.TrailStep.objects.all().delete()
        m.TrailFile.objects.all().delete()
        tm.Trail.objects.all().delete()
        m.TrailFile.objects.bulk_create(
            m.TrailFile(
                name=name,
                title=(k.file.title if (k := known.get(name)) and k.file else "")[:200],
                mtime_ns=mt,
                size=size,
            )
            for name, (mt, size) in files.items()
        )
        tm.Trail.objects.bulk_create(_row(k) for k in known.values())
        steps = [
            m.TrailStep(trail=k.name, position=s.position, uri=s.uri, target=s.target, note=s.note)
            for k in known.values()
            if k.trail is not None
            for s in k.trail.steps
        ]
        m.TrailStep.objects.bulk_create(steps)
        if not tm.TrailsVersion.objects.filter(pk=1).update(indexed=stamp):
            tm.TrailsVersion.objects.create(pk=1, version=stamp, indexed=stamp)
    return len(steps)


def _row(known: Known) -> tm.Trail:
    shown = known.shown
    return tm.Trail(
        name=known.name,
        title=shown.title if shown else "",
        description=shown.description if shown else "",
        steps=as_json(shown)["steps"] if shown else [],
        step_count=len(shown.steps) if shown else 0,
        state=known.state,
        has_file=known.has_file,
        problem=known.problem,
        file_modified=known.file_modified,
        corrected_at=known.corrected_at,
        corrected_by_name=known.corrected_by[:150],
    )


def rebuild(checkout: Path | None = None) -> int:
    """Make the index hold exactly the trails as served now; the number of steps indexed."""
    stamp = version() or ("", "")
    files = scan(checkout)
    return _write_index(files, stamp[0], overlay(files, latest_corrections(), checkout))


def _fresh(files: dict[str, tuple[int, int]], stamp: tuple[str, str]) -> bool:
    """Whether the index was built from ``files`` at the corrections' version (one query)."""
    indexed = {
        name: (mtime, size)
        for name, mtime, size in m.TrailFile.objects.values_list("name", "mtime_ns", "size")
    }
    return stamp[0] == stamp[1] and indexed == files


#: The trails as this process last read them, keyed by the trails directory and valid while
#: the files' signatures and the corrections' version are as they were: every read asks for
#: them, and the answer only changes when a trail file or a correction does.
_memo: dict[str, View] = {}
_memo_lock = threading.Lock()
#: How long a process trusts the corrections' version it last read before asking again: a
#: correction saved by this process is seen at once (:func:`forget`), one saved on another
#: machine within this many seconds. Without it every read of any address would cost a query.
VERSION_RECHECK_SECONDS = 1.0
_version_read_at: dict[str, float] = {}
_forgotten = 0
_clock = time.monotonic


def forget() -> None:
    """Drop what this process remembers of the trails (a correction was saved here; tests)."""
    global _forgotten
    with _memo_lock:
        _memo.clear()
        _version_read_at.clear()
        _forgotten += 1


def forgotten() -> int:
    """How many times this process dropped what it knew (an answer kept before is stale)."""
    return _forgotten


def current(checkout: Path | None = None) -> View:
    """The trails as served: the files (a stat each) under the latest corrections.

    A stat of each file on every call, and a query for the corrections' version
    (:class:`~tmsite.trails.models.TrailsVersion`) at most once in ``VERSION_RECHECK_SECONDS``;
    while it and the files are unchanged the process answers from what it read last. When
    either changed — a file edited, a correction saved on any machine — the index is brought
    up to date and read again, once. A database without the tables (not migrated
    yet) serves the files as they are, and no step names its trails.
    """
    where = str(trails_dir(checkout))
    files = scan(checkout)
    now = _clock()
    with _memo_lock:
        known = _memo.get(where)
        trusted = now - _version_read_at.get(where, -VERSION_RECHECK_SECONDS) < (
            VERSION_RECHECK_SECONDS
        )
    if known is not None and trusted and known.signature[0] == files:
        return known
    stamp = version()
    with _memo_lock:
        _version_read_at[where] = now
    if stamp is None:
        return View((files, None), overlay(files, {}, checkout))
    if known is not None and known.signature == (files, stamp[0]):
        return known
    try:
        view = _read(files, stamp, checkout)
    except DatabaseError:
        return View((files, None), overlay(files, {}, checkout))
    with _memo_lock:
        _memo[where] = view
    return view


def _read(files: dict[str, tuple[int, int]], stamp: tuple[str, str], checkout: Path | None) -> View:
    """The view at ``stamp``, the index rebuilt first if it is not of ``files`` at ``stamp``."""
    # Read after the version: what is read is at least as new as the version it is kept under.
    trails = overlay(files, latest_corrections(), checkout)
    if not _fresh(files, stamp):
        with contextlib.suppress(IntegrityError):  # another worker rebuilt it just now
            _write_index(files, stamp[0], trails)
    by_target: dict[str, list[tuple[str, int, str]]] = {}
    rows = m.TrailStep.objects.order_by("trail", "position")
    for target, trail, position, note in rows.values_list("target", "trail", "position", "note"):
        by_target.setdefault(target, []).append((trail, position, note))
    return View((files, stamp[0]), trails, by_target)


def trails_of(uri: TmUri, checkout: Path | None = None) -> list[tuple[str, int, str]]:
    """``(trail, position, note)`` for every trail step, as served, whose target is ``uri``'s."""
    key = target_of(uri)
    if len(key) > MAX_STEP_URI:
        return []
    return list(current(checkout).by_target.get(key, []))
