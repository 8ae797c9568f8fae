"""The http mount's self-fetch budget under ``python -m tmsite.serve``.

The launcher tells each worker its request-thread count (``TM_WORKER_THREADS``); a page read
through the http mount whose front door is this same server takes one of those threads and
waits on another. With ``--threads 1`` no read may wait on itself, so it is refused at once
(``unreachable``, ``failed: busy``); with two, pages are read, and a storm of concurrent page
reads answers every one within the deadline — the page or ``busy``, never a stall. With the
budget set to the thread count (the guard removed) the same storm stalls to the deadline: the
budget is what keeps the pool alive under this server too.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.oplog.servers import ROOT, free_port, json_lines, migrate, server_env, serving

pytestmark = [pytest.mark.slow, pytest.mark.spec("HTTP", "OP5")]
DEADLINE = 4.0
PAGES = ["/docs", "/docs/mcp", "/docs/namespace", "/pieces", "/", "/docs/links"]


def _env(tmp: Path, port: int, self_fetches: int | None = None) -> dict[str, str]:
    env = server_env(
        tmp / "var",
        TM_TEST_PORT=str(port),
        TM_TEST_DEADLINE=str(DEADLINE),
        TM_RATE_LIMIT="0",
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    )
    env["DJANGO_SETTINGS_MODULE"] = "tests.http.gunicorn_settings"  # the front door: itself
    if self_fetches is not None:
        env["TM_TEST_SELF_FETCHES"] = str(self_fetches)
    migrate(env)
    return env


def _read(base: str, path: str) -> tuple[float, int, dict[str, Any]]:
    uri = f"tm://tinymachines/http/tinymachines.ai{path}"
    if path == "/":
        uri += "?as=text"
    started = time.monotonic()
    answer = httpx.get(base + "/api/v1/resolve", params={"uri": uri}, timeout=30)
    return time.monotonic() - started, answer.status_code, answer.json()


def _storm(base: str, count: int) -> list[tuple[float, int, dict[str, Any]]]:
    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(lambda i: _read(base, PAGES[i % len(PAGES)]), range(count)))


@pytest.mark.parametrize(("threads", "outcome"), [(2, "ok"), (1, "unreachable")])
def test_the_worker_knows_its_threads(tmp_path: Path, threads: int, outcome: str) -> None:
    port = free_port()
    log = tmp_path / "serve.log"
    with serving(_env(tmp_path, port), workers=1, log=log, port=port, threads=threads) as m:
        took, status, body = _read(m.url, "/docs")
    if outcome == "ok":
        assert status == 200 and body["mimeType"] == "text/vnd.tm.page", body
    else:  # one thread: no self-fetch may wait on it, so the read is refused at once
        assert status != 200 and (body["reason"], body["failed"]) == ("unreachable", "busy")
        assert body["retryAfter"] == 1 and took < DEADLINE - 1
    lines = [line for line in json_lines(log) if line["kind"] == "http"]
    assert [line["outcome"] for line in lines] == [outcome], lines


def test_many_concurrent_page_reads_all_answer_within_the_deadline(tmp_path: Path) -> None:
    port = free_port()
    env = _env(tmp_path, port)
    with serving(env, workers=1, log=tmp_path / "s.log", port=port, threads=2) as m:
        answers = _storm(m.url, 24)
    assert all(status != 500 for _, status, _ in answers)
    assert [body for _, _, body in answers if body.get("reason") == "timeout"] == []
    pages = [body for _, status, body in answers if status == 200]
    assert pages, "some reads must get their page"
    for body in pages:
        assert body["mimeType"] == "text/vnd.tm.page"
    for _, status, body in answers:
        if status != 200:
            assert (body["reason"], body["failed"]) == ("unreachable", "busy"), body


def test_without_the_budget_the_same_load_stalls(tmp_path: Path) -> None:
    port = free_port()
    env = _env(tmp_path, port, self_fetches=2)
    with serving(env, workers=1, log=tmp_path / "s.log", port=port, threads=2) as m:
        answers = _storm(m.url, 8)
    assert any(seconds >= DEADLINE - 0.5 for seconds, _, _ in answers)
    assert any(body.get("reason") == "timeout" for _, _, body in answers)
