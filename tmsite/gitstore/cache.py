"""Bounded in-process caches for reads that can never change.

Everything read at a commit is immutable, and so is every object named by its id. Two
least-recently-used maps bounded by an estimate of the bytes they hold keep those answers:

* :data:`OBJECTS` — parsed objects (trees, commit headers, small blob contents, sizes), keyed by
  ``(repository path, object id, what)``;
* :data:`READS` — finished answers (a listing, a log, a blame…), keyed by
  ``(repository path, commit, path, facet)``.

When Django is configured and the setting ``TM_GITSTORE_DJANGO_CACHE`` names a cache alias, the
finished answers are also kept there, so that several worker processes share them; the setting
is off by default because in-process memory is faster for one process. The shared cache is
asked through its circuit (``tmsite.core.sharedcache``): while it does not answer, a read is a
miss there and an answer is kept in process memory only.

Spec: GIT.
"""

from __future__ import annotations

import contextlib
import pickle
import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any, TypeVar

from tmsite.core import sharedcache

T = TypeVar("T")

_MISSING: Any = object()


class ByteLRU:
    """A thread-safe least-recently-used map bounded by the bytes of its values.

    Args:
        max_bytes: The bound; the least recently used entries are dropped past it.
        max_item_bytes: Values larger than this are not kept at all.
    """

    def __init__(self, max_bytes: int, max_item_bytes: int | None = None) -> None:
        self.max_bytes = max_bytes
        self.max_item_bytes = max_item_bytes if max_item_bytes is not None else max_bytes // 8
        self._data: OrderedDict[Hashable, tuple[object, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value under ``key`` (making it the most recent), or ``default``."""
        with self._lock:
            item = self._data.get(key, _MISSING)
            if item is _MISSING:
                self.misses += 1
                return default
            self._data.move_to_end(key)
            self.hits += 1
            return item[0]

    def put(self, key: Hashable, value: T, size: int) -> T:
        """Keep ``value`` under ``key``, counted as ``size`` bytes; returns ``value``."""
        size = max(int(size), 1)
        if size > self.max_item_bytes:
            return value
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._data[key] = (value, size)
            self._bytes += size
            while self._bytes > self.max_bytes and self._data:
                _key, (_value, dropped) = self._data.popitem(last=False)
                self._bytes -= dropped
        return value

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._data.clear()
            self._bytes = 0
            self.hits = 0
            self.misses = 0

    @property
    def size_bytes(self) -> int:
        """The bytes currently counted."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._data)


#: Parsed objects: trees, commit headers, small blobs, object sizes. Sizes are estimates of what
#: Python holds for them (a parsed tree entry is about 300 bytes, not the 30 of its raw form).
OBJECTS = ByteLRU(max_bytes=40 * 1024 * 1024, max_item_bytes=2 * 1024 * 1024)
#: Finished answers at a commit: listings, logs, blames, lookups. Heavy ones are also kept in
#: the box's shared store (:mod:`tmsite.gitstore.kept`), so a small share here is enough.
READS = ByteLRU(max_bytes=32 * 1024 * 1024, max_item_bytes=8 * 1024 * 1024)


def clear_all() -> None:
    """Empty every in-process cache (the shared Django cache is left alone)."""
    OBJECTS.clear()
    READS.clear()


def _django_alias() -> str | None:
    from django.conf import settings

    if not settings.configured:
        return None
    alias = getattr(settings, "TM_GITSTORE_DJANGO_CACHE", None)
    return str(alias) if alias else None


def _django_key(key: tuple[object, ...]) -> str:
    import hashlib

    return "gitstore:" + hashlib.sha256(repr(key).encode("utf-8", "replace")).hexdigest()


def read_get(key: tuple[object, ...]) -> Any:
    """A finished answer from the in-process cache, else the shared one, else None."""
    value = READS.get(key)
    if value is not None:
        return value
    alias = _django_alias()
    if alias is None:
        return None
    try:
        blob = sharedcache.call(lambda: sharedcache.cache(alias).get(_django_key(key)), alias)
    except sharedcache.SharedCacheDown:
        return None
    if blob is None:
        return None
    value = pickle.loads(blob)
    READS.put(key, value, len(blob))
    return value


def read_put(key: tuple[object, ...], value: T, size: int) -> T:
    """Keep a finished answer in process memory (and in the shared cache when configured)."""
    READS.put(key, value, size)
    alias = _django_alias()
    if alias is not None:
        blob = pickle.dumps(value)
        with contextlib.suppress(sharedcache.SharedCacheDown):
            sharedcache.call(
                lambda: sharedcache.cache(alias).set(_django_key(key), blob, None), alias
            )
    return value
