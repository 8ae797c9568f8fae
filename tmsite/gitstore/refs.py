"""Refs: validated by shape first, then resolved among the repository's own names.

Client text is never handed to a revision parser and never turned into a file path: a ref name
is matched against the set of names read from the ref store, an abbreviated id against the
object index, a date against committer dates on the default ref's history.

Spec: GIT.
"""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Literal

from rapidfuzz.distance import Levenshtein

from tmsite.core import work
from tmsite.gitstore.cache import OBJECTS
from tmsite.gitstore.errors import AmbiguousRef, BadRef, NoSuchRef, NotACommit
from tmsite.gitstore.repo import COMMIT, TAG, TYPE_NAMES, GitRepo
from tmsite.gitstore.types import Resolved

MAX_REF_LENGTH = 255

_HEX = re.compile(r"[0-9a-fA-F]{4,40}")
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._/+@-]*")
_DATE_SHAPED = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}([Tt ].*)?")
_DATE = re.compile(
    r"(?P<y>[0-9]{4})-(?P<mo>[0-9]{2})-(?P<d>[0-9]{2})"
    r"(?:[Tt](?P<h>[0-9]{2}):(?P<mi>[0-9]{2})(?::(?P<s>[0-9]{2})(?:\.(?P<frac>[0-9]{1,9}))?)?"
    r"(?P<tz>[Zz]|[+-][0-9]{2}:?[0-9]{2})?)?"
)
_FORBIDDEN = (
    ("..", "'..' is revision-range syntax"),
    ("@{", "'@{' is reflog syntax"),
    (":", "':' is path syntax"),
    ("~", "'~' is ancestry syntax"),
    ("^", "'^' is ancestry syntax"),
    ("\\", "backslashes are not allowed"),
)


@dataclass(frozen=True, slots=True)
class RefText:
    """A ref text that passed validation.

    Attributes:
        text: The text as given.
        kind: ``name`` (a ref name or hex id) or ``date``.
        when: For a date, the instant it means (UTC-aware); dates without a time mean the end
            of that day (23:59:59), datetimes without an offset are UTC.
    """

    text: str
    kind: Literal["name", "date"]
    when: datetime | None = None


def _parse_date(text: str) -> datetime:
    match = _DATE.fullmatch(text)
    if match is None:
        raise BadRef(text, "a date must be YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS][Z|±HH:MM]")
    parts = match.groupdict()
    try:
        year, month, day = int(parts["y"]), int(parts["mo"]), int(parts["d"])
        if parts["h"] is None:
            moment = datetime(year, month, day, 23, 59, 59, tzinfo=UTC)
        else:
            frac = (parts["frac"] or "0")[:6].ljust(6, "0")
            zone: timezone = UTC
            tz_text = parts["tz"]
            if tz_text and tz_text not in ("Z", "z"):
                digits = tz_text[1:].replace(":", "")
                hours, minutes = int(digits[:2]), int(digits[2:])
                if hours > 14 or minutes > 59 or (hours == 14 and minutes):
                    raise BadRef(text, "the UTC offset is out of range (at most ±14:00)")
                sign = -1 if tz_text[0] == "-" else 1
                zone = timezone(sign * timedelta(hours=hours, minutes=minutes))
            moment = datetime(
                year,
                month,
                day,
                int(parts["h"]),
                int(parts["mi"]),
                int(parts["s"] or 0),
                int(frac),
                tzinfo=zone,
            )
        return moment.astimezone(UTC)
    except (ValueError, OverflowError) as exc:
        raise BadRef(text, f"not a real date or time ({exc})") from exc


def validate_ref(text: str) -> RefText:
    """Check a ref text by its shape alone, before any lookup.

    Accepted: branch and tag names (``main``, ``release/1.0``, ``v1``, ``HEAD``), full names
    under ``refs/heads/`` and ``refs/tags/``, hex commit ids (4–40 digits), and ISO dates or
    datetimes (``2026-01-02``, ``2026-01-02T03:04:05Z``, ``2026-01-02T03:04+09:00``).
    Date-shaped text always means a date, and must be a real one.

    Refused: empty or longer than 255 characters, a leading ``-`` (an option; nor may any
    ``/`` segment start with one, so ``refs/heads/-n`` is refused too), spaces and
    control characters, ``..``, ``@{``, ``:``, ``~``, ``^``, backslashes, characters outside
    ``A–Z a–z 0–9 . _ / + @ -``, segments that are empty or start with a dot, names ending in
    ``.lock`` or ``/``.

    Raises:
        BadRef: with the rule the text broke.
    """
    _refuse_unsafe(text)
    if _DATE_SHAPED.fullmatch(text):
        return RefText(text, "date", _parse_date(text))
    _refuse_bad_name(text)
    return RefText(text, "name")


def _refuse_unsafe(text: str) -> None:
    """Refuse what no ref, name or date, may be: empty, too long, an option, control or space."""
    if not text:
        raise BadRef(text, "the ref is empty")
    if len(text) > MAX_REF_LENGTH:
        raise BadRef(text, f"the ref is longer than {MAX_REF_LENGTH} characters")
    if text.startswith("-"):
        raise BadRef(text, "a ref may not start with '-'")
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text):
        raise BadRef(text, "control characters are not allowed")
    if any(ch.isspace() for ch in text):
        raise BadRef(text, "spaces are not allowed")


def _refuse_bad_name(text: str) -> None:
    """Refuse a text that is not a date and breaks a rule of git's ref names."""
    for needle, why in _FORBIDDEN:
        if needle in text:
            raise BadRef(text, why)
    if not _NAME.fullmatch(text):
        raise BadRef(text, "only letters, digits and . _ / + @ - are allowed")
    segments = text.split("/")
    if any(not seg or seg.startswith(".") for seg in segments):
        raise BadRef(text, "empty segments and segments starting with '.' are not allowed")
    if any(seg.startswith("-") for seg in segments):
        raise BadRef(text, "no segment of a ref may start with '-'")
    if text.endswith(".lock") or text.endswith("."):
        raise BadRef(text, "a ref may not end with '.lock' or '.'")


def _is_clean_name(name: str) -> bool:
    try:
        return validate_ref(name).kind == "name"
    except BadRef:
        return False


def list_refs(repo: GitRepo) -> tuple[list[str], list[str]]:
    """The repository's branches and tags, short names, sorted.

    Names that would be refused as a ref text (an option-shaped name written into the ref
    store by hand, say) are left out, so they are never suggested.

    Returns:
        ``(branches, tags)``.
    """
    names = repo.refs()
    branches, tags = (
        sorted(
            name[len(prefix) :]
            for name in names
            if name.startswith(prefix) and _is_clean_name(name[len(prefix) :])
        )
        for prefix in ("refs/heads/", "refs/tags/")
    )
    return branches, tags


def rank_nearest(wanted: str, names: list[str], limit: int = 5) -> list[str]:
    """Up to ``limit`` of ``names`` nearest to ``wanted`` by edit distance, never ``wanted``.

    Distances are Levenshtein's (rapidfuzz's C, as ``core.nearest`` ranks); ties go to names
    sharing a longer prefix with ``wanted``, then alphabetical order.
    """

    def common_prefix(name: str) -> int:
        n = 0
        for x, y in zip(name, wanted, strict=False):
            if x != y:
                break
            n += 1
        return n

    work.spend("ranked", len(names))
    scored = [
        (Levenshtein.distance(wanted, name), -common_prefix(name), name)
        for name in dict.fromkeys(names)
        if name != wanted
    ]
    return [name for _d, _p, name in heapq.nsmallest(limit, scored)]


def nearest_refs(repo: GitRepo, wanted: str) -> list[str]:
    """The five ref names (``HEAD``, branches, tags) nearest to ``wanted``."""
    branches, tags = list_refs(repo)
    return rank_nearest(wanted, ["HEAD", *branches, *tags])


def _peeled(repo: GitRepo, sha: str) -> tuple[int, str]:
    """The type number and id an id stands for, following annotated tags (at most 16)."""
    for _ in range(16):
        type_num, raw = repo.raw(sha)
        if type_num != TAG or not raw.startswith(b"object "):
            return type_num, sha
        sha = raw.split(b"\n", 1)[0][len(b"object ") :].decode("ascii").strip()
    return TAG, sha


def _peel(repo: GitRepo, sha: str) -> str | None:
    """The commit an id stands for, following annotated tags; None if not a commit."""
    type_num, sha = _peeled(repo, sha)
    return sha if type_num == COMMIT else None


def _head(repo: GitRepo, refs: dict[str, str] | None, default_ref: str | None) -> str:
    """The default commit: the pinned ``default_ref`` if any, else HEAD.

    ``refs`` None: read HEAD alone where it is plain (:meth:`GitRepo.head`), else every ref.
    """
    if default_ref is None or default_ref == "HEAD":
        head = repo.head() if refs is None else None
        if head is None:
            head = (repo.refs() if refs is None else refs).get("HEAD")
        commit = _peel(repo, head) if head is not None and repo.contains(head) else None
        if commit is None:
            raise NoSuchRef("HEAD", nearest_refs(repo, "HEAD"))
        return commit
    return _resolve_name(
        repo, repo.refs() if refs is None else refs, validate_ref(default_ref).text
    )


def _resolve_name(repo: GitRepo, refs: dict[str, str], name: str) -> str:
    if name == "HEAD":
        return _head(repo, refs, None)
    candidates = [name] if name.startswith(("refs/heads/", "refs/tags/")) else []
    candidates += [f"refs/tags/{name}", f"refs/heads/{name}"]
    elsewhere = None
    for full in candidates:
        target = refs.get(full)
        if target is not None and repo.contains(target):
            commit = _peel(repo, target)
            if commit is not None:
                return commit
            elsewhere = elsewhere or target
    if elsewhere is not None:
        raise NotACommit(
            name, nearest_refs(repo, name), TYPE_NAMES.get(_peeled(repo, elsewhere)[0], "tag")
        )
    if _HEX.fullmatch(name):
        return _resolve_hex(repo, name.lower())
    raise NoSuchRef(name, nearest_refs(repo, name))


def _resolve_hex(repo: GitRepo, hexa: str) -> str:
    if len(hexa) == 40:
        found = [hexa] if repo.contains(hexa) else []
    else:
        found = repo.iter_prefix(hexa)
    commits = sorted({c for c in (_peel(repo, s) for s in found) if c is not None})
    if not commits:
        raise NoSuchRef(hexa, nearest_refs(repo, hexa))
    if len(commits) > 1:
        raise AmbiguousRef(hexa, nearest_refs(repo, hexa), commits[:5])
    return commits[0]


def commit_at_date(repo: GitRepo, tip: str, when: datetime) -> str | None:
    """The commit at or before ``when`` that git's walk from ``tip`` meets first.

    This is the answer of ``git rev-list -1 --before=<when> <tip>``: commits are taken newest
    first by committer date from a queue, every parent followed, and the first one at or
    before the instant is the answer, even when clocks were skewed. The walk runs over the
    commit-graph's tables when the repository has one. Answers are cached per (tip, instant).
    """
    limit = int(when.timestamp())
    key = (repo.path, "date-walk", tip, limit)
    cached = OBJECTS.get(key)
    if cached is not None:
        return cached or None
    found = repo.first_before(tip, limit)
    if found is None:
        found = _first_before(repo, tip, limit)
    OBJECTS.put(key, found, 120)
    return found or None


def _first_before(repo: GitRepo, tip: str, limit: int) -> str:
    """:func:`commit_at_date`'s walk over the commits themselves (``""`` when none is)."""
    queue = [(-repo.walk_info(tip)[2], 0, tip)]
    seen = {tip}
    counter = 0
    while queue:
        neg_time, _n, sha = heapq.heappop(queue)
        if -neg_time <= limit:
            return sha
        for parent in repo.walk_info(sha)[1]:
            if parent not in seen:
                seen.add(parent)
                counter += 1
                heapq.heappush(queue, (-repo.walk_info(parent)[2], counter, parent))
    return ""


def history_start(repo: GitRepo, tip: str) -> str:
    """When ``tip``'s first-parent history starts: its first commit's committer date (UTC).

    The walk :func:`commit_at_date` made to find nothing before a date, made again from the
    handle's kept commit headers.
    """
    sha: str | None = tip
    first_time = 0
    while sha is not None:
        _tree, parents, first_time = repo.walk_info(sha)
        sha = parents[0] if parents else None
    return datetime.fromtimestamp(first_time, UTC).isoformat()


def resolve(repo: GitRepo, at: str | None, default_ref: str | None = None) -> Resolved:
    """Resolve what a client asked for to one commit.

    Args:
        repo: The repository.
        at: None or ``HEAD`` for the default; a branch or tag name (tags first, as git does;
            annotated tags peeled to their commit); a full or abbreviated (≥ 4) hex commit id;
            or an ISO date/datetime — the first commit at or before it in the default ref's
            history, as ``git rev-list -1 --before`` finds it (see :func:`commit_at_date`).
        default_ref: A branch, tag or commit id that stands for the default (the commit a site
            serves); None means HEAD.

    Returns:
        The commit, the label to show, and whether the default was read.

    Raises:
        BadRef: the text is refused by its shape.
        NoSuchRef: nothing of that name (with the nearest names), or a date before the first
            commit (with when the history starts).
        AmbiguousRef: an abbreviation shared by several commits.
    """
    if at is None or at == "HEAD":
        return Resolved(_head(repo, None, default_ref), "HEAD", True)
    checked = validate_ref(at)
    if checked.kind == "date":
        assert checked.when is not None
        tip = _head(repo, None, default_ref)
        commit = commit_at_date(repo, tip, checked.when)
        if commit is None:
            raise NoSuchRef(at, nearest_refs(repo, at), starts=history_start(repo, tip))
        return Resolved(commit, at, False)
    return Resolved(_resolve_name(repo, repo.refs(), at), at, False)


def has_commit(repo: GitRepo, sha: str) -> bool:
    """Whether ``sha`` (40 hex digits) is a commit the repository holds."""
    if len(sha) != 40 or not _HEX.fullmatch(sha):
        return False
    sha = sha.lower()
    return repo.contains(sha) and repo.object_type(sha) == COMMIT
