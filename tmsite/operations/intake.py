"""Taking a proposal: each kind checked against the namespace, its change prepared, kept once.

Four kinds, each checked before anything is stored, every refusal naming what is valid:

* ``address`` — a ``tm://`` address on this host, under a mount it serves (another is refused
  with the mounts' roots), that does not resolve (one that does is refused ``exists``), with
  what the client expected there. Prepared: a note for the queue with the nearest existing
  addresses and the mount that would serve it.
* ``link`` — ``from``, ``rel``, ``to``, ``why``: both ends resolve, are plain addresses (no
  query) and differ; ``rel`` is a ``tm:`` relation a maintainer may draw (:data:`RELS`); the
  link is not served already. Prepared: the curated link and its inverse where ``rel`` has one.
* ``correction`` — ``uri`` (an entity, or ``mcp/<server>/map`` with ``entry``, a path
  template), ``field`` (one the admin lets maintainers correct), ``value`` (checked as the
  admin checks it). Prepared: the correction row the admin would write, with the value now.
* ``trail`` — ``name``, ``title``, ``description``, ``steps`` (at most
  ``TM_PROPOSALS_MAX_STEPS``, each an address that resolves and a note). Prepared: the trail
  file's exact JSON.

Identical proposals (same kind, same normalised text) are one proposal with a count, and get
the same receipt. Each proposal (a refused one too) counts against the caller's daily cap
(``TM_PROPOSALS_PER_CALLER``, by the rate limit's daily keyed hash of the caller — an IPv6
/64 is one — in rows deleted once the day is over).

The queue holds ``TM_PROPOSALS_OPEN_MAX`` open proposals, shared between sources (a source is
the caller's keyed hash of the day, kept on the proposals it made that day, blanked after).
When it is full, a new proposal takes the room of another (:func:`_make_room`): the oldest of
the source holding the most of today's open proposals, when that is more than the proposer
holds; the oldest of all when no source holds any of today's; otherwise the proposer holds
the most, has had its share, and is answered ``queue-full``. So one source, or many, cannot
close the queue for everyone. A proposal given up so is expired at once, its receipt saying
why. Open proposals older than ``TM_PROPOSALS_EXPIRE_DAYS`` are expired (as read at once,
marked so whenever a proposal is taken or ``manage.py tm_proposals expire`` runs) and deleted
``TM_PROPOSALS_EXPIRED_KEEP_DAYS`` after they expired.

Spec: PROP1, PROP2, PROP3.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Count, F
from django.utils import timezone

from tmsite.bus import changes
from tmsite.callers import caller
from tmsite.core.errors import BadArgument, Exists, NotFound, QueueFull, RateLimited, Refusal
from tmsite.core.links import INVERSE, TM_RELS
from tmsite.core.types import Content
from tmsite.core.uri import TmUri, parse
from tmsite.kinds import counter as kind_counter
from tmsite.mounts.registry import namespace
from tmsite.operations.schemas import PROPOSAL_FIELDS
from tmsite.proposals import receipts, targets
from tmsite.proposals.models import CallerDay, CuratedLink, Proposal, expiry_cutoff, lifetime
from tmsite.proposals.text import clean
from tmsite.trails import index as trails

#: The relations a curated link may have: the ``tm:`` ones but those the box draws itself.
RELS = sorted(TM_RELS - {"tm:links", "tm:step", "tm:step-of", "tm:changed-by", "tm:changes"})
#: The caller of a proposal made outside HTTP (stdio, the operator's process).
LOCAL = "local"
DAY = 86_400
#: What the receipt of a proposal given up for a newer one says.
MADE_ROOM = (
    "expired early: the maintainers' queue was full, and the source of this proposal held "
    "the most of it"
)


@dataclass(frozen=True)
class Prepared:
    """A proposal checked: what is kept of it, the change for review, where it would land."""

    proposed: dict[str, Any]
    change: dict[str, Any]
    nearest: list[str]
    mount: str


@dataclass(frozen=True)
class Taken:
    """What the proposer is answered: the proposal kept, and whether this call made it."""

    proposal: Proposal
    new: bool


# --- reading the namespace ------------------------------------------------------------------


def _address(field: str, value: object, *, plain: bool = False) -> TmUri:
    """``value`` as an address on this host (``plain``: with no query)."""
    text = clean(field, value, "uri")
    try:
        uri = parse(text)
    except Refusal as refusal:
        raise BadArgument(
            text, f"{field} is not a tm:// address: {refusal.message}", field=field
        ) from None
    host = namespace().host
    if uri.host != host:
        raise BadArgument(
            text, f"{field} must be an address on tm://{host}/", field=field, root=f"tm://{host}/"
        )
    if uri.mount == "proposals":
        raise BadArgument(text, f"{field}: proposals are not proposed", field=field)
    if plain and uri.params:
        raise BadArgument(
            text, f"{field} must be a plain address, without ?{uri.query}", field=field
        )
    return uri


def read_quietly(uri: TmUri) -> Content:
    """Read ``uri`` as a check: not counted as a kind served. Raises ``Refusal``."""
    with kind_counter.quiet():
        return namespace().read(str(uri))


def must_resolve(field: str, uri: TmUri) -> Content:
    """The read of ``uri``; refused ``bad-argument`` with ``nearest`` when it does not resolve."""
    try:
        return read_quietly(uri)
    except NotFound as refusal:
        raise BadArgument(
            str(uri),
            f"{field} {uri} does not resolve; only addresses that resolve can be proposed here",
            field=field,
            nearest=refusal.helpers.get("nearest", []),
        ) from None
    except Refusal as refusal:
        raise BadArgument(
            str(uri),
            f"{field} {uri} is refused ({refusal.reason}): {refusal.message}",
            field=field,
        ) from None


def served_link(rel: str, source: str, target: str) -> bool:
    """Whether a read of ``source`` carries ``rel`` to ``target`` (derived or curated)."""
    if CuratedLink.objects.filter(rel=rel, source=source, target=target).exists():
        return True
    links = read_quietly(parse(source)).links
    return any(link.rel == rel and link.href == target for link in links)


# --- the four kinds -----------------------------------------------------------------------


def _address_kind(fields: Mapping[str, Any]) -> Prepared:
    uri = _address("uri", fields.get("uri"))
    expected = clean("expected", fields.get("expected"), "text", lines=True)
    mounts = namespace().mounts
    if uri.mount is not None and uri.mount not in mounts:
        raise BadArgument(
            str(uri),
            f"no mount named {uri.mount!r} serves {uri}: an address proposal names one that "
            "a mount of this box could serve",
            field="uri",
            valid=[str(mount.root) for name, mount in mounts.items() if name != "proposals"],
        )
    try:
        read_quietly(uri)
    except NotFound as refusal:
        nearest = list(refusal.helpers.get("nearest", []))
    except Refusal as refusal:
        raise BadArgument(
            str(uri),
            f"{uri} is refused ({refusal.reason}), not missing: only an address that is not "
            "found can be proposed",
            field="uri",
        ) from None
    else:
        raise Exists(str(uri), f"{uri} resolves already: read it", address=str(uri))
    mount = uri.mount or ""
    proposed = {"uri": str(uri), "expected": expected}
    note = {**proposed, "mount": mount, "nearest": nearest}
    return Prepared(proposed, {"note": note}, nearest, mount)


def _link_kind(fields: Mapping[str, Any]) -> Prepared:
    rel = clean("rel", fields.get("rel"), "rel")
    if rel not in RELS:
        raise BadArgument(
            None, f"rel {rel!r} is not a relation a link may be proposed with", valid=RELS
        )
    source = _address("from", fields.get("from"), plain=True)
    target = _address("to", fields.get("to"), plain=True)
    why = clean("why", fields.get("why"), "text", lines=True)
    if source == target:
        raise BadArgument(str(source), "a link from an address to itself is not proposed")
    must_resolve("from", source)
    must_resolve("to", target)
    if served_link(rel, str(source), str(target)):
        raise Exists(str(source), f"{source} links {rel} to {target} already", address=str(source))
    links = [{"from": str(source), "rel": rel, "to": str(target)}]
    if rel in INVERSE:
        links.append({"from": str(target), "rel": INVERSE[rel], "to": str(source)})
    for link in links:
        link.update(confidence="exact", provenance="curated")
    proposed = {"from": str(source), "rel": rel, "to": str(target), "why": why}
    return Prepared(proposed, {"links": links}, [], "")


def _correction_kind(fields: Mapping[str, Any]) -> Prepared:
    uri = _address("uri", fields.get("uri"), plain=True)
    field = clean("field", fields.get("field"), "field")
    why = clean("why", fields.get("why"), "text", lines=True) if fields.get("why") else ""
    entry = clean("entry", fields.get("entry"), "entry") if uri.mount == "mcp" else None
    value = _value(fields.get("value"))
    target = targets.find(uri, entry)  # BadArgument when it names nothing correctable
    if field not in target.fields:
        raise BadArgument(
            str(uri), f"{field!r} is not a field a correction may change here", valid=target.fields
        )
    try:
        new = target.check(field, value)
    except ValidationError as exc:
        raise BadArgument(
            str(uri),
            f"{field} = {value!r} would be refused by the admin: {'; '.join(exc.messages)}",
            field=field,
        ) from None
    old = target.value(field)
    if old == new:
        raise Exists(str(uri), f"{field} reads {new!r} already", address=str(uri))
    proposed: dict[str, Any] = {"uri": str(uri), "field": field, "value": value, "why": why}
    if entry is not None:
        proposed["entry"] = entry
    change = {"correction": target.row(field, new), "old": old, "new": new}
    return Prepared(proposed, change, [], uri.mount or "")


def _value(value: object) -> Any:
    """A correction's value: a string (plain text) or, for a map entry's arguments, an object."""
    if isinstance(value, dict):
        if len(json.dumps(value, ensure_ascii=False)) > 2000:
            raise BadArgument(None, "value: at most 2000 characters of JSON", field="value")
        return {
            clean("value key", k, "field"): clean("value", v, "value") for k, v in value.items()
        }
    return clean("value", value, "value", lines=True)


def _trail_kind(fields: Mapping[str, Any]) -> Prepared:
    name = clean("name", fields.get("name"), "name")
    if not trails.NAME_RE.fullmatch(name):
        raise BadArgument(None, "name must be a-z, 0-9 and -, at most 64 characters", field="name")
    known = trails.current(settings.TM_CHECKOUT).known.get(name)
    host = namespace().host
    if known is not None:
        there = f"tm://{host}/trail/{name}"
        raise Exists(there, f"a trail named {name!r} is known already", address=there)
    title = clean("title", fields.get("title"), "title")
    description = clean("description", fields.get("description"), "text", lines=True)
    steps = fields.get("steps")
    most = int(settings.TM_PROPOSALS_MAX_STEPS)
    if not isinstance(steps, list) or not steps:
        raise BadArgument(None, "steps: a list of {uri, note}, at least one", field="steps")
    if len(steps) > most:
        raise BadArgument(
            None, f"steps: {len(steps)} given; at most {most} are taken", field="steps", limit=most
        )
    kept = []
    for n, step in enumerate(steps, 1):
        if not isinstance(step, Mapping):
            raise BadArgument(None, f"steps[{n}] must be {{uri, note}}", field="steps")
        uri = _address(f"steps[{n}].uri", step.get("uri"))
        must_resolve(f"steps[{n}].uri", uri)
        kept.append({"uri": str(uri), "note": clean(f"steps[{n}].note", step.get("note"), "note")})
    value = {"title": title, "description": description, "steps": kept}
    try:
        trail = trails.from_json(name, value)
    except trails.TrailError as exc:
        raise BadArgument(
            None, f"the trail would not parse: {exc.message}", field="steps"
        ) from None
    proposed = {"name": name, **value}
    change = {"trail": {"name": name, "file": trails.file_text(trail)}}
    return Prepared(proposed, change, [], "trail")


def _a(kind: str) -> str:
    """``kind`` with its indefinite article: "an address", "a link"."""
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"


PREPARE = {
    "address": _address_kind,
    "link": _link_kind,
    "correction": _correction_kind,
    "trail": _trail_kind,
}


def prepare(kind: object, fields: Mapping[str, Any]) -> Prepared:
    """Check a proposal of ``kind`` and prepare its change; nothing is stored.

    Raises:
        BadArgument: an unknown kind (``valid``: the kinds), a field the kind does not take,
            or one that does not check; ``Exists``: what it asks for is there already.
    """
    if kind not in PREPARE:
        raise BadArgument(
            None, f"kind {kind!r} is not a kind of proposal", valid=list(PROPOSAL_FIELDS)
        )
    assert isinstance(kind, str)
    takes = PROPOSAL_FIELDS[kind]  # the schema's own table
    unknown = sorted(set(fields) - set(takes))
    if unknown:
        raise BadArgument(
            None,
            f"{_a(kind)} proposal does not take {', '.join(unknown)}",
            valid=list(takes),
        )
    return PREPARE[kind](fields)


# --- keeping it -------------------------------------------------------------------------------


def fingerprint(kind: str, proposed: Mapping[str, Any]) -> str:
    """What makes two proposals identical: the kind and the normalised text."""
    text = json.dumps({"kind": kind, **proposed}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def expire(now: Any = None) -> int:
    """Mark open proposals older than ``TM_PROPOSALS_EXPIRE_DAYS`` expired; how many.

    Each is marked as expired when its time ran out (``decided_at``), not when it was marked:
    a receipt, the admin and the retention all read the same moment whenever this runs.
    """
    now = now or timezone.now()
    aged = Proposal.objects.filter(status="open", created_at__lt=expiry_cutoff(now))
    marking = list(aged.select_for_update())
    marked = aged.filter(pk__in=[p.pk for p in marking]).update(
        status="expired", decided_at=F("created_at") + lifetime()
    )
    for proposal in marking:
        announce(proposal)
    return marked


def sweep(now: Any = None) -> int:
    """Delete expired proposals that expired more than ``TM_PROPOSALS_EXPIRED_KEEP_DAYS`` ago.

    Expired proposals were never reviewed nor public; after the retention their receipts read
    as ``not-found``. Decided ones are kept: they are public and linked from what they changed.
    """
    now = now or timezone.now()
    cutoff = now - timedelta(days=float(settings.TM_PROPOSALS_EXPIRED_KEEP_DAYS))
    deleted, _ = Proposal.objects.filter(status="expired", decided_at__lt=cutoff).delete()
    return deleted


def forget_sources(now: float) -> int:
    """Blank the source of every proposal made before the UTC day of ``now``; how many."""
    today = datetime.fromtimestamp(int(now // DAY) * DAY, tz=UTC)
    return Proposal.objects.filter(created_at__lt=today).exclude(source="").update(source="")


def _make_room(source: str) -> None:
    """Room in the queue for one more open proposal from ``source``, given up by another.

    Raises:
        QueueFull: ``source`` holds at least as many of today's open proposals as any other
            (or the queue takes none).
    """
    open_ = Proposal.objects.filter(status="open")
    over = open_.count() - int(settings.TM_PROPOSALS_OPEN_MAX) + 1
    for _ in range(max(0, over)):
        held = dict(
            open_.exclude(source="").values_list("source").annotate(n=Count("id")).order_by()
        )
        mine = held.pop(source, 0)
        top = max(held.values(), default=0)
        if top > mine:
            heaviest = [key for key, n in held.items() if n == top]
            victim = open_.filter(source__in=heaviest).order_by("created_at", "id").first()
        elif mine == 0:  # every open proposal was made on an earlier day
            victim = open_.order_by("created_at", "id").first()
        else:
            victim = None
        if victim is None:
            raise QueueFull(
                None,
                "the maintainers' queue is full, and this caller holds as much of it as any; "
                "retry later",
                retryAfter=int(settings.TM_PROPOSALS_RETRY_AFTER),
            )
        Proposal.objects.filter(pk=victim.pk).update(
            status="expired", decided_at=timezone.now(), reason=MADE_ROOM
        )
        announce(victim)


def _source(now: float, address: str | None) -> str:
    """The caller at ``address`` as the day's keyed hash (``local`` outside HTTP: None)."""
    return LOCAL if address is None else caller.keyed(address, now)


def _count_caller(now: float, key: str) -> None:
    """Count one proposal against the caller's day; refused past ``TM_PROPOSALS_PER_CALLER``."""
    day = int(now // DAY)
    cap = int(settings.TM_PROPOSALS_PER_CALLER)
    today = CallerDay.objects.filter(key=key, day=day)
    if today.filter(count__lt=cap).update(count=F("count") + 1):
        return
    if cap > 0 and not today.exists():  # the caller's first today
        CallerDay.objects.filter(day__lt=day).delete()  # yesterday's keys link to nothing
        try:
            with transaction.atomic():
                CallerDay.objects.create(key=key, day=day, count=1)
            return
        except IntegrityError:  # its first, twice at once: count onto the row just made
            if today.filter(count__lt=cap).update(count=F("count") + 1):
                return
    wait = (day + 1) * DAY - int(now)
    raise RateLimited(
        None,
        f"this caller has made the {cap} proposals a day takes; retry after {wait} seconds",
        retryAfter=wait,
    )


def take(kind: object, fields: Mapping[str, Any], address: str | None) -> Taken:
    """Check, prepare and keep one proposal (or count it onto its identical one).

    ``address`` is the caller's, held in memory only (None outside HTTP): the proposal keeps
    its day's keyed hash.

    Raises:
        Refusal: ``bad-argument``/``exists`` from :func:`prepare`; ``rate-limited`` past the
            caller's daily cap; ``queue-full`` (``retryAfter``) when the queue holds all it takes
            and the caller holds as much of it as any (:func:`_make_room`).
    """
    now = time.time()
    source = _source(now, address)
    with transaction.atomic():  # counted first: a refused proposal counts too
        _count_caller(now, source)
    prepared = prepare(kind, fields)
    assert isinstance(kind, str)
    mark = fingerprint(kind, prepared.proposed)
    for _attempt in range(3):
        try:
            with transaction.atomic():
                expire()
                sweep()
                forget_sources(now)
                same = Proposal.objects.filter(fingerprint=mark).exclude(status="expired")
                if same.update(count=F("count") + 1, last_proposed_at=timezone.now()):
                    counted = same.get()
                    announce(counted)
                    return Taken(counted, False)
                _make_room(source)
                proposal = Proposal.objects.create(
                    receipt=receipts.new_id(),
                    fingerprint=mark,
                    kind=kind,
                    proposed=prepared.proposed,
                    change=prepared.change,
                    nearest=prepared.nearest,
                    mount=prepared.mount,
                    source=source,
                )
                return Taken(proposal, True)
        except IntegrityError:  # an identical one was kept just now: count onto it
            continue
    raise QueueFull(None, "the queue is busy; retry", retryAfter=1)


def receipt_uri(proposal: Proposal) -> str:
    """The receipt address of ``proposal``: ``tm://<host>/proposals/<token>``."""
    host = namespace().host
    return f"tm://{host}/proposals/{receipts.token(host, proposal.receipt)}"


def public_uri(proposal: Proposal) -> str:
    """``tm://<host>/proposals/<id>``: a decided proposal's public address."""
    return str(TmUri(namespace().host, "proposals", (str(proposal.pk),)))


def announce(proposal: Proposal, changed: Iterable[str] = ()) -> None:
    """Once the transaction commits, publish what reads differently because of ``proposal``.

    That is, when it was decided, expired or counted again: its receipt, its public address
    (decided ones), and ``changed`` (the addresses an approval changed). Published after the
    commit, so a listener that reads again sees it; nothing when the transaction rolls back.
    The receipt is published ``exact``: only who listens to it by its token is told of it.

    Spec: SUB3, PROP2.
    """
    receipt = receipt_uri(proposal)
    public = [public_uri(proposal)] if proposal.decided else []
    public += [u for u in changed if u not in public]

    def tell() -> None:
        changes.publish(receipt, exact=True)  # a secret: no collection's listener is told it
        for uri in public:
            changes.publish(uri)

    transaction.on_commit(tell)
