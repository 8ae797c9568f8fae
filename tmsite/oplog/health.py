"""``GET /api/v1/health``: is the database up, is the cache up, which mounts are ready.

The database and the cache are what every worker shares, so either failing answers **503**
(a load balancer takes the machine out). A mount that is not ready answers 200 with
``"status": "degraded"``: the other mounts still serve. A mount is ready when it lists its own
root within ``MOUNT_DEADLINE`` seconds (or, when it defines ``ready()``, when that returns
true). Health checks are neither rate-limited nor written to the request log.

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
from django.db import connection, connections
from django.http import HttpRequest, JsonResponse
from ninja import Router

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


def database() -> dict[str, Any]:
    """A ``SELECT 1`` on the default database: ``ok``, the vendor, how long it took."""

    def check() -> dict[str, Any]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        return {"vendor": connection.vendor}

    return _timed(check)


def shared_cache() -> dict[str, Any]:
    """A set, get and delete of a random key in the default cache: ``ok``, backend, time."""

    def check() -> dict[str, Any]:
        cache = caches["default"]
        key, value = "tm-health:" + secrets.token_hex(8), secrets.token_hex(8)
        cache.set(key, value, 10)
        found = cache.get(key)
        cache.delete(key)
        if found != value:
            raise RuntimeError("the cache did not return what was stored")
        return {"backend": type(cache).__name__}

    return _timed(check)


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
    body["requestLog"] = recorder.status()
    if not (body["database"]["ok"] and body["cache"]["ok"]):
        body = {"status": "down", **body}
        return 503, body
    ready = all(item["ok"] for item in body["mounts"].values())
    return 200, {"status": "ok" if ready else "degraded", **body}


@router.get("/health", include_in_schema=True, summary="Database, cache and mount readiness")
def health(request: HttpRequest) -> JsonResponse:
    """The health report, never cached: 503 when the database or the cache is down."""
    status, body = report()
    response = JsonResponse(body, status=status)
    response["Cache-Control"] = "no-store"
    return response
