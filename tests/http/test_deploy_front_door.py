"""The deploy config as the README runs it: the thread count gunicorn settles on reaches the
http mount, so a worker whose front door is itself reads its own pages (one thread kept free)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.oplog.servers import free_port, gunicorn, json_lines, migrate, read, server_env

pytestmark = [pytest.mark.slow, pytest.mark.spec("HTTP", "OP5")]
PAGE = "tm://tinymachines/http/tinymachines.ai/docs"


@pytest.mark.parametrize(
    ("threads_from", "outcome"),
    [("config", "ok"), ("command line", "ok"), ("one thread", "unreachable")],
)
def test_the_worker_knows_its_threads_wherever_they_were_set(
    tmp_path: Path, threads_from: str, outcome: str
) -> None:
    port = free_port()
    env = server_env(
        tmp_path / "var",
        TM_FRONT_DOOR=f"http://127.0.0.1:{port}",
        GUNICORN_THREADS="1" if threads_from == "command line" else "4",
    )
    migrate(env)
    threads = {"config": None, "command line": 3, "one thread": 1}[threads_from]
    log = tmp_path / "gunicorn.log"
    with gunicorn(env, workers=1, log=log, port=port, threads=threads) as base:
        body = read(base, PAGE).json()
    if outcome == "ok":
        assert "result" in body, body
        [content] = body["result"]["contents"]
        assert content["uri"] == PAGE and "tmsite" in content["text"].lower()
    else:  # one thread: no self-fetch may wait on it, so the read is refused at once
        data = body["error"]["data"]
        assert (data["reason"], data["failed"]) == ("unreachable", "busy")
        assert data["retryAfter"] == 1
    [line] = [line for line in json_lines(log) if line["method"] == "resources/read"]
    assert line["outcome"] == outcome
