"""Trail files and their index in the database.

A trail file ``notes/trails/<name>.json`` is::

    {"title": "...", "description": "...",
     "steps": [{"uri": "tm://<host>/...", "note": "..."}, ...]}

The files are the truth: a trail is read from its file. The database holds the reverse index
(:class:`~tmsite.entities.models.TrailStep`, keyed by each step's target) so that the read of any
step can name every trail it is on with one query. The index remembers each file's size and
modification time (:class:`~tmsite.entities.models.TrailFile`); :func:`ensure_index` compares
them with the directory and rebuilds when anything changed, so adding, editing or removing a
trail is seen on the next read. ``manage.py tm_index_trails`` rebuilds it by hand.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import DatabaseError, IntegrityError, transaction

from tmsite.core.errors import Refusal
from tmsite.core.uri import TmUri, parse
from tmsite.entities import models as m

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
        try:
            trails.append(read_trail(name, checkout))
        except TrailError as exc:
            problems[name] = exc.message
        except OSError as exc:
            problems[name] = f"cannot be read ({exc.__class__.__name__})"
    return trails, problems


# --- the database index ---------------------------------------------------------------------


def rebuild(checkout: Path | None = None) -> int:
    """Make the index hold exactly the trail files on disk; the number of steps indexed."""
    files = scan(checkout)
    trails, _ = read_all(checkout)
    titles = {t.name: t.title for t in trails}
    with transaction.atomic():
        m.TrailStep.objects.all().delete()
        m.TrailFile.objects.all().delete()
        m.TrailFile.objects.bulk_create(
            m.TrailFile(name=name, title=titles.get(name, "")[:200], mtime_ns=mt, size=size)
            for name, (mt, size) in files.items()
        )
        steps = [
            m.TrailStep(trail=t.name, position=s.position, uri=s.uri, target=s.target, note=s.note)
            for t in trails
            for s in t.steps
        ]
        m.TrailStep.objects.bulk_create(steps)
    return len(steps)


def ensure_index(checkout: Path | None = None) -> None:
    """Rebuild the index when the files changed since it was built (one query when fresh)."""
    files = scan(checkout)
    indexed = {
        name: (mtime, size)
        for name, mtime, size in m.TrailFile.objects.values_list("name", "mtime_ns", "size")
    }
    if indexed != files:
        with contextlib.suppress(IntegrityError):  # another worker rebuilt it just now
            rebuild(checkout)


#: The index as this process last read it, keyed by the trail files' signatures: every read
#: asks for its trails, and the answer only changes when a trail file does.
_memo: dict[str, tuple[dict[str, tuple[int, int]], dict[str, list[tuple[str, int, str]]]]] = {}
_memo_lock = threading.Lock()


def trails_of(uri: TmUri, checkout: Path | None = None) -> list[tuple[str, int, str]]:
    """``(trail, position, note)`` for every trail step whose target is ``uri``'s.

    The trail files are checked (a stat each) on every call; while they are unchanged the
    process answers from the index it read last, with no query. When they change, the
    database index is brought up to date and read again, once. A database without the index
    tables (not migrated yet) answers no trails rather than failing the read.
    """
    key = target_of(uri)
    if len(key) > MAX_STEP_URI:
        return []
    where = str(trails_dir(checkout))
    files = scan(checkout)
    with _memo_lock:
        known = _memo.get(where)
    if known is None or known[0] != files:
        try:
            ensure_index(checkout)
            by_target: dict[str, list[tuple[str, int, str]]] = {}
            rows = m.TrailStep.objects.order_by("trail", "position")
            for target, trail, position, note in rows.values_list(
                "target", "trail", "position", "note"
            ):
                by_target.setdefault(target, []).append((trail, position, note))
        except DatabaseError:
            return []
        known = (files, by_target)
        with _memo_lock:
            _memo[where] = known
    return list(known[1].get(key, []))
