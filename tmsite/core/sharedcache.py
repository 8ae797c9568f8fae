"""The shared cache (Redis behind a Django cache alias) and the circuit in front of it.

The shared cache is an aid, never a dependency: what uses it (the rate limit's buckets, the
gitstore's shared answers, health) calls it through :func:`call`, which fails fast with
:class:`SharedCacheDown` instead of waiting on a Redis that is gone or frozen, and each user
falls back to what this machine has (its own buckets, its own memory).

The circuit, one per cache configuration in each process:

* **closed** — calls go to Redis, each bounded by the socket timeouts the settings give it
  (``TM_REDIS_TIMEOUT``, tens of milliseconds). A call that fails for want of Redis (a refused
  or timed-out socket, a Redis error) opens the circuit.
* **open** — for ``TM_REDIS_RETRY_SECONDS`` no call is made: each raises at once.
* **half-open** — after that, one call (the first to come) is let through as a trial, the
  others still fail fast; the trial's success closes the circuit, its failure opens it again
  for another wait. A trial that never ends (its thread gone) lets another through after the
  same wait.

Each opening is logged once (``tmsite.sharedcache``, WARNING) with the error that opened it,
and each closing once with how long it was away; health reports the state, the last error and
the counts (:meth:`Circuit.status`).

Spec: OP1, OP5.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

log = logging.getLogger("tmsite.sharedcache")

#: Seconds the circuit stays open before a trial call, when the settings do not say.
DEFAULT_RETRY_SECONDS = 1.0


class SharedCacheDown(Exception):
    """The shared cache is not asked (the circuit is open) or did not answer."""


def is_outage(exc: BaseException) -> bool:
    """Whether ``exc`` says the shared cache cannot serve (not a bug in what asked it)."""
    if isinstance(exc, OSError):
        return True
    try:
        from redis.exceptions import RedisError
    except ImportError:  # pragma: no cover - redis is a dependency
        return False
    return isinstance(exc, RedisError)


class Circuit:
    """Closed, open or half-open, as the module says; thread-safe.

    Args:
        retry_seconds: How long it stays open before one trial call.
        clock: Monotonic seconds (tests pass their own).
    """

    def __init__(self, retry_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.retry_seconds = max(0.0, float(retry_seconds))
        self._clock = clock
        self._lock = threading.Lock()
        self._opened_at: float | None = None  # None: closed
        self._down_since = 0.0
        self._trial_at: float | None = None
        self.last_error = ""
        #: Times it opened, calls refused while open, and calls that failed.
        self.outages = 0
        self.refused = 0
        self.failures = 0

    @property
    def state(self) -> str:
        """``closed``, ``open`` or ``half-open`` (the wait is over: the next call is a trial)."""
        with self._lock:
            return self._state(self._clock())

    def _state(self, now: float) -> str:
        if self._opened_at is None:
            return "closed"
        return "open" if now - self._opened_at < self.retry_seconds else "half-open"

    def admit(self) -> bool:
        """Whether a call may go to the shared cache now; ``True`` too when it is a trial.

        Raises:
            SharedCacheDown: The circuit is open (or another call is the trial).
        """
        with self._lock:
            now = self._clock()
            state = self._state(now)
            if state == "closed":
                return False
            trial_running = self._trial_at is not None and now - self._trial_at < self.retry_seconds
            if state == "half-open" and not trial_running:
                self._trial_at = now
                return True
            self.refused += 1
            opened = self._opened_at if self._opened_at is not None else now
            wait = max(0.0, self.retry_seconds - (now - opened))
            raise SharedCacheDown(
                f"the shared cache is not asked for {wait:.2f} s more "
                f"(it did not answer: {self.last_error})"
            )

    def succeeded(self, trial: bool) -> None:
        """A call answered: a trial's answer closes the circuit."""
        if not trial:
            return
        with self._lock:
            if self._opened_at is None:
                return
            away = self._clock() - self._down_since
            self._opened_at = self._trial_at = None
        log.warning("the shared cache answers again after %.1f s away", away)

    def failed(self, exc: BaseException, trial: bool) -> None:
        """A call failed for want of the shared cache: open (again) from now."""
        error = f"{type(exc).__name__}: {str(exc)[:200]}"
        with self._lock:
            now = self._clock()
            self.failures += 1
            self.last_error = error
            opening = self._opened_at is None
            if opening or trial:
                self._opened_at = now
                self._trial_at = None
            if opening:
                self.outages += 1
                self._down_since = now
        if opening:
            log.warning(
                "the shared cache does not answer (%s): until it does, what needs it falls "
                "back to this machine (the rate limit to this machine's buckets); it is asked "
                "again every %g s",
                error,
                self.retry_seconds,
            )

    def release(self, trial: bool) -> None:
        """A call ended with an error that says nothing of the shared cache."""
        if trial:
            with self._lock:
                self._trial_at = None

    def status(self) -> dict[str, Any]:
        """What health says of it: state, seconds down, the last error and the counts."""
        with self._lock:
            now = self._clock()
            out: dict[str, Any] = {"circuit": self._state(now), "outages": self.outages}
            if self._opened_at is not None:
                out["downSeconds"] = round(now - self._down_since, 3)
                out["retryInSeconds"] = round(
                    max(0.0, self.retry_seconds - (now - self._opened_at)), 3
                )
                out["lastError"] = self.last_error
                out["refused"] = self.refused
            return out


_circuits: dict[tuple[str, str], Circuit] = {}
_circuits_lock = threading.Lock()


def circuit(alias: str = "default") -> Circuit:
    """The circuit in front of cache ``alias`` as the settings configure it now."""
    from django.conf import settings

    key = (alias, repr(settings.CACHES.get(alias)))
    with _circuits_lock:
        found = _circuits.get(key)
        if found is None:
            retry = getattr(settings, "TM_REDIS_RETRY_SECONDS", DEFAULT_RETRY_SECONDS)
            found = _circuits[key] = Circuit(float(retry))
        return found


def reset() -> None:
    """Forget every circuit (tests)."""
    with _circuits_lock:
        _circuits.clear()


def cache(alias: str = "default") -> Any:
    """The Django cache under ``alias`` (this thread's instance)."""
    from django.core.cache import caches

    return caches[alias]


def call(run: Callable[[], T], alias: str = "default") -> T:
    """``run()`` (which asks cache ``alias``) through its circuit.

    Raises:
        SharedCacheDown: The circuit is open, or ``run`` failed for want of the cache (the
            cause is chained); any other error of ``run`` is raised as it was.
    """
    gate = circuit(alias)
    trial = gate.admit()
    try:
        value = run()
    except Exception as exc:
        if not is_outage(exc):
            gate.release(trial)
            raise
        gate.failed(exc, trial)
        raise SharedCacheDown(f"the shared cache did not answer: {gate.last_error}") from exc
    gate.succeeded(trial)
    return value
