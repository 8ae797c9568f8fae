"""``GET /api/v1/health``: database, cache and every mount's readiness."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.cache.backends.locmem import LocMemCache
from django.test import Client

from tmsite.mounts.registry import namespace

pytestmark = pytest.mark.spec("OP5")


@pytest.mark.django_db
def test_health_reports_database_cache_and_each_mount() -> None:
    reply = Client().get("/api/v1/health")
    assert reply.status_code == 200
    assert reply.headers["Cache-Control"] == "no-store"
    body = reply.json()
    assert body["status"] == "ok"
    assert body["database"]["ok"] is True and body["database"]["vendor"] == "sqlite"
    assert body["cache"]["ok"] is True and body["cache"]["backend"] == "LocMemCache"
    assert set(body["mounts"]) == set(namespace().mounts)
    assert all(item["ok"] for item in body["mounts"].values())
    assert body["bus"]["backend"] == "local"  # no TM_REDIS_URL: the bus stays in process
    assert "state" not in body["bus"]
    assert "RateLimit" not in reply.headers


@pytest.mark.django_db
def test_a_mount_that_is_not_ready_degrades_but_serves(monkeypatch: pytest.MonkeyPatch) -> None:
    name, mount = next(iter(namespace().mounts.items()))
    monkeypatch.setattr(mount, "ready", lambda: False, raising=False)
    body = Client().get("/api/v1/health").json()
    assert body["status"] == "degraded"
    assert body["mounts"][name]["ok"] is False
    assert body["mounts"][name]["error"] == "RuntimeError: not ready"


class UnreachableCache(LocMemCache):
    """A cache whose server has gone away (a real one: tests/manymachines/test_redis_outage.py)."""

    asked = 0

    def set(self, *args: Any, **kwargs: Any) -> None:
        UnreachableCache.asked += 1
        raise ConnectionError("Error 111 connecting to the cache. Connection refused.")


@pytest.mark.django_db
def test_a_cache_that_does_not_answer_degrades_and_is_not_asked_again(settings: Any) -> None:
    settings.CACHES = {
        "default": {"BACKEND": "tests.oplog.test_health.UnreachableCache", "LOCATION": "x"}
    }
    settings.TM_REDIS_RETRY_SECONDS = 60
    UnreachableCache.asked = 0
    reply = Client().get("/api/v1/health")
    assert reply.status_code == 200, "the shared cache failing does not take the machine out"
    body = reply.json()
    assert body["status"] == "degraded"
    assert body["cache"]["ok"] is False
    assert body["cache"]["error"] == (
        "ConnectionError: Error 111 connecting to the cache. Connection refused."
    )
    assert body["cache"]["circuit"] == "open" and body["cache"]["outages"] == 1
    assert body["reasons"] == [
        "the shared cache does not answer (ConnectionError: Error 111 connecting to the cache. "
        "Connection refused.): reads still answer, the rate limit counts on this machine's "
        "buckets"
    ]
    assert body["database"]["ok"] is True
    # while the circuit is open the cache is not asked: the answer says so at once
    again = Client().get("/api/v1/health").json()
    assert UnreachableCache.asked == 1
    assert again["status"] == "degraded" and again["cache"]["circuit"] == "open"
    assert again["cache"]["error"].startswith("SharedCacheDown: the shared cache is not asked")
    assert again["cache"]["refused"] == 1


@pytest.mark.django_db
def test_health_is_not_limited_nor_logged(settings: Any) -> None:
    from tmsite.oplog import recorder

    settings.TM_RATE_BURST = 1
    client = Client(headers={"X-Forwarded-For": "203.0.113.8"})
    for _ in range(3):
        assert client.get("/api/v1/health").status_code == 200
    assert recorder.pending() == 0
