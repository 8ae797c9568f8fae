"""The per-caller token bucket and the stores that share it between processes and machines.

A caller starts with ``burst`` tokens; a request spends its cost; tokens come back at
``refill`` a second up to ``burst``. A request that costs more than is left is refused with
the whole seconds after which it would pass (``retryAfter``), and nothing is spent. What a
request turns out to cost beyond what it spent up front is charged after it ran (``charge``):
the bucket may go into debt, down to ``-burst``, and the caller's next requests wait it out.

Spec: OP1.

Where buckets live (``TM_RATE_STORE``):

* ``redis`` — one hash per caller in Redis, updated by one Lua script, so every worker of every
  machine spends from the same bucket atomically. Chosen by ``auto`` when the default cache is
  Redis (``TM_REDIS_URL``). While Redis does not answer (``tmsite.core.sharedcache``: short
  socket timeouts, then a circuit that stops asking it for a while), each machine limits on its
  own ``file`` buckets: a caller may spend a burst on each machine, never an unlimited amount,
  and health counts the requests so decided (``local_takes``, in the file's header, for every
  worker of the machine). When Redis answers again the
  shared buckets are used again, as they were left.
* ``file`` — a fixed table of slots in a memory-mapped file in ``var/``, read and written under
  an exclusive ``flock``: every worker process of one machine shares it, and a request costs a
  lock and a few bytes, not a database write. Chosen by ``auto`` otherwise.
* ``memory`` — this process only (stdio, tests).

**What is kept, and for how long.** A store never sees an address as such: it keys the bucket by
HMAC-SHA256 of the address under a random secret that the store makes for the current UTC day
(kept in the Redis cache for two days, or in the file's header) and truncates to 16 bytes. An
entry lives only as long as it matters: a bucket that would be full again is the same as no
bucket, so Redis expires it then and the file reuses its slot. When the day turns, a new secret
is made and yesterday's keys cannot be linked to today's; the file is wiped. None of this is the
request log (``tmsite.oplog.models``), which holds no address and no hash of one.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import math
import mmap
import os
import secrets
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from django.conf import settings

from tmsite.callers.clock import Clock, system_clock
from tmsite.core import sharedcache
from tmsite.core.settled import settled

#: Slack for float arithmetic: ``retryAfter`` seconds of refill always cover the cost.
EPSILON = 1e-6
DAY = 86_400


@dataclass(frozen=True)
class Policy:
    """``burst`` tokens at most; ``refill`` tokens come back each second."""

    burst: float
    refill: float

    def __post_init__(self) -> None:
        if self.burst <= 0 or self.refill <= 0:
            raise ValueError("a rate policy needs a positive burst and refill")

    @property
    def full_after(self) -> float:
        """Seconds an empty bucket takes to fill: after that a bucket is as good as absent."""
        return self.burst / self.refill


@dataclass(frozen=True)
class Decision:
    """What the bucket said about one request.

    Attributes:
        allowed: Whether the request may run.
        cost: The tokens it cost (or would have).
        remaining: Tokens left after it (or now, when refused).
        retry_after: Whole seconds after which the same request would pass; 0 when allowed.
        reset: Whole seconds until the bucket is full again.
        policy: The policy it was measured against.
    """

    allowed: bool
    cost: float
    remaining: float
    retry_after: int
    reset: int
    policy: Policy


def _refilled(
    tokens: float | None, stamp: float | None, now: float, policy: Policy
) -> tuple[float, float]:
    """The bucket refilled to ``now``: ``(tokens, stamp)``.

    A missing bucket is a full one. Time never runs backwards for a bucket (a machine whose
    clock is behind neither refills nor drains it).
    """
    if tokens is None or stamp is None:
        return policy.burst, now
    if now > stamp:
        return min(policy.burst, tokens + (now - stamp) * policy.refill), now
    return tokens, stamp


def step(
    tokens: float | None, stamp: float | None, now: float, cost: float, policy: Policy
) -> tuple[bool, float, float]:
    """One bucket step: ``(allowed, tokens after, stamp after)``."""
    tokens, stamp = _refilled(tokens, stamp, now, policy)
    if tokens >= cost - EPSILON:
        return True, max(0.0, tokens - cost), stamp
    return False, tokens, stamp


def owe(
    tokens: float | None, stamp: float | None, now: float, extra: float, policy: Policy
) -> tuple[float, float]:
    """One charge after the fact: ``(tokens after, stamp after)``.

    The bucket refills as in ``step``, then ``extra`` is spent whatever is left, down to
    ``-burst`` at most (so a caller waits at most twice ``full_after`` for a full bucket). A
    negative ``extra`` gives tokens back (what a request was charged up front beyond what it
    cost), up to ``burst``.
    """
    tokens, stamp = _refilled(tokens, stamp, now, policy)
    return min(policy.burst, max(-policy.burst, tokens - extra)), stamp


def idle_full(tokens: float, stamp: float, now: float, policy: Policy) -> bool:
    """Whether a bucket left at ``tokens`` at ``stamp`` is full again by ``now`` (as absent)."""
    return now - stamp >= policy.full_after + max(0.0, -tokens) / policy.refill


def decision(allowed: bool, cost: float, tokens: float, policy: Policy) -> Decision:
    """The decision for a bucket holding ``tokens`` after the step."""
    retry_after = 0
    if not allowed:
        retry_after = max(1, math.ceil((cost - tokens) / policy.refill - EPSILON))
    reset = max(0, math.ceil((policy.burst - tokens) / policy.refill - EPSILON))
    return Decision(allowed, cost, tokens, retry_after, reset, policy)


def digest(secret: bytes, address: str) -> bytes:
    """The 16-byte key of a caller's bucket under one day's secret."""
    return hmac.new(secret, address.encode("utf-8"), hashlib.sha256).digest()[:16]


class Store(Protocol):
    """Where buckets live: one atomic take per request, whatever shares the store."""

    def take(self, address: str, cost: float, now: float, policy: Policy) -> tuple[bool, float]:
        """Spend ``cost`` from the caller's bucket if it holds that much.

        Returns:
            Whether it was spent, and the tokens left.
        """
        ...

    def charge(self, address: str, extra: float, now: float, policy: Policy) -> float:
        """Spend ``extra`` more from the caller's bucket, into debt if need be (``owe``).

        Returns:
            The tokens left (below zero: the caller's debt).
        """
        ...

    def day_secret(self, now: float) -> bytes:
        """The secret this store keys callers by on the UTC day of ``now`` (made if need be)."""
        ...


# --- this process -----------------------------------------------------------------------------


class MemoryStore:
    """Buckets in this process's memory (stdio, tests): not shared with any other process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._day = -1
        self._secret = b""
        self._buckets: dict[bytes, tuple[float, float]] = {}

    def _roll(self, now: float) -> bytes:
        """Today's secret (under the lock); a new day forgets every bucket."""
        day = int(now // DAY)
        if day != self._day:
            self._day, self._secret = day, secrets.token_bytes(32)
            self._buckets.clear()
        return self._secret

    def day_secret(self, now: float) -> bytes:
        """``Store.day_secret``: this process's secret for the day."""
        with self._lock:
            return self._roll(now)

    def take(self, address: str, cost: float, now: float, policy: Policy) -> tuple[bool, float]:
        """``Store.take`` under this process's lock; a new day forgets every bucket."""
        with self._lock:
            key = digest(self._roll(now), address)
            tokens, stamp = self._buckets.get(key, (None, None))
            allowed, tokens, stamp = step(tokens, stamp, now, cost, policy)
            self._buckets[key] = (tokens, stamp)
            if len(self._buckets) > 10_000:
                self._buckets = {
                    k: v for k, v in self._buckets.items() if not idle_full(*v, now, policy)
                }
            return allowed, tokens

    def charge(self, address: str, extra: float, now: float, policy: Policy) -> float:
        """``Store.charge`` under this process's lock."""
        with self._lock:
            key = digest(self._roll(now), address)
            tokens, stamp = self._buckets.get(key, (None, None))
            tokens, stamp = owe(tokens, stamp, now, extra, policy)
            self._buckets[key] = (tokens, stamp)
            return tokens


# --- one machine: a locked, memory-mapped file ------------------------------------------------

_MAGIC = b"TMRB"
_HEADER = struct.Struct("<4sIq32s")  # magic, slot count, day, secret
_SWEPT = struct.Struct("<d")  # when the table was last swept, in the header's spare bytes
_SWEPT_AT = _HEADER.size
#: Takes made while Redis was away, when the file stands in for it (``SharedStore``).
_COUNT = struct.Struct("<Q")
_COUNT_AT = _SWEPT_AT + _SWEPT.size
_HEADER_SIZE = 64
_SLOT = struct.Struct("<16sdd")  # key, tokens, stamp
_EMPTY_KEY = bytes(16)
#: Seconds between sweeps of the whole table for buckets that are full again.
SWEEP_EVERY = 60.0


class FileStore:
    """Buckets in a memory-mapped file shared by every process of one machine.

    The file is a header and ``slots`` fixed slots; a caller's slot is found by open addressing
    from its key over at most ``probes`` slots. A slot is free when it is empty or its bucket
    would be full by now. When every probed slot holds a live bucket, the one idle longest is
    given up (its caller starts again full): that takes more live callers than ``probes``
    landing in one neighbourhood of a 65,536-slot table.

    A bucket that is full again is erased, not just reused: the probed slots on every take, and
    the whole table at most every ``SWEEP_EVERY`` seconds (a pass over 2 MiB) — so a caller's
    key stays in the file only while its bucket is below full, plus at most that long while
    requests come.
    """

    def __init__(self, path: Path, slots: int = 65_536, probes: int = 32) -> None:
        self.path = Path(path)
        self.slots = slots
        self.probes = probes
        self.size = _HEADER_SIZE + slots * _SLOT.size
        self._pid = -1
        self._fd = -1
        self._map: mmap.mmap | None = None
        self._thread_lock = threading.Lock()

    def _open(self) -> tuple[int, mmap.mmap]:
        if self._pid != os.getpid() or self._map is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                if os.fstat(fd).st_size != self.size:
                    os.ftruncate(fd, 0)
                    os.ftruncate(fd, self.size)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
            self._pid, self._fd = os.getpid(), fd
            self._map = mmap.mmap(fd, self.size)
        return self._fd, self._map

    @contextmanager
    def _locked(self) -> Iterator[mmap.mmap]:
        with self._thread_lock:
            fd, table = self._open()
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                yield table
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def _roll(self, table: mmap.mmap, now: float) -> bytes:
        """Today's secret (under the lock); a new day (or a foreign file) wipes the table."""
        magic, slots, day, secret = _HEADER.unpack_from(table, 0)
        today = int(now // DAY)
        if magic != _MAGIC or slots != self.slots or day != today:
            secret = secrets.token_bytes(32)
            table[_HEADER_SIZE:] = bytes(self.size - _HEADER_SIZE)
            _HEADER.pack_into(table, 0, _MAGIC, self.slots, today, secret)
        return bytes(secret)

    def day_secret(self, now: float) -> bytes:
        """``Store.day_secret``: the secret in the file's header, shared by the machine."""
        with self._locked() as table:
            return self._roll(table, now)

    def take(
        self, address: str, cost: float, now: float, policy: Policy, counted: bool = False
    ) -> tuple[bool, float]:
        """``Store.take`` under the file's lock; a new day (or a foreign file) wipes the table.

        ``counted`` adds one to the file's count of takes (``counted_takes``), kept across
        days: what ``SharedStore`` decided here while Redis was away, for every worker.
        """
        with self._locked() as table:
            if counted:
                (count,) = _COUNT.unpack_from(table, _COUNT_AT)
                _COUNT.pack_into(table, _COUNT_AT, count + 1)
            secret = self._roll(table, now)
            self._sweep(table, now, policy)
            offset, key, tokens, stamp = self._slot(table, secret, address, now, policy)
            allowed, tokens, stamp = step(tokens, stamp, now, cost, policy)
            _SLOT.pack_into(table, offset, key, tokens, stamp)
            return allowed, tokens

    def charge(self, address: str, extra: float, now: float, policy: Policy) -> float:
        """``Store.charge`` under the file's lock (a foreign file or a new day: a full bucket)."""
        with self._locked() as table:
            secret = self._roll(table, now)
            offset, key, tokens, stamp = self._slot(table, secret, address, now, policy)
            tokens, stamp = owe(tokens, stamp, now, extra, policy)
            _SLOT.pack_into(table, offset, key, tokens, stamp)
            return tokens

    def counted_takes(self) -> int:
        """The takes made with ``counted`` by every process of this machine, without one."""
        if not self.path.exists():
            return 0
        with self._locked() as table:
            (count,) = _COUNT.unpack_from(table, _COUNT_AT)
            return int(count)

    def _slot(
        self, table: mmap.mmap, secret: bytes, address: str, now: float, policy: Policy
    ) -> tuple[int, bytes, float | None, float | None]:
        """The offset of the caller's slot, its key, and its bucket (None, None: none yet)."""
        key = digest(secret, address)
        offset = _HEADER_SIZE + self._find(table, key, now, policy) * _SLOT.size
        found, tokens, stamp = _SLOT.unpack_from(table, offset)
        return (offset, key, tokens, stamp) if found == key else (offset, key, None, None)

    def _find(self, table: mmap.mmap, key: bytes, now: float, policy: Policy) -> int:
        start = int.from_bytes(key[:8], "little") % self.slots
        free: int | None = None
        oldest, oldest_stamp = start, math.inf
        for step_ in range(self.probes):
            index = (start + step_) % self.slots
            found, tokens, stamp = _SLOT.unpack_from(table, _HEADER_SIZE + index * _SLOT.size)
            if found == key:
                return index
            if found != _EMPTY_KEY and idle_full(tokens, stamp, now, policy):
                _SLOT.pack_into(table, _HEADER_SIZE + index * _SLOT.size, _EMPTY_KEY, 0, 0)
                found = _EMPTY_KEY
            if free is None and found == _EMPTY_KEY:
                free = index
            if stamp < oldest_stamp:
                oldest, oldest_stamp = index, stamp
        return free if free is not None else oldest

    def _sweep(self, table: mmap.mmap, now: float, policy: Policy) -> None:
        """Erase every bucket that is full again, at most every ``SWEEP_EVERY`` seconds."""
        (swept,) = _SWEPT.unpack_from(table, _SWEPT_AT)
        if 0 <= now - swept < SWEEP_EVERY:
            return
        _SWEPT.pack_into(table, _SWEPT_AT, now)
        slots = memoryview(table)[_HEADER_SIZE:]
        try:
            for index, (found, tokens, stamp) in enumerate(_SLOT.iter_unpack(slots)):
                if found != _EMPTY_KEY and idle_full(tokens, stamp, now, policy):
                    _SLOT.pack_into(table, _HEADER_SIZE + index * _SLOT.size, _EMPTY_KEY, 0, 0)
        finally:
            slots.release()


# --- many machines: Redis ---------------------------------------------------------------------

#: Both scripts' start: KEYS[1] the bucket; ARGV now, the amount (cost or extra), burst,
#: refill, ttl in ms. The bucket refilled to ``now`` (``tokens``, ``stamp``), as ``_refilled``.
_REFILLED = """
local now = tonumber(ARGV[1])
local amount = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local refill = tonumber(ARGV[4])
local state = redis.call('HMGET', KEYS[1], 't', 's')
local tokens = tonumber(state[1])
local stamp = tonumber(state[2])
if tokens == nil or stamp == nil then
  tokens = burst
  stamp = now
elseif now > stamp then
  tokens = math.min(burst, tokens + (now - stamp) * refill)
  stamp = now
end
"""
#: Both scripts' end: the bucket kept until it would be full again (a bucket in debt longer);
#: floats travel as strings (Lua numbers returned to Redis become integers).
_STORED = """local ttl = tonumber(ARGV[5])
if tokens < 0 then
  ttl = ttl + math.ceil(-tokens / refill * 1000)
end
redis.call('HSET', KEYS[1], 't', string.format('%.17g', tokens), 's', string.format('%.17g', stamp))
redis.call('PEXPIRE', KEYS[1], ttl)
"""
#: The same arithmetic as ``step``. Returns {allowed, tokens}.
_TAKE_SCRIPT = (
    _REFILLED
    + """local allowed = 0
if tokens >= amount - 1e-6 then
  tokens = math.max(0, tokens - amount)
  allowed = 1
end
"""
    + _STORED
    + "return {allowed, string.format('%.17g', tokens)}\n"
)
#: The same arithmetic as ``owe`` (a negative extra gives back, up to the burst). Returns the
#: tokens left.
_CHARGE_SCRIPT = (
    _REFILLED
    + "tokens = math.min(burst, math.max(-burst, tokens - amount))\n"
    + _STORED
    + "return string.format('%.17g', tokens)\n"
)


class RedisStore:
    """Buckets in the Redis behind Django's cache, shared by every machine of the box."""

    def __init__(self, alias: str = "default") -> None:
        self.alias = alias
        self._secret: tuple[int, bytes] = (-1, b"")
        #: The scripts registered with Redis, by their text.
        self._scripts: dict[str, Any] = {}
        #: The circuit's outage count when the day's secret was last agreed with Redis.
        self._agreed = -1

    def _cache(self) -> Any:
        from django.core.cache import caches

        return caches[self.alias]

    def _day_secret(self, now: float) -> bytes:
        """The day's secret, agreed with Redis once a day and again after each outage.

        A Redis that came back empty (it restarted) is given the secret this process held, if
        no other process gave it one first, so that every process keys a caller alike again.
        """
        day = int(now // DAY)
        outages = sharedcache.circuit(self.alias).outages
        if self._secret[0] != day or self._agreed != outages:
            cache = self._cache()
            name = f"tm-rate:secret:{day}"
            held = self._secret[1].hex() if self._secret[0] == day else secrets.token_hex(32)
            cache.add(name, held, 2 * DAY)
            value = cache.get(name)
            self._secret = (day, bytes.fromhex(value))
            self._agreed = outages
        return self._secret[1]

    def day_secret(self, now: float) -> bytes:
        """``Store.day_secret``: the day's secret in Redis, shared by every machine."""
        return self._day_secret(now)

    def _run(self, script: str, address: str, now: float, amount: float, policy: Policy) -> Any:
        """Run ``script`` on the caller's bucket, atomic across every machine on the Redis."""
        cache = self._cache()
        key = cache.make_and_validate_key(
            "tm-rate:b:" + digest(self._day_secret(now), address).hex()
        )
        client = cache._cache.get_client(key, write=True)
        registered = self._scripts.get(script)
        if registered is None:
            registered = self._scripts[script] = client.register_script(script)
        ttl_ms = math.ceil(policy.full_after * 1000) + 1000
        return registered(
            keys=[key],
            args=[repr(now), repr(amount), repr(policy.burst), repr(policy.refill), ttl_ms],
            client=client,
        )

    def take(self, address: str, cost: float, now: float, policy: Policy) -> tuple[bool, float]:
        """``Store.take`` as one Lua script."""
        allowed, tokens = self._run(_TAKE_SCRIPT, address, now, cost, policy)
        return bool(int(allowed)), float(tokens)

    def charge(self, address: str, extra: float, now: float, policy: Policy) -> float:
        """``Store.charge`` as one Lua script."""
        return float(self._run(_CHARGE_SCRIPT, address, now, extra, policy))


class SharedStore:
    """The Redis buckets through the shared cache's circuit; this machine's while it is away.

    The machine's buckets are its ``FileStore``, shared by its workers, which also counts the
    requests decided there (:func:`local_takes`, for health).
    """

    def __init__(self, shared: RedisStore, local: FileStore) -> None:
        self.shared = shared
        self.local = local

    def take(self, address: str, cost: float, now: float, policy: Policy) -> tuple[bool, float]:
        """``Store.take`` on Redis, else (the circuit open, or Redis failing now) locally."""
        try:
            return sharedcache.call(
                lambda: self.shared.take(address, cost, now, policy), self.shared.alias
            )
        except sharedcache.SharedCacheDown:
            return self.local.take(address, cost, now, policy, counted=True)

    def charge(self, address: str, extra: float, now: float, policy: Policy) -> float:
        """``Store.charge`` on Redis, else on the bucket this machine keeps meanwhile."""
        try:
            return sharedcache.call(
                lambda: self.shared.charge(address, extra, now, policy), self.shared.alias
            )
        except sharedcache.SharedCacheDown:
            return self.local.charge(address, extra, now, policy)

    def day_secret(self, now: float) -> bytes:
        """``Store.day_secret`` from Redis, else the machine's own (its bucket file's)."""
        try:
            return sharedcache.call(lambda: self.shared.day_secret(now), self.shared.alias)
        except sharedcache.SharedCacheDown:
            return self.local.day_secret(now)


# --- from settings ----------------------------------------------------------------------------

_stores: dict[tuple[Any, ...], Store] = {}
_stores_lock = threading.Lock()


@settled
def store_kind() -> str:
    """The store ``TM_RATE_STORE`` names (``auto`` resolved)."""
    kind = str(getattr(settings, "TM_RATE_STORE", "auto"))
    if kind == "auto":
        backend = str(settings.CACHES.get("default", {}).get("BACKEND", ""))
        return "redis" if backend.endswith("RedisCache") else "file"
    if kind not in ("redis", "file", "memory"):
        raise ValueError(f"TM_RATE_STORE must be auto, redis, file or memory, not {kind!r}")
    return kind


@settled
def _store_key() -> tuple[str, Path, tuple[Any, ...]]:
    kind = store_kind()
    return (
        kind,
        Path(settings.TM_RATE_FILE),
        (kind, str(settings.TM_RATE_FILE), repr(settings.CACHES.get("default"))),
    )


def store() -> Store:
    """The store the settings name, one per process and configuration."""
    kind, path, key = _store_key()
    with _stores_lock:
        found = _stores.get(key)
        if found is None:
            if kind == "redis":
                found = SharedStore(RedisStore(), FileStore(path))
            elif kind == "file":
                found = FileStore(path)
            else:
                found = MemoryStore()
            _stores[key] = found
        return found


def local_takes() -> int | None:
    """Requests this machine decided on its own buckets because Redis was away.

    Counted since the machine's bucket file was made; None when the buckets are not in Redis.
    """
    found = store()
    return found.local.counted_takes() if isinstance(found, SharedStore) else None


@settled
def policy() -> Policy:
    """The bucket's shape from settings: ``TM_RATE_BURST`` tokens, ``TM_RATE_REFILL`` a second."""
    return Policy(float(settings.TM_RATE_BURST), float(settings.TM_RATE_REFILL))


#: The clock every bucket reads; tests replace it with a ``FakeClock``.
clock: Clock = system_clock


def take(address: str, cost: float) -> Decision:
    """Spend ``cost`` (capped at the burst, so every read can pass after a full refill)."""
    rule = policy()
    cost = min(float(cost), rule.burst)
    allowed, tokens = store().take(address, cost, clock(), rule)
    return decision(allowed, cost, tokens, rule)


def charge(address: str, extra: float) -> Decision:
    """Spend ``extra`` more after a request ran, whatever is left (the bucket may go into debt).

    The decision is an allowed one (the request already ran); its ``remaining`` is below zero
    while the caller owes, and its ``reset`` counts the debt in.
    """
    rule = policy()
    tokens = store().charge(address, float(extra), clock(), rule)
    return decision(True, float(extra), tokens, rule)
