"""The change bus on the documented setup: two machines (``python -m tmsite.serve``, two workers
each) behind nginx, on PostgreSQL and Redis. A change only the machine that made it sees — a
proposal counted again on machine 1 publishes its receipt, exact, from that worker alone —
reaches a listen stream held by machine 2, once, and no collection's subscriber is told it."""

from __future__ import annotations

import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.oplog.servers import free_port, migrate, nginx, server_env, serving
from tests.subscriptions.helpers import SUB_ID, Events, listen_body, listen_headers

pytestmark = [pytest.mark.spec("SUB3", "OP5"), pytest.mark.slow]

HOST = "tinymachines"
MISSING = f"tm://{HOST}/fs/docs/a-page-the-bus-test-wants.md"
#: Seconds a stream sends nothing before it is ended (idle): the end of the test's stream.
IDLE = 6


def _propose(base: str) -> dict[str, Any]:
    reply = httpx.post(
        f"{base}/api/v1/proposals",
        json={"kind": "address", "uri": MISSING, "expected": "a page about the bus"},
        timeout=30,
    )
    assert reply.status_code == 200, reply.text[:500]
    body: dict[str, Any] = reply.json()
    return body


def _listening_worker(base: str) -> dict[str, Any]:
    """Health from machine 2 until the worker holding the stream answers: its bus is up."""
    end = time.monotonic() + 20
    while True:
        bus = httpx.get(f"{base}/api/v1/health", timeout=10).json()["bus"]
        if bus.get("state") == "up" and bus["listeners"] >= 1:
            return dict(bus)
        assert time.monotonic() < end, f"no worker of machine 2 listens on Redis: {bus}"
        time.sleep(0.1)


def test_a_change_made_on_one_machine_reaches_a_listener_on_the_other(
    database_url: str, redis_url: str, cache_prefix: str, tmp_path: Path
) -> None:
    front_port = free_port()
    env = server_env(
        tmp_path / "var",
        TM_FRONT_DOOR=f"http://127.0.0.1:{front_port}",
        TM_DATABASE_URL=database_url,
        TM_REDIS_URL=redis_url,
        TM_CACHE_PREFIX=cache_prefix,
        TM_LISTEN_IDLE=str(IDLE),
    )
    migrate(env)
    with ExitStack() as stack:
        one, two = (
            stack.enter_context(serving(env, workers=2, log=tmp_path / f"machine-{n}.log"))
            for n in (1, 2)
        )
        front = stack.enter_context(nginx([one.url, two.url], tmp_path / "nginx", port=front_port))
        health = httpx.get(f"{front}/api/v1/health", timeout=30).json()
        assert health["bus"]["backend"] == "redis", health["bus"]
        assert health["bus"]["channel"] == f"{cache_prefix}:tmsite:changes"

        first = _propose(one.url)
        receipt = first["receipt"]
        assert receipt.startswith(f"tm://{HOST}/proposals/")
        collection = f"tm://{HOST}/proposals/"
        body = listen_body("bus-1", resourceSubscriptions=[collection, receipt])
        with (
            httpx.Client(timeout=httpx.Timeout(30, read=IDLE + 20)) as client,
            client.stream(
                "POST", f"{two.url}/api/mcp", json=body, headers=listen_headers()
            ) as response,
        ):
            assert response.status_code == 200
            events = Events(response)
            ack = events.message()
            assert ack["params"]["notifications"]["resourceSubscriptions"] == [
                collection,
                receipt,
            ], ack
            before = _listening_worker(two.url)
            assert before["received"] == 0

            again = _propose(one.url)  # counted onto the first: its receipt is announced
            assert again["receipt"] == receipt
            told = events.message()
            assert told == {
                "jsonrpc": "2.0",
                "method": "notifications/resources/updated",
                "params": {"uri": receipt, "_meta": {SUB_ID: "bus-1"}},
            }
            # nothing more: not a second copy, not the collection's (the change was exact)
            rest = [value for kind, value in events.rest() if kind == "message"]
        assert rest == [
            {
                "jsonrpc": "2.0",
                "id": "bus-1",
                "result": {"resultType": "complete", "_meta": {SUB_ID: "bus-1"}},
            }
        ]
    logs = [(tmp_path / f"machine-{n}.log").read_text(errors="replace") for n in (1, 2)]
    assert not any("Traceback" in text for text in logs), logs[1][-3000:]
