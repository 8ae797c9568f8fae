"""No deadlock when the front door is this same server.

A real gunicorn with the smallest pool the README allows a thread to wait in (one gthread worker,
two threads) serves the site and the REST routes; its http mount fetches pages from that same
gunicorn. Many concurrent reads of pages: every one answers within the deadline — the page, or
``unreachable`` with ``failed: busy`` when the worker's self-fetch budget (threads − 1) is spent —
and never a 500. With the budget set to the thread count (the guard removed), the same load
stalls until the deadline: the guard is what keeps the pool alive.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.spec("HTTP", "OP5")]
ROOT = Path(__file__).resolve().parents[2]
DEADLINE = 4.0
PAGES = ["/docs", "/docs/mcp", "/docs/namespace", "/pieces", "/", "/docs/links"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def gunicorn(tmp: Path, threads: int, self_fetches: int | None = None) -> Iterator[str]:
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.http.gunicorn_settings",
        "PYTHONPATH": str(ROOT),
        "TM_TEST_PORT": str(port),
        "TM_TEST_DEADLINE": str(DEADLINE),
        "TM_VAR_DIR": str(tmp),
        "TM_SECRET_KEY": "deadlock-test",
        "TM_RATE_LIMIT": "0",
    }
    if self_fetches is not None:
        env["TM_TEST_SELF_FETCHES"] = str(self_fetches)
    bin_dir = Path(sys.executable).parent
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT, env=env, check=True, timeout=120,
    )  # fmt: skip
    process = subprocess.Popen(
        [str(bin_dir / "gunicorn"), "tmsite.wsgi", "--bind", f"127.0.0.1:{port}",
         "--workers", "1", "--worker-class", "gthread", "--threads", str(threads),
         "--timeout", "60"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                httpx.get(base + "/robots.txt", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=20)


def read(base: str, path: str) -> tuple[float, int, dict[str, object]]:
    uri = f"tm://tinymachines/http/tinymachines.ai{path}"
    if path == "/":
        uri += "?as=text"
    started = time.monotonic()
    answer = httpx.get(base + "/api/v1/resolve", params={"uri": uri}, timeout=30)
    return time.monotonic() - started, answer.status_code, answer.json()


def storm(base: str, count: int) -> list[tuple[float, int, dict[str, object]]]:
    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(lambda i: read(base, PAGES[i % len(PAGES)]), range(count)))


def test_many_concurrent_page_reads_all_answer_within_the_deadline(tmp_path: Path) -> None:
    with gunicorn(tmp_path, threads=2) as base:
        answers = storm(base, 24)
    assert all(status != 500 for _, status, _ in answers)
    # A deadlock shows as reads that wait out the server's deadline and answer ``timeout`` (as
    # the next test provokes); waiting in the queue of a loaded machine is not one.
    assert [body for _, _, body in answers if body.get("reason") == "timeout"] == []
    pages = [body for _, status, body in answers if status == 200]
    busy = [body for _, status, body in answers if status != 200]
    assert pages, "some reads must get their page"
    for body in pages:
        assert body["mimeType"] == "text/vnd.tm.page"
    for body in busy:
        assert body["reason"] == "unreachable" and body["failed"] == "busy", body
        assert body["retryAfter"] == 1


def test_without_the_guard_the_same_load_stalls(tmp_path: Path) -> None:
    with gunicorn(tmp_path, threads=2, self_fetches=2) as base:
        answers = storm(base, 8)
    assert any(seconds >= DEADLINE - 0.5 for seconds, _, _ in answers)
    assert any(body.get("reason") == "timeout" for _, _, body in answers)
