"""``GET /api/v1/health``: is the database up, is the cache up, which mounts are ready.

The database is what every request of every worker needs, so its failing answers **503** (a
load balancer takes the machine out). The shared cache (Redis) is an aid: while it does not
answer every read still answers, the rate limit counts on this machine's buckets, and health
answers 200 with ``"status": "degraded"`` — taking out machines that all share the one Redis
would make its outage theirs. The cache is asked through its circuit
(``tmsite.core.sharedcache``), so a Redis that is gone or frozen costs this check at most the
socket timeout, and nothing while the circuit is open; the answer says this worker's circuit
(state, outages, the last error) and, with the buckets in Redis, the requests the machine's
workers decided on its own buckets while Redis was away (``localTakes``).
A mount that is not ready answers 200 with ``"status": "degraded"`` too: the other mounts
still serve. ``reasons`` says, in a sentence each, why an answer is not ``ok``. A mount is
ready when it lists its own root within ``MOUNT_DEADLINE`` seconds (or, when it defines
``ready()``, when that returns true). Health checks are neither rate-limited nor written to
the request log.

``bus`` is the answering process's change bus (``tmsite.bus.changes.status``): its
backend (``local``, or ``redis`` on many machines), its listeners and counts, and with Redis the
receiving connection's state — ``idle`` until the process's first listen stream, then ``up``,
``down`` (how long, the last error) or ``connecting``. A bus that is down answers ``degraded``
with its reason: the process's streams were ended and changes reach only its own streams until
it is back. Its own publishing is told apart (``publishing``: ``ok``, or ``failing`` with the
error, and ``held``, the changes waiting to be sent): failing answers ``degraded`` too.

``requestLog`` is the answering process's request-log buffer (``recorder.status``): rows
waiting, rows dropped since it started because the database could not take them for longer
than the buffer lasts (``dropped``), and writes that failed in a row. It informs; it does not
change the status.

Spec: OP5.
"""

from __future__ import annotations

import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from django.core.cache import caches
from django.db import DatabaseError, connection, connections
from django.http import HttpRequest, JsonResponse
from ninja import Router

from tmsite.bus import changes
from tmsite.callers import buckets
from tmsite.core import sharedcache
from tmsite.mounts.base import Mount
from tmsite.oplog import recorder

router = Router(tags=["operations"])

MOUNT_DEADLINE = 3.0


def _timed(check: Any) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        detail = check()
        out: dict[str, Any] = {"ok": True}
        if isinstance(detail, dict):
            out.update(detail)
    except Exception as exc:
        out = {"ok": False, "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    out["ms"] = round((time.perf_counter() - started) * 1000, 2)
    return out


def _select_one() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


def database() -> dict[str, Any]:
    """A ``SELECT 1`` on the default database: ``ok``, the vendor, how long it took.

    A thread's kept connection (``CONN_MAX_AGE``) that the database dropped while it was away
    fails once; that is not the database being down, so such a failure is tried again once on a
    new connection.
    """

    def check() -> dict[str, Any]:
        kept = connection.connection is not None and not connection.in_atomic_block
        try:
            _select_one()
        except DatabaseError:
            if not kept:
                raise
            connection.close()
            _select_one()
        return {"vendor": connection.vendor}

    return _timed(check)


def shared_cache() -> dict[str, Any]:
    """A set, get and delete of a random key in the default cache, through its circuit.

    ``ok``, backend, time, and the circuit's ``status()``; with the rate limit's counts.
    """
    cache = caches["default"]

    def probe() -> None:
        key, value = "tm-health:" + secrets.token_hex(8), secrets.token_hex(8)
        cache.set(key, value, 10)
        found = cache.get(key)
        cache.delete(key)
        if found != value:
            raise RuntimeError("the cache did not return what was stored")

    def check() -> dict[str, Any]:
        try:
            sharedcache.call(probe)
        except sharedcache.SharedCacheDown as exc:
            cause = exc.__cause__
            if cause is not None:  # this check found it down: say what the cache said
                raise cause from None
            raise
        return {"backend": type(cache).__name__}

    out = _timed(check)
    out.setdefault("backend", type(cache).__name__)
    out.update(sharedcache.circuit().status())
    local = buckets.local_takes()
    if local is not None:
        out["localTakes"] = local
    return out


def _mount_ready(mount: Mount) -> dict[str, Any]:
    def check() -> None:
        try:
            probe = getattr(mount, "ready", None)
            if callable(probe):
                if not probe():
                    raise RuntimeError("not ready")
            else:
                mount.namespace.read(str(mount.root))
        finally:
            connections.close_all()

    return _timed(check)


def mounts() -> dict[str, dict[str, Any]]:
    """Each mount's readiness, checked concurrently under one deadline."""
    from tmsite.mounts.registry import namespace

    found = namespace().mounts
    out: dict[str, dict[str, Any]] = {}
    with ThreadPoolExecutor(max_workers=max(1, len(found))) as pool:
        futures = {name: pool.submit(_mount_ready, mount) for name, mount in found.items()}
        deadline = time.monotonic() + MOUNT_DEADLINE
        for name, future in futures.items():
            try:
                out[name] = future.result(timeout=max(0.0, deadline - time.monotonic()))
            except FutureTimeout:
                out[name] = {"ok": False, "error": f"no answer within {MOUNT_DEADLINE:g} s"}
    return out


def report() -> tuple[int, dict[str, Any]]:
    """The status code and body of a health check."""
    body: dict[str, Any] = {"database": database(), "cache": shared_cache(), "mounts": mounts()}
    body["bus"] = changes.status()
    body["requestLog"] = recorder.status()
    reasons = []
    if not body["database"]["ok"]:
        reasons.append(f"the database does not answer: {body['database']['error']}")
    if not body["cache"]["ok"]:
        reasons.append(
            f"the shared cache does not answer ({body['cache']['error']}): reads still answer, "
            "the rate limit counts on this machine's buckets"
        )
    if body["bus"].get("state") == "down":
        reasons.append(
            f"the change bus does not reach Redis ({body['bus'].get('lastError', '')}): listen "
            "streams were told to listen again, changes reach this process's streams only"
        )
    if body["bus"].get("publishing") == "failing":
        reasons.append(
            f"the change bus cannot publish to Redis ({body['bus'].get('publishError', '')}): "
            f"{body['bus'].get('held', 0)} change(s) held for the other machines, tried again"
        )
    for name, item in body["mounts"].items():
        if not item["ok"]:
            reasons.append(f"the mount {name} is not ready: {item['error']}")
    if not body["database"]["ok"]:
        return 503, {"status": "down", **body, "reasons": reasons}
    if reasons:
        return 200, {"status": "degraded", **body, "reasons": reasons}
    return 200, {"status": "ok", **body}


def answer(status: int, body: dict[str, Any]) -> JsonResponse:
    """A check's answer (health, live, ready), never cached."""
    response = JsonResponse(body, status=status)
    response["Cache-Control"] = "no-store"
    return response


@router.get("/health", include_in_schema=True, summary="Database, cache and mount readiness")
def health(request: HttpRequest) -> JsonResponse:
    """The health report: 503 when the database is down."""
    return answer(*report())
