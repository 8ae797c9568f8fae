"""``GET /api/v1/live`` asks nothing; ``GET /api/v1/ready`` asks the database and the shared cache.

The real outage (PostgreSQL refusing every connection under a running server) is
``tests/manymachines/test_live_ready.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client

from tests.oplog.test_health import UnreachableCache
from tmsite.rest import readiness

pytestmark = pytest.mark.spec("OBS3")


def test_live_answers_without_touching_the_database() -> None:
    # no django_db mark: any query here fails the test
    reply = Client().get("/api/v1/live")
    assert reply.status_code == 200
    assert reply.json() == {"status": "live"}
    assert reply.headers["Cache-Control"] == "no-store"


@pytest.mark.django_db
def test_ready_asks_the_database_and_not_process_memory() -> None:
    reply = Client().get("/api/v1/ready")
    assert reply.status_code == 200
    assert reply.headers["Cache-Control"] == "no-store"
    body = reply.json()
    assert body["status"] == "ready"
    assert set(body["checks"]) == {"database", "search"}, "no shared cache configured: not asked"
    assert body["checks"]["database"]["ok"] is True


@pytest.mark.django_db
def test_ready_is_503_while_the_configured_shared_cache_does_not_answer(settings: Any) -> None:
    settings.TM_REDIS_URL = "redis://127.0.0.1:1/0"
    settings.CACHES = {
        "default": {"BACKEND": "tests.oplog.test_health.UnreachableCache", "LOCATION": "y"}
    }
    settings.TM_REDIS_RETRY_SECONDS = 60
    UnreachableCache.asked = 0
    reply = Client().get("/api/v1/ready")
    assert reply.status_code == 503
    body = reply.json()
    assert body["status"] == "unready"
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["cache"]["ok"] is False
    assert body["reasons"] == [
        "the shared cache does not answer: ConnectionError: Error 111 connecting to the cache. "
        "Connection refused."
    ]
    # live is not ready's: the process still answers
    assert Client().get("/api/v1/live").status_code == 200


@pytest.mark.django_db
def test_a_dependency_is_one_row(monkeypatch: pytest.MonkeyPatch) -> None:
    def index() -> dict[str, Any]:
        return {"ok": False, "error": "RuntimeError: the index is being rebuilt"}

    row = readiness.Dependency("index", index, unready="the search index cannot serve")
    monkeypatch.setattr(readiness, "READINESS", (*readiness.READINESS, row))
    reply = Client().get("/api/v1/ready")
    assert reply.status_code == 503
    assert reply.json()["reasons"] == [
        "the search index cannot serve: RuntimeError: the index is being rebuilt"
    ]


@pytest.mark.django_db
def test_live_and_ready_are_not_limited_nor_logged(settings: Any) -> None:
    from tmsite.oplog import recorder

    settings.TM_RATE_BURST = 1
    client = Client(headers={"X-Forwarded-For": "203.0.113.9"})
    for _ in range(3):
        assert client.get("/api/v1/live").status_code == 200
        assert client.get("/api/v1/ready").status_code == 200
    assert recorder.pending() == 0


@pytest.mark.django_db
@pytest.mark.spec("OBS3", "SRCH3")
def test_ready_is_503_while_the_search_index_cannot_serve() -> None:
    ready = Client().get("/api/v1/ready").json()
    assert ready["status"] == "ready" and ready["checks"]["search"]["ok"] is True
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE search_document RENAME TO search_document_away")
    try:
        reply = Client().get("/api/v1/ready")
    finally:
        with connection.cursor() as cursor:
            cursor.execute("ALTER TABLE search_document_away RENAME TO search_document")
    assert reply.status_code == 503
    body = reply.json()
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["search"]["ok"] is False
    (reason,) = body["reasons"]
    assert reason.startswith("the search index cannot serve: ")
    assert "search_document" in reason
    assert Client().get("/api/v1/ready").status_code == 200
