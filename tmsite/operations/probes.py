"""Whether each piece's public surface answers, measured when asked.

A probe is an HTTP ``HEAD`` that follows redirects; a ``405`` answer is asked again with ``GET``
(streamed: the status is read, the body is not downloaded). A status below 400 is ``up``, 400 or
above is ``down``, no answer within the timeout is ``unreachable`` (with a ``detail`` saying what
failed), and a piece with no public URL is ``not_probed``. Probes run concurrently, one thread
each, so a set of slow hosts costs about one timeout, not the sum. Each answer is kept for a short
while per piece (a monotonic clock decides when it expires) and carries the UTC time it was
measured.

The URLs come from the box's own pieces record, so no address guard is applied; the requests
carry no cookies, no credentials and nothing from the environment (no proxy or ``.netrc``).

Spec: TL4.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from datetime import UTC, datetime
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Literal

import httpx
from pydantic import BaseModel, Field

from tmsite.operations.pieces import Piece

Reachability = Literal["up", "down", "unreachable", "not_probed"]

USER_AGENT = "tmsite-probe/1 (+reachability of the box's own pieces)"
#: Seconds allowed past the timeout before a probe still running is given up.
GRACE_SECONDS = 0.5


class Measurement(BaseModel):
    """One measurement of a piece's public surface."""

    url: str | None = Field(description="The URL probed, or null when the piece has none.")
    reachability: Reachability = Field(
        description=(
            "'up': answered below 400; 'down': answered 400 or above; "
            "'unreachable': no answer (see detail); 'not_probed': no public URL."
        )
    )
    http_status: int | None = Field(
        description="The final status after redirects, or null when nothing answered."
    )
    latency_ms: float | None = Field(
        description="Wall time until the answer's headers, in milliseconds; null with no answer."
    )
    detail: str | None = Field(
        description="What failed when unreachable, or why a piece was not probed; else null."
    )
    checked_at: datetime = Field(description="When this was measured (UTC).")


def _now() -> datetime:
    return datetime.now(UTC)


def _seconds(timeout: float) -> str:
    return f"{timeout:g}s" if timeout != int(timeout) else f"{timeout:.1f}s"


def _without_credentials(url: str) -> httpx.URL:
    parsed = httpx.URL(url)
    return parsed.copy_with(userinfo=b"") if parsed.userinfo else parsed


def _unmeasured(url: str | None, reachability: Reachability, detail: str | None) -> Measurement:
    return Measurement(
        url=url,
        reachability=reachability,
        http_status=None,
        latency_ms=None,
        detail=detail,
        checked_at=_now(),
    )


def _unreachable(url: str, detail: str) -> Measurement:
    return _unmeasured(url, "unreachable", detail)


def measure(url: str, timeout: float) -> Measurement:
    """Probe one absolute http(s) URL now, uncached: ``up``, ``down`` or ``unreachable``.

    ``timeout``: seconds allowed for connecting and for each read.
    """
    started = time.perf_counter()
    try:
        with httpx.Client(
            follow_redirects=True,
            timeout=httpx.Timeout(timeout),
            trust_env=False,
            # no domain allowed: no cookie is stored, none is sent
            cookies=CookieJar(policy=DefaultCookiePolicy(allowed_domains=[])),
            headers={"User-Agent": USER_AGENT},
        ) as client:
            target = _without_credentials(url)
            response = client.head(target)
            if response.status_code == 405:
                remaining = timeout - (time.perf_counter() - started)
                if remaining <= 0:
                    raise httpx.ReadTimeout("no time left for GET after 405")
                # Streamed: the status line and headers are read, the body never is.
                with client.stream("GET", target, timeout=httpx.Timeout(remaining)) as streamed:
                    response = streamed
    except httpx.TimeoutException:
        return _unreachable(url, f"timed out after {_seconds(timeout)}")
    except (httpx.HTTPError, httpx.InvalidURL, OSError, ValueError) as exc:
        return _unreachable(url, f"{type(exc).__name__}: {exc}")
    elapsed = (time.perf_counter() - started) * 1000
    status = response.status_code
    return Measurement(
        url=url,
        reachability="up" if status < 400 else "down",
        http_status=status,
        latency_ms=round(elapsed, 1),
        detail=None,
        checked_at=_now(),
    )


class Prober:
    """Concurrent probes with a per-piece cache.

    Args:
        measure: The function that probes one URL (injectable for tests).
        clock: The monotonic clock that decides when a cached answer expires.
    """

    def __init__(
        self,
        measure: Callable[[str, float], Measurement] = measure,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._measure = measure
        self._clock = clock
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, str], tuple[float, Measurement]] = {}

    def clear(self) -> None:
        """Forget every cached measurement."""
        with self._lock:
            self._cache.clear()

    def probe_all(
        self, pieces: Sequence[Piece], timeout: float, cache_seconds: float
    ) -> list[Measurement]:
        """Measure every piece, concurrently, reusing answers younger than ``cache_seconds``.

        ``timeout``: seconds each probe may take; ``cache_seconds`` 0 measures afresh every
        time. One measurement per piece, in the pieces' order.
        """
        results: list[Measurement | None] = [None] * len(pieces)
        pending: list[tuple[int, Piece, str]] = []
        for index, piece in enumerate(pieces):
            url = piece.public_url
            with self._lock:
                hit = self._cache.get((piece.key, url)) if url is not None else None
            if url is None:
                results[index] = _unmeasured(None, "not_probed", piece.not_hosted_because)
            elif hit is not None and self._clock() - hit[0] < cache_seconds:
                results[index] = hit[1]
            else:
                pending.append((index, piece, url))
        if pending:
            pool = ThreadPoolExecutor(max_workers=len(pending), thread_name_prefix="probe")
            try:
                futures = {
                    pool.submit(self._measure, url, timeout): (index, piece, url)
                    for index, piece, url in pending
                }
                # httpx bounds each connect and read; this deadline bounds the whole set, so a
                # host that trickles or redirects slowly cannot hold the answer past it.
                done, _ = wait(futures, timeout=timeout + GRACE_SECONDS)
                for future, (index, piece, url) in futures.items():
                    if future not in done:
                        measurement = _unreachable(url, f"timed out after {_seconds(timeout)}")
                    elif (error := future.exception()) is not None:
                        measurement = _unreachable(url, f"{type(error).__name__}: {error}")
                    else:
                        measurement = future.result()
                        with self._lock:
                            self._cache[(piece.key, url)] = (self._clock(), measurement)
                    results[index] = measurement
            finally:
                pool.shutdown(wait=False, cancel_futures=True)
        return [measurement for measurement in results if measurement is not None]


_default = Prober()


def _setting(name: str) -> float:
    from django.conf import settings

    return float(getattr(settings, name))


def probe_all(
    pieces: Sequence[Piece],
    timeout: float | None = None,
    cache_seconds: float | None = None,
) -> list[Measurement]:
    """Measure every piece with the process-wide prober (:meth:`Prober.probe_all`).

    By default ``timeout`` is ``TM_PROBE_TIMEOUT``, ``cache_seconds`` ``TM_PROBE_CACHE_SECONDS``.
    """
    return _default.probe_all(
        pieces,
        _setting("TM_PROBE_TIMEOUT") if timeout is None else timeout,
        _setting("TM_PROBE_CACHE_SECONDS") if cache_seconds is None else cache_seconds,
    )


def probe_one(
    piece: Piece, timeout: float | None = None, cache_seconds: float | None = None
) -> Measurement:
    """Measure one piece with the process-wide prober (same cache as :func:`probe_all`)."""
    return probe_all([piece], timeout, cache_seconds)[0]


def clear_cache() -> None:
    """Forget every measurement the process-wide prober holds."""
    _default.clear()
