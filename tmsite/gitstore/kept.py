"""Heavy answers — a blame, a history walk, a deep tree — kept once, computed once at a time.

What a commit and a path give never changes, so a heavy answer is computed once for every worker
and every machine, and only once at a time:

* **kept** — in this process's :data:`~tmsite.gitstore.cache.READS`, and in the box's shared
  store: Redis when ``TM_REDIS_URL`` is set (every machine; asked through the circuit of
  :mod:`tmsite.core.sharedcache`), this machine's files under ``var/git-kept/`` otherwise, or
  while Redis does not answer. A key names the repository, the commit, the path, what was
  asked and :data:`CODE` (the library's own source, so a new algorithm never reads an old
  answer). The files are bounded (``TM_GIT_KEPT_BYTES``, 512 MiB): past it, the oldest go.
* **once at a time** — threads of a worker asking the same key wait for the first one's answer;
  workers and machines wait on a lock in the shared store (a lock file, or a Redis key that
  expires) and read the answer it leaves. A wait is bounded (:data:`WAIT_SECONDS`): past it,
  or when the lock's holder is gone, the waiter computes the answer itself.
* **abandoned** — a waiter whose client went away stops waiting (``tmsite.core.work.check``),
  and a computation stops at its next unit of work; nothing is kept of it, and the next asker
  computes it again.
* **too costly** — a computation runs as heavy work (``tmsite.core.work.heavy``): for a
  rate-limited caller it stops where it would cost more than a whole budget. :class:`Costly`
  is then kept in its place, so the next such caller is refused at once, without the work; a
  caller with no limit (the operator, the box's own loopback) computes it, and its answer
  replaces the mark.

Spec: ANY2, GIT.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import pickle
import secrets
import tempfile
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from tmsite.core import sharedcache, work
from tmsite.gitstore.cache import READS

T = TypeVar("T")

log = logging.getLogger("tmsite.gitstore")

#: The longest a waiter waits for another worker's answer before computing it itself.
WAIT_SECONDS = 120.0
#: Seconds between two looks of a waiter (and two checks that its client is still there).
POLL_SECONDS = 0.05
#: A Redis lock's life: a holder that died frees its key after this.
LOCK_SECONDS = 300
#: The files kept under ``var/git-kept/`` by default.
DEFAULT_KEPT_BYTES = 512 * 1024 * 1024
#: Writes between two trims of the files to their bound.
TRIM_EVERY = 64


def _code_version() -> str:
    """A digest of this library's source: answers computed by other code are not read."""
    digest = hashlib.sha256()
    for source in sorted(Path(__file__).parent.glob("*.py")):
        with contextlib.suppress(OSError):
            digest.update(source.read_bytes())
    return digest.hexdigest()[:16]


#: What the answers kept now were computed by.
CODE = _code_version()


def store_key(key: tuple[object, ...]) -> str:
    """The name of ``key`` in the shared store."""
    return hashlib.sha256(repr((CODE, key)).encode("utf-8", "replace")).hexdigest()


# ---- the stores ------------------------------------------------------------------------------


class FileStore:
    """Answers as files under one directory, locked between processes with ``flock``.

    Args:
        root: The directory (made when first written).
        max_bytes: The bound of the files; the oldest written go past it.
    """

    def __init__(self, root: Path, max_bytes: int) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self._writes = 0

    def _path(self, name: str) -> Path:
        return self.root / name[:2] / f"{name}.pickle"

    def get(self, name: str) -> Any:
        """The answer kept under ``name``, or None."""
        try:
            return pickle.loads(self._path(name).read_bytes())
        except Exception:  # a missing, unreadable, torn or foreign file: as if absent
            return None

    def put(self, name: str, value: object) -> None:
        """Keep ``value`` under ``name`` (written whole, then renamed into place)."""
        path = self._path(name)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as out:
                pickle.dump(value, out, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(out.name, path)
        except OSError as exc:
            log.warning("a heavy answer was not kept on disk: %s", exc)
            return
        self._writes += 1
        if self._writes % TRIM_EVERY == 1:
            self.trim()

    def trim(self) -> None:
        """Remove the oldest files until the rest fit the bound."""
        files: list[tuple[float, int, Path]] = []
        with contextlib.suppress(OSError):
            for path in self.root.glob("*/*.pickle"):
                with contextlib.suppress(OSError):
                    stat = path.stat()
                    files.append((stat.st_mtime, stat.st_size, path))
        total = sum(size for _at, size, _path in files)
        for _at, size, path in sorted(files):
            if total <= self.max_bytes:
                break
            with contextlib.suppress(OSError):
                path.unlink()
                total -= size

    @contextlib.contextmanager
    def lock(self, name: str) -> Iterator[bool]:
        """Hold ``name``'s lock file if no other process does: whether it was taken."""
        path = self.root / name[:2] / f"{name}.lock"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            handle = path.open("a+b")
        except OSError:
            yield True  # no lock to be had: compute alone
            return
        with handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                with contextlib.suppress(OSError):
                    path.unlink()
                fcntl.flock(handle, fcntl.LOCK_UN)


class RedisStore:
    """Answers in the shared cache (Redis), through its circuit; a lock is a key that expires.

    Every method raises :class:`~tmsite.core.sharedcache.SharedCacheDown` when Redis does not
    answer (the caller falls back to this machine's files).
    """

    alias = "default"

    def get(self, name: str) -> Any:
        """The answer kept under ``name``, or None."""
        cache = sharedcache.cache(self.alias)
        blob = sharedcache.call(lambda: cache.get(f"gitkept:{name}"), self.alias)
        return None if blob is None else pickle.loads(blob)

    def put(self, name: str, value: object) -> None:
        """Keep ``value`` under ``name``, for good (a commit's answer never changes)."""
        blob = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        cache = sharedcache.cache(self.alias)
        sharedcache.call(lambda: cache.set(f"gitkept:{name}", blob, None), self.alias)

    @contextlib.contextmanager
    def lock(self, name: str) -> Iterator[bool]:
        """Hold ``name``'s lock key if no one does: whether it was taken."""
        cache = sharedcache.cache(self.alias)
        key = f"gitkept-lock:{name}"
        token = secrets.token_hex(8)
        taken = sharedcache.call(lambda: cache.add(key, token, LOCK_SECONDS), self.alias)
        try:
            yield bool(taken)
        finally:
            if taken:
                with contextlib.suppress(sharedcache.SharedCacheDown):
                    if sharedcache.call(lambda: cache.get(key), self.alias) == token:
                        sharedcache.call(lambda: cache.delete(key), self.alias)


def _settings() -> tuple[bool, Path | None, int]:
    """Whether Redis is configured, the files' directory (None: not Django), their bound."""
    from django.conf import settings

    if not settings.configured:
        return False, None, DEFAULT_KEPT_BYTES
    var = getattr(settings, "VAR_DIR", None)
    bound = int(getattr(settings, "TM_GIT_KEPT_BYTES", DEFAULT_KEPT_BYTES))
    root = Path(var) / "git-kept" if var is not None else None
    return bool(getattr(settings, "TM_REDIS_URL", "")), root, bound


_files: dict[tuple[Path, int], FileStore] = {}


def stores() -> list[FileStore | RedisStore]:
    """The shared stores to use, in order: Redis when configured, then this machine's files."""
    redis, root, bound = _settings()
    out: list[FileStore | RedisStore] = [RedisStore()] if redis else []
    if root is not None:
        found = _files.get((root, bound))
        if found is None:
            found = _files[(root, bound)] = FileStore(root, bound)
        out.append(found)
    return out


# ---- once at a time --------------------------------------------------------------------------


@dataclass(frozen=True)
class Costly:
    """Kept in place of an answer whose computation went past a caller's whole budget.

    A rate-limited caller asking it again is refused at once, without the work; a caller with
    no limit (the operator, the box's own loopback) computes it, and the answer replaces this.
    It keeps what the computation had finished (``OverBudget.progress``) for the refusal.
    """

    tokens: float
    progress: object = None


class _Flight:
    """One computation in this process, and the threads waiting on it."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: Any = None


_flights: dict[Hashable, _Flight] = {}
_flights_lock = threading.Lock()


def _usable(value: Any) -> Any:
    """``value`` if it is an answer, else None (then the answer is computed).

    None too for :class:`Costly` when the request in flight may spend more than it cost (no
    limit, or a larger budget than the one it went past).

    Raises:
        OverBudget: it is :class:`Costly` and the request in flight may not spend that much.
    """
    if isinstance(value, Costly):
        allowed = work.allowance()
        if allowed is not None and value.tokens > allowed:
            raise work.OverBudget(value.tokens, allowed, value.progress)
        return None  # no limit, or a larger budget than the one it went past: computed
    return value


def peek(key: tuple[object, ...], size: Callable[[Any], int]) -> Any:
    """The answer kept under ``key`` in this process or a shared store, else None.

    Nothing is computed or waited for: a caller with a cheaper way to its answer (a part of a
    kept whole) looks here first. An answer found in a shared store is kept in the process.
    """
    found = READS.get(key)
    if found is not None:
        return None if isinstance(found, Costly) else found
    name = store_key(key)
    for store in stores():
        try:
            found = store.get(name)
        except sharedcache.SharedCacheDown:
            continue
        if found is not None and not isinstance(found, Costly):
            return READS.put(key, found, size(found))
    return None


def once(key: tuple[object, ...], compute: Callable[[], T], size: Callable[[T], int]) -> T:
    """The answer under ``key``: kept, else computed by ``compute`` once at a time, then kept.

    ``compute`` runs as heavy work (``tmsite.core.work.heavy``); ``size`` estimates an
    answer's bytes for the process's cache.

    Raises:
        Abandoned: the client of the request in flight went away (while waiting or computing).
        OverBudget: the computation went past the request's allowance, now or before.
    """
    found = _usable(READS.get(key))
    if found is not None:
        return found  # type: ignore[no-any-return]
    while True:
        with _flights_lock:
            flight = _flights.get(key)
            leader = flight is None
            if flight is None:
                flight = _flights[key] = _Flight()
        if leader:
            break
        while not flight.done.wait(POLL_SECONDS):
            work.check()
        found = _usable(flight.value)
        if found is not None:
            return found  # type: ignore[no-any-return]
        # the leader failed or was abandoned: the next asker leads
    try:
        value = _shared(key, compute)
    except work.OverBudget as over:
        flight.value = READS.put(key, Costly(over.tokens, over.progress), 64)
        raise
    else:
        flight.value = READS.put(key, value, size(value))
        return value
    finally:
        with _flights_lock:
            _flights.pop(key, None)
        flight.done.set()


def _shared(key: tuple[object, ...], compute: Callable[[], T]) -> T:
    """The answer from the first shared store that answers, else computed under its lock."""
    name = store_key(key)
    for store in stores():
        try:
            return _through(store, name, compute)
        except sharedcache.SharedCacheDown:
            continue  # Redis does not answer: this machine's files
    with work.heavy():
        return compute()


def _through(store: FileStore | RedisStore, name: str, compute: Callable[[], T]) -> T:
    """The answer kept in ``store``, else computed while holding its lock there, and kept."""
    end = time.monotonic() + WAIT_SECONDS
    while True:
        found = _usable(store.get(name))
        if found is not None:
            return found  # type: ignore[no-any-return]
        with store.lock(name) as taken:
            if taken or time.monotonic() > end:
                found = _usable(store.get(name))  # kept while the lock was being taken
                if found is not None:
                    return found  # type: ignore[no-any-return]
                try:
                    with work.heavy():
                        value = compute()
                except work.OverBudget as over:
                    with contextlib.suppress(sharedcache.SharedCacheDown):
                        store.put(name, Costly(over.tokens, over.progress))
                    raise
                with contextlib.suppress(sharedcache.SharedCacheDown):
                    store.put(name, value)
                return value
        time.sleep(POLL_SECONDS)
        work.check()
