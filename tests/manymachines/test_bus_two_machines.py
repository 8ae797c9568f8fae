"""The change bus on the documented setup, each machine ``python -m tmsite.serve`` of two workers.

* Two machines behind nginx, on PostgreSQL and Redis: a change only the machine that made it
  sees — a proposal counted again on machine 1 publishes its receipt, exact, from that worker
  alone — reaches a listen stream held by machine 2, once, and no collection's subscriber is
  told it.
* A machine on a Redis of the test's own, stopped and then frozen (SIGSTOP): its open stream is
  answered ``complete`` within seconds, health says the bus is down, and once Redis is back a
  new stream hears a change another process published.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.oplog.servers import free_port, migrate, nginx, redis_server, server_env, serving
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


def test_redis_stopped_or_frozen_under_a_machine_ends_its_streams_gracefully(
    tmp_path: Path,
) -> None:
    """A machine of two workers on a Redis of the test's own: each way Redis goes, the open
    stream is answered ``complete`` within seconds (never left hanging), health says the bus
    is down, and once Redis is back a new stream hears a change published through it."""
    with redis_server(tmp_path / "redis") as redis:
        env = server_env(
            tmp_path / "var", TM_REDIS_URL=redis.url, TM_CACHE_PREFIX="bus", TM_LISTEN_IDLE="60"
        )
        migrate(env)
        with (
            serving(env, workers=2, log=tmp_path / "machine.log") as machine,
            httpx.Client(timeout=httpx.Timeout(30, read=30)) as client,
        ):
            for n, fault in enumerate(("stop", "freeze")):
                rid = f"fault-{n}"
                body = listen_body(rid, resourceSubscriptions=[MISSING])
                url = f"{machine.url}/api/mcp"
                with client.stream("POST", url, json=body, headers=listen_headers()) as response:
                    events = Events(response)
                    assert events.message()["params"]["_meta"][SUB_ID] == rid
                    _listening_worker(machine.url)
                    started = time.monotonic()
                    getattr(redis, fault)()
                    try:
                        rest = [value for kind, value in events.rest() if kind == "message"]
                        took = time.monotonic() - started
                        down = _bus_down(machine.url)
                    finally:
                        if fault == "freeze":
                            redis.thaw()
                        else:
                            redis.start()
                assert rest == [_complete(rid)]
                # 3 heartbeats of 1 s for a frozen Redis; a closed connection at once
                assert took < (6.0 if fault == "freeze" else 2.0), (fault, took)
                assert down["status"] == "degraded"
                assert down["bus"]["outages"] >= 1 and down["bus"]["lastError"]  # that worker's
                assert any(
                    r.startswith("the change bus does not reach Redis") for r in down["reasons"]
                )
                _back(machine.url)  # a stream opened before its worker is back is ended then
                _heard_again(client, machine.url, redis.url, f"again-{n}")
    text = (tmp_path / "machine.log").read_text(errors="replace")
    assert "Traceback" not in text, text[-3000:]
    assert text.count("the change bus lost Redis") >= 2


def _bus_down(base: str) -> dict[str, Any]:
    """Health from the machine until the worker that held the stream answers: its bus is down."""
    for _ in range(40):
        body: dict[str, Any] = httpx.get(f"{base}/api/v1/health", timeout=10).json()
        if body["bus"].get("state") == "down":
            return body
        time.sleep(0.05)
    raise AssertionError(f"no worker says its bus is down: {body['bus']}")


def _back(base: str) -> None:
    """Health until ten answers in a row (of either worker) say the bus is not down."""
    end, row = time.monotonic() + 30, 0
    while row < 10:
        bus = httpx.get(f"{base}/api/v1/health", timeout=10).json()["bus"]
        row = row + 1 if bus.get("state") != "down" else 0
        assert time.monotonic() < end, f"the bus is still down: {bus}"
        time.sleep(0.05)


def _complete(rid: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "result": {"resultType": "complete", "_meta": {SUB_ID: rid}},
    }


def _heard_again(client: httpx.Client, base: str, redis_url: str, rid: str) -> None:
    """A new stream on the machine, once its worker's bus is up again, hears a change another
    process published on the box's channel."""
    import redis as redis_client

    body = listen_body(rid, resourceSubscriptions=[MISSING])
    with client.stream("POST", f"{base}/api/mcp", json=body, headers=listen_headers()) as response:
        events = Events(response)
        events.message()
        _listening_worker(base)
        message = b'{"o":"another-process","k":"updated","u":"' + MISSING.encode() + b'"}'
        with redis_client.Redis.from_url(redis_url) as other:
            assert other.publish("bus:tmsite:changes", message) >= 1
        assert events.message()["params"] == {"uri": MISSING, "_meta": {SUB_ID: rid}}
