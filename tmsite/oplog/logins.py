"""The admin login's throttle: failed logins counted per account and per caller, then a lock-out.

Every failed login is a :class:`~tmsite.oplog.models.LoginEvent` row keyed by the account name
as typed (case folded; an account that does not exist is counted the same) and by the caller's
key for the day (:func:`tmsite.callers.caller.keyed`: an HMAC under the rate limit's daily
secret, never the address). When an account has had ``TM_LOGIN_FAILURES`` failures within
``TM_LOGIN_COOLOFF`` seconds (counted since its last lock-out ended or its last login), or a
caller ``TM_LOGIN_CALLER_FAILURES`` failures across accounts, a lock-out row is written: until it
ends, every attempt on that account, or from that caller, is refused with :attr:`Lock.message`
before the password is looked at — the right password too — and only counted on the lock-out
row. A lock-out ends ``TM_LOGIN_COOLOFF`` seconds after it began; nothing needs to clear it.
Each lock-out is also one warning in the log (the account, its end, the caller key's first
digits).
Events older than ``TM_LOGIN_RETENTION_DAYS`` (30) are deleted, by each process at most hourly
and by ``manage.py tm_logins purge``.

The rows live in the database, so every worker and machine counts the same attempts. Two
attempts that race may both be counted before either writes its lock-out; the lock-out comes at
most one attempt per worker late.

Spec: OP4.
"""

from __future__ import annotations

import logging
import math
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db.models import F, Max, Q
from django.http import HttpRequest

from tmsite.callers import caller
from tmsite.callers.clock import Clock, system_clock
from tmsite.oplog.models import LoginEvent

#: The clock the throttle reads; tests replace it with a ``FakeClock``.
clock: Clock = system_clock
_log = logging.getLogger(__name__)
#: The outcomes that count towards a lock-out.
FAILURES = (LoginEvent.FAILED, LoginEvent.TOKEN_FAILED)


def account_key(username: str) -> str:
    """The account as the throttle counts it: the name as typed, trimmed and case folded."""
    return username.strip().casefold()[:150]


def _at(now: float) -> datetime:
    return datetime.fromtimestamp(now, UTC)


def _cooloff() -> timedelta:
    return timedelta(seconds=float(settings.TM_LOGIN_COOLOFF))


@dataclass(frozen=True)
class Lock:
    """A lock-out in force: what it locks, when it ends, and the row that records it."""

    scope: str
    until: datetime
    event_id: int
    now: datetime

    @property
    def minutes(self) -> int:
        """Whole minutes until it ends, at least 1."""
        return max(1, math.ceil((self.until - self.now).total_seconds() / 60))

    @property
    def message(self) -> str:
        """The sentence the login page shows."""
        what = "for this account" if self.scope == LoginEvent.ACCOUNT else "from your address"
        when = "1 minute" if self.minutes == 1 else f"{self.minutes} minutes"
        return (
            f"Too many failed logins {what}: logins are refused for now, even with the right "
            f"password. Try again in {when}."
        )


@dataclass(frozen=True)
class Attempt:
    """One login attempt: the account it names and the caller's key, read once."""

    account: str
    caller: str
    now: float

    @classmethod
    def of(cls, request: HttpRequest | None, username: str) -> Attempt:
        """The attempt ``request`` makes on ``username`` now (by :data:`clock`)."""
        now = clock()
        who = caller.keyed(caller.address_in(request.META), now) if request is not None else ""
        return cls(account_key(username), who, now)

    @property
    def at(self) -> datetime:
        """When it is made."""
        return _at(self.now)


#: Lock-outs this process has seen in force, by (scope, key): an attempt on one costs a single
#: UPDATE (the refusal counted, guarded by the lock-out's end) instead of a look-up first.
_known: dict[tuple[str, str], Lock] = {}
_known_lock = threading.Lock()
_KNOWN_MAX = 1024


def refused(attempt: Attempt) -> Lock | None:
    """The lock-out in force on the attempt's account or caller, with the attempt counted on it.

    None when there is none: the attempt may go on to the password. A lock-out ended early
    (``tm_logins unlock``) is seen at once, since the count is guarded by its end in the row.
    """
    keys = [(LoginEvent.ACCOUNT, attempt.account), (LoginEvent.CALLER, attempt.caller)]
    for key in keys:
        with _known_lock:
            known = _known.get(key)
        if known is not None and known.until > attempt.at and _count_refusal(known, attempt, key):
            return Lock(known.scope, known.until, known.event_id, attempt.at)
        if known is not None:
            with _known_lock:
                _known.pop(key, None)
    found = lock(attempt)
    if found is None:
        return None
    key = keys[0] if found.scope == LoginEvent.ACCOUNT else keys[1]
    if not _count_refusal(found, attempt, key):
        return None
    with _known_lock:
        if len(_known) >= _KNOWN_MAX:
            _known.clear()
        _known[key] = found
    return found


def _count_refusal(found: Lock, attempt: Attempt, key: tuple[str, str]) -> bool:
    """Count the refusal on the lock-out's row, if it is still the lock-out of ``key`` in force."""
    scope, value = key
    whose = Q(account=value) if scope == LoginEvent.ACCOUNT else Q(caller=value)
    rows = LoginEvent.objects.filter(
        whose, pk=found.event_id, outcome=LoginEvent.LOCKED, scope=scope, until__gt=attempt.at
    )
    return bool(rows.update(refused=F("refused") + 1))


def lock(attempt: Attempt) -> Lock | None:
    """The lock-out in force on the attempt's account or caller (the longer), or None."""
    found = (
        LoginEvent.objects.filter(outcome=LoginEvent.LOCKED, until__gt=attempt.at)
        .filter(
            Q(scope=LoginEvent.ACCOUNT, account=attempt.account)
            | Q(scope=LoginEvent.CALLER, caller=attempt.caller)
        )
        .order_by("-until")
        .values_list("id", "scope", "until")
        .first()
    )
    if found is None:
        return None
    event_id, scope, until = found
    assert until is not None  # a lock-out row always has its end
    return Lock(scope, until, event_id, attempt.at)


def succeeded(attempt: Attempt) -> None:
    """Record a login: the account's count of failures starts again."""
    _record(attempt, LoginEvent.OK)


def _record(attempt: Attempt, outcome: str) -> None:
    LoginEvent.objects.create(
        at=attempt.at, account=attempt.account, caller=attempt.caller, outcome=outcome
    )
    _maybe_purge(attempt.now)


def failed(attempt: Attempt, outcome: str = LoginEvent.FAILED) -> Lock | None:
    """Record a failed login; the lock-out it brings about, if it is the one too many."""
    _record(attempt, outcome)
    window = attempt.at - _cooloff()
    by_account = _count(
        Q(account=attempt.account), window, Q(outcome=LoginEvent.OK), LoginEvent.ACCOUNT
    )
    if by_account >= int(settings.TM_LOGIN_FAILURES):
        return _lock_out(attempt, LoginEvent.ACCOUNT)
    if not attempt.caller:
        return None
    by_caller = _count(Q(caller=attempt.caller), window, None, LoginEvent.CALLER)
    if by_caller >= int(settings.TM_LOGIN_CALLER_FAILURES):
        return _lock_out(attempt, LoginEvent.CALLER)
    return None


def _count(whose: Q, window: datetime, reset: Q | None, scope: str) -> int:
    """Failures within the window since the last ``reset`` row, or the last lock-out of ``scope``.

    By row order: no attempt is written while a lock-out lasts, so the rows after one came
    after its end.
    """
    rows = LoginEvent.objects.filter(whose)
    marks = Q(outcome=LoginEvent.LOCKED, scope=scope)
    if reset is not None:
        marks |= reset
    last = rows.filter(marks).aggregate(last=Max("pk"))["last"]
    failures = rows.filter(outcome__in=FAILURES, at__gt=window)
    if last is not None:
        failures = failures.filter(pk__gt=last)
    return failures.count()


def _lock_out(attempt: Attempt, scope: str) -> Lock:
    until = attempt.at + _cooloff()
    row = LoginEvent.objects.create(
        at=attempt.at,
        account=attempt.account,
        caller=attempt.caller,
        outcome=LoginEvent.LOCKED,
        scope=scope,
        until=until,
    )
    whose = f"account {attempt.account!r}" if scope == LoginEvent.ACCOUNT else "a caller"
    _log.warning(
        "admin login: %s locked out until %s (caller key %s…)",
        whose,
        f"{until:%Y-%m-%d %H:%M:%S} UTC",
        attempt.caller[:8],
    )
    return Lock(scope, until, row.pk, attempt.at)


def unlock(accounts: list[str] | None) -> int:
    """End now the lock-outs in force on ``accounts`` (keys), or every one; returns how many."""
    now = _at(clock())
    rows = LoginEvent.objects.filter(outcome=LoginEvent.LOCKED, until__gt=now)
    if accounts is not None:
        rows = rows.filter(scope=LoginEvent.ACCOUNT, account__in=accounts)
    return rows.update(until=now)


#: Seconds between a process's purges of events past their retention.
PURGE_EVERY_SECONDS = 3600.0
_last_purge = [0.0]


def purge(now: float | None = None) -> int:
    """Delete the events older than ``TM_LOGIN_RETENTION_DAYS``; returns how many."""
    before = _at(clock() if now is None else now) - timedelta(
        days=int(settings.TM_LOGIN_RETENTION_DAYS)
    )
    deleted, _ = LoginEvent.objects.filter(at__lt=before).delete()
    return deleted


def _maybe_purge(now: float) -> None:
    """``purge``, at most once an hour per process (after an event is written)."""
    if _last_purge[0] and 0 <= now - _last_purge[0] < PURGE_EVERY_SECONDS:
        return
    _last_purge[0] = now
    purge(now)
