"""``GET /api/v1/live`` and ``GET /api/v1/ready``: the two questions an orchestrator asks.

**Live** is whether this process can answer at all: it asks nothing else (no database, no
cache, no mount), so a database blip never makes an orchestrator restart every machine.
**Ready** is whether this machine should be sent requests: it answers 503 while one of the
dependencies in :data:`READINESS` cannot serve, each named in ``reasons``. A dependency is one
row of that table — its name, its check (``health``'s own, so the two never disagree on what
"up" means) and when it applies: the database, the shared cache when one is configured, and
the search index (a search through its engine).

``/api/v1/health`` stays the operator's detailed view (mounts, bus, request-log buffer). None of
the three is rate-limited or written to the request log.

Spec: OBS3.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from ninja import Router

from tmsite.rest import health
from tmsite.search import index

router = Router(tags=["operations"])


def _always() -> bool:
    return True


def _search_index() -> dict[str, Any]:
    """The search index answers a search (its tables are there and its engine works)."""
    return health._timed(index.probe)


def _shared_cache_configured() -> bool:
    """A shared cache (Redis) is configured: without one the cache is this process's memory."""
    return bool(settings.TM_REDIS_URL)


@dataclass(frozen=True)
class Dependency:
    """Something the machine cannot serve without: how it is checked, and when it applies."""

    name: str
    check: Callable[[], dict[str, Any]]
    applies: Callable[[], bool] = _always
    #: What ``reasons`` says when the check fails (the check's error follows).
    unready: str = ""


#: What ``/api/v1/ready`` asks, in order. One row per dependency.
READINESS: tuple[Dependency, ...] = (
    Dependency("database", health.database, unready="the database does not answer"),
    Dependency(
        "cache",
        health.shared_cache,
        _shared_cache_configured,
        unready="the shared cache does not answer",
    ),
    Dependency("search", _search_index, unready="the search index cannot serve"),
)


def readiness() -> tuple[int, dict[str, Any]]:
    """The status code and body of a readiness check: 200 ``ready`` or 503 ``unready``."""
    checks: dict[str, dict[str, Any]] = {}
    reasons: list[str] = []
    for dependency in READINESS:
        if not dependency.applies():
            continue
        result = dependency.check()
        checks[dependency.name] = result
        if not result["ok"]:
            reasons.append(f"{dependency.unready}: {result.get('error', 'not ok')}")
    if reasons:
        return 503, {"status": "unready", "checks": checks, "reasons": reasons}
    return 200, {"status": "ready", "checks": checks}


@router.get("/live", summary="The process answers (no dependency asked)")
def live(request: HttpRequest) -> JsonResponse:
    """200 whenever this process can answer a request: restart the machine only when it does not."""
    return health.answer(200, {"status": "live"})


@router.get("/ready", summary="The machine can serve: 503 while a dependency cannot")
def ready(request: HttpRequest) -> JsonResponse:
    """200 when every dependency in ``READINESS`` serves; else 503, with ``reasons``."""
    return health.answer(*readiness())
