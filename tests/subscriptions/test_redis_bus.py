"""The change bus across processes: Redis pub/sub, against a real redis-server of the test's own.

Two buses, each with its own Redis connection (as two processes have), hear each other's changes
exactly once, their own once too; a change published by a separate Python process reaches a
``subscriptions/listen`` stream served by ``tmsite.serve.app`` over loopback in this one. Redis
stopped or frozen (SIGSTOP) ends open streams gracefully within a bounded time, never leaves
them hanging; publishing never waits on it; once Redis is back, a new listen hears changes again.
A change published while Redis is briefly away is sent, once, when it answers again (what is
held is bounded, what is dropped counted in health), and the shared cache's circuit, opened by a
real timeout, does not stop a publish.
"""

from __future__ import annotations

import logging
import secrets
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.conf import settings
from django.test import Client
from redis import Redis
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.retry import Retry

from tests.oplog.servers import ROOT, RedisProcess, redis_server, refusing_port, server_env
from tests.subscriptions.helpers import (
    SUB_ID,
    Events,
    complete,
    end_streams,
    listen_body,
    listen_headers,
)
from tests.waiting import wait_until
from tmsite.bus import changes, redis_bus
from tmsite.bus.changes import Bus, Change
from tmsite.bus.redis_bus import RedisBackend
from tmsite.core import sharedcache
from tmsite.streams import listen

pytestmark = [pytest.mark.spec("SUB3"), pytest.mark.slow]

H = f"tm://{settings.TM_HOST}"
#: Seconds between two pings of a test bus's connection: a frozen Redis is found after three.
BEAT = 0.3
#: What a stream may take to end after Redis stopped or froze (three beats, a read's wait, the
#: stream's own loop, on a shared machine).
ENDS_WITHIN = 5.0


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[RedisProcess]:
    with redis_server(tmp_path / "redis") as server:
        yield server


@pytest.fixture
def channel() -> str:
    return redis_bus.channel_name(f"tm-test-{secrets.token_hex(4)}")


class Machine:
    """One bus with its own connection to Redis, and a listener that keeps what it hears."""

    def __init__(
        self,
        redis: RedisProcess,
        channel: str,
        coalesce: float = 0.25,
        heartbeat: float = BEAT,
        hold: float = redis_bus.HOLD_SECONDS,
    ) -> None:
        self.bus = Bus(coalesce)
        self.backend = RedisBackend(self.bus, redis.url, channel, heartbeat=heartbeat, hold=hold)
        self.bus.attach(self.backend)
        self.heard: list[Change] = []
        self.remove = self.bus.add_listener(self.heard.append)

    def up(self) -> None:
        wait_until(lambda: self.backend.state == "up", what="the bus subscribed")

    def close(self) -> None:
        self.remove()
        self.backend.close()


@pytest.fixture
def machines(redis: RedisProcess, channel: str) -> Iterator[Callable[..., Machine]]:
    made: list[Machine] = []

    def make(coalesce: float = 0.25, **options: float) -> Machine:
        machine = Machine(redis, channel, coalesce, **options)
        made.append(machine)
        machine.up()
        return machine

    yield make
    for machine in made:
        machine.close()


def test_a_change_reaches_every_process_once_its_own_too(
    machines: Callable[..., Machine],
) -> None:
    a, b = machines(0.0), machines(0.0)  # no coalescing: once is the origin's doing alone
    receipt = Change("updated", uri=f"{H}/proposals/secret.token", exact=True)
    a.bus.publish(receipt)
    a.bus.publish(Change("list_changed", list_kind="tools"))
    wait_until(lambda: len(b.heard) == 2, what="b heard both")
    time.sleep(0.5)  # a second copy would have come by now
    assert b.heard == [receipt, Change("list_changed", list_kind="tools")]
    assert b.heard[0].exact is True  # the flag crossed the wire
    assert a.heard == b.heard  # its own, once: not again from Redis
    assert a.backend.status()["sent"] == 2 and b.backend.status()["received"] == 2
    b.bus.publish(Change("updated", uri=f"{H}/fs/docs/a.md"))
    wait_until(lambda: len(a.heard) == 3, what="a heard b")
    time.sleep(0.3)
    assert a.heard[2] == b.heard[2] == Change("updated", uri=f"{H}/fs/docs/a.md")
    assert len(a.heard) == len(b.heard) == 3


def test_what_two_processes_saw_at_once_reaches_a_listener_once(
    machines: Callable[..., Machine],
) -> None:
    a, b, c = machines(), machines(), machines()
    seen = Change("updated", uri=f"{H}/fs/docs/shared.md")
    a.bus.publish(seen)
    b.bus.publish(seen)  # the other machine's watcher saw the same edit
    wait_until(lambda: c.backend.status()["received"] == 2, what="c received both")
    time.sleep(0.3)
    assert a.heard == b.heard == c.heard == [seen]
    assert c.bus.status()["coalesced"] == 1
    # the process that told it last tells a second change at once: a second change
    a.bus.publish(seen)
    wait_until(lambda: len(c.heard) == 2 and len(b.heard) == 2, what="a's second change")
    # past the window another process's copy passes too
    time.sleep(0.3)
    b.bus.publish(seen)
    wait_until(lambda: len(c.heard) == 3, what="b's change after the window")
    assert c.heard == [seen] * 3


def test_without_coalescing_both_copies_arrive(machines: Callable[..., Machine]) -> None:
    # the check of the rule above: with no window, the second process's copy is heard too
    a, b, c = machines(0.0), machines(0.0), machines(0.0)
    seen = Change("updated", uri=f"{H}/fs/docs/shared.md")
    a.bus.publish(seen)
    b.bus.publish(seen)
    wait_until(lambda: len(a.heard) == len(b.heard) == len(c.heard) == 2, what="both copies")
    assert a.heard == b.heard == c.heard == [seen, seen]


def test_a_message_sent_again_is_told_once(
    machines: Callable[..., Machine], redis: RedisProcess, channel: str
) -> None:
    # a PUBLISH that timed out may still reach Redis: its retry is the same message again
    b = machines(0.0)  # no coalescing: a repeat is skipped by its number alone
    first = Change("updated", uri=f"{H}/fs/docs/again.md")
    data = redis_bus.encode(first, "elsewhere", 7)
    sender = Redis.from_url(redis.url)
    try:
        sender.publish(channel, data)
        sender.publish(channel, data)
        sender.publish(channel, redis_bus.encode(first, "elsewhere", 8))  # the next one
        sender.publish(channel, redis_bus.encode(first, "another", 7))  # another process's
        wait_until(lambda: b.backend.status()["repeats"] + len(b.heard) == 4, what="b heard four")
    finally:
        sender.close()
    assert b.heard == [first] * 3
    assert b.backend.status()["repeats"] == 1 and b.backend.status()["received"] == 3


def test_redis_stopped_every_listener_is_told_lost_then_it_comes_back(
    machines: Callable[..., Machine], redis: RedisProcess, caplog: pytest.LogCaptureFixture
) -> None:
    a, b = machines(hold=0.5), machines()  # a holds a change half a second at most
    caplog.set_level(logging.WARNING, logger="tmsite.subscriptions")
    redis.stop()
    started = time.monotonic()
    wait_until(lambda: Change("lost") in b.heard, ENDS_WITHIN, "b told lost")
    assert time.monotonic() - started < ENDS_WITHIN
    assert b.heard == [Change("lost")] and b.backend.state == "down"
    assert b.bus.status()["state"] == "down" and b.bus.status()["outages"] == 1
    # publishing does not wait on the missing Redis; what could not be sent is counted
    took = time.perf_counter()
    for n in range(50):
        a.bus.publish(Change("updated", uri=f"{H}/fs/docs/{n}.md"))
    assert time.perf_counter() - took < 0.25
    wait_until(lambda: a.backend.status()["publishing"] == "failing", what="a's publish failed")
    assert a.backend.flush(5)  # held half a second, tried again meanwhile, then given up
    status = a.backend.status()
    assert status["dropped"] == 50 and status["held"] == 0 and status["sent"] == 0
    assert status["publishFailed"] >= 2  # tried, and tried again
    assert len(a.heard) == 51  # lost, then its own 50: this process's listeners still hear
    # a listener added while Redis is away heard only this process: it is told once Redis is back
    late: list[Change] = []
    b.bus.add_listener(late.append)
    time.sleep(1.0)  # reconnection attempts fail meanwhile: no second "lost" for the others
    assert b.heard == [Change("lost")] and late == []
    redis.start()
    wait_until(lambda: b.backend.state == "up" and a.backend.state == "up", 15, "both back")
    wait_until(lambda: late == [Change("lost")], what="the late listener told")
    assert b.heard == [Change("lost")]
    a.bus.publish(Change("updated", uri=f"{H}/fs/docs/back.md"))
    wait_until(lambda: len(b.heard) == 2, what="b hears a again")
    assert b.heard[1] == Change("updated", uri=f"{H}/fs/docs/back.md")
    messages = [r.getMessage() for r in caplog.records]
    assert sum("could not be sent" in m for m in messages) == 1, messages
    assert sum("the change bus lost Redis" in m for m in messages) == 2  # once a bus
    assert sum("reaches Redis again" in m for m in messages) == 2


def test_redis_frozen_is_found_by_the_heartbeat(
    machines: Callable[..., Machine], redis: RedisProcess
) -> None:
    a, b = machines(), machines()
    redis.freeze()
    try:
        started = time.monotonic()
        took = time.perf_counter()
        a.bus.publish(Change("updated", uri=f"{H}/fs/docs/frozen.md"))
        assert time.perf_counter() - took < 0.05  # queued: the request thread never waits
        wait_until(lambda: Change("lost") in b.heard, ENDS_WITHIN, "b told lost")
        found = time.monotonic() - started
        assert found >= BEAT * 2, "lost before any heartbeat could be missed"
        assert found < ENDS_WITHIN
        assert "answered nothing" in b.backend.status()["lastError"]
        status = a.backend.status()
        assert status["publishFailed"] >= 1  # its PUBLISH timed out (50 ms), and again
        assert status["publishing"] == "failing" and status["held"] == 1
        assert "Timeout" in status["publishError"]
    finally:
        redis.thaw()
    assert a.backend.flush(10)  # sent once Redis answers, not dropped
    status = a.backend.status()
    assert status["sent"] == 1 and status["dropped"] == 0 and status["publishing"] == "ok"
    wait_until(lambda: b.backend.state == "up", 15, "b back")
    wait_until(lambda: a.backend.state == "up", 15, "a back")
    thawed = Change("updated", uri=f"{H}/fs/docs/thawed.md")
    a.bus.publish(thawed)  # once: nothing of the outage stops it now
    wait_until(lambda: thawed in b.heard, what="after")


def test_a_change_published_during_a_short_outage_is_told_once_when_redis_answers(
    machines: Callable[..., Machine], redis: RedisProcess
) -> None:
    a = machines()
    b = machines(heartbeat=1.5)  # a freeze shorter than three of its pings: b stays subscribed
    meanwhile = Change("updated", uri=f"{H}/fs/docs/meanwhile.md")
    redis.freeze()
    try:
        a.bus.publish(meanwhile)
        wait_until(lambda: a.backend.status()["publishFailed"] >= 2, 5, "a tried twice")
        status = a.backend.status()
        assert status["publishing"] == "failing" and status["held"] == 1
        assert b.heard == []
    finally:
        redis.thaw()
    wait_until(lambda: meanwhile in b.heard, 10, "b told what changed during the outage")
    assert a.backend.flush(5)
    time.sleep(0.5)  # a copy of a PUBLISH that timed out would have come by now
    assert b.heard == [meanwhile] and a.heard == [meanwhile]
    assert b.backend.state == "up" and b.backend.status()["outages"] == 0
    status = a.backend.status()
    assert status["sent"] == 1 and status["dropped"] == 0 and status["held"] == 0
    assert status["publishing"] == "ok" and "publishError" not in status


def test_the_shared_cache_circuit_open_does_not_stop_a_publish(
    machines: Callable[..., Machine], redis: RedisProcess, channel: str, settings: Any
) -> None:
    # the box's settings: the cache and the bus on one Redis, the bus made as install() makes it
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": redis.url,
            "OPTIONS": {
                "socket_connect_timeout": 0.05,
                "socket_timeout": 0.05,
                "retry": Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
            },
        }
    }
    settings.TM_REDIS_URL = redis.url
    settings.TM_CACHE_PREFIX = channel.removesuffix(":tmsite:changes")
    settings.TM_REDIS_TIMEOUT = 0.05
    settings.TM_REDIS_RETRY_SECONDS = 30  # the cache's circuit stays open through the test
    settings.TM_SUB_BUS_HEARTBEAT = BEAT
    publisher = Bus()
    backend = redis_bus.from_settings(publisher)
    publisher.attach(backend)
    b = machines()
    try:
        publisher.publish(Change("updated", uri=f"{H}/fs/docs/before.md"))
        wait_until(lambda: len(b.heard) == 1, what="b heard the publisher")
        redis.freeze()  # a real timeout of a cache call (50 ms), as under load
        try:
            with pytest.raises(sharedcache.SharedCacheDown):
                sharedcache.call(lambda: sharedcache.cache().get("tm-test-circuit"))
        finally:
            redis.thaw()
        wait_until(redis.ping, what="Redis answers")
        assert sharedcache.circuit().state == "open"
        after = Change("updated", uri=f"{H}/fs/docs/after.md")
        publisher.publish(after)
        wait_until(lambda: after in b.heard, 5, "b heard a publish made while the circuit is open")
        assert sharedcache.circuit().state == "open"  # it was not asked
        status = backend.status()
        assert status["sent"] == 2 and status["dropped"] == 0 and status["publishing"] == "ok"
    finally:
        publisher.attach(None)
        backend.close()


@pytest.mark.django_db
def test_past_the_bound_a_change_is_dropped_and_health_says_what_is_held(
    channel: str,
) -> None:
    # a real port nothing listens on: every PUBLISH is refused
    with refusing_port() as port:
        bus = changes.bus()
        backend = RedisBackend(bus, f"redis://127.0.0.1:{port}/0", channel, held_max=3)
        previous = bus.attach(backend)
        try:
            for n in range(5):
                bus.publish(Change("updated", uri=f"{H}/fs/docs/{n}.md"))
            wait_until(
                lambda: backend.status()["publishing"] == "failing", what="the first PUBLISH"
            )
            reply = Client().get("/api/v1/health")
            assert reply.status_code == 200
            body = reply.json()
            assert body["status"] == "degraded"
            found = body["bus"]
            assert found["backend"] == "redis" and found["publishing"] == "failing"
            assert found["held"] == 3 and found["dropped"] == 2 and found["sent"] == 0
            assert found["publishFailed"] >= 1 and "Connection refused" in found["publishError"]
            assert (
                f"the change bus cannot publish to Redis ({found['publishError']}): 3 change(s) "
                "held for the other machines, tried again"
            ) in body["reasons"]
        finally:
            bus.attach(previous)
            backend.close()


# --- a listen stream on this process, a change from another --------------------------------


@pytest.fixture
def on_redis(redis: RedisProcess, channel: str) -> Iterator[RedisBackend]:
    """This process's bus carried by Redis, as ``redis_bus.install`` attaches it."""
    bus = changes.bus()
    backend = RedisBackend(bus, redis.url, channel, heartbeat=BEAT)
    previous = bus.attach(backend)
    try:
        yield backend
    finally:
        bus.attach(previous)
        backend.close()


def _other_process(redis: RedisProcess, channel: str, uri: str, tmp_path: Path) -> None:
    """A separate Python process of the box, configured for Redis, publishes ``uri`` and exits."""
    prefix = channel.removesuffix(":tmsite:changes")
    env = server_env(
        tmp_path / "other-var",
        TM_REDIS_URL=redis.url,
        TM_CACHE_PREFIX=prefix,
        PYTHONPATH=str(ROOT),
    )
    env["DJANGO_SETTINGS_MODULE"] = "tmsite.settings"
    code = (
        "import sys, django; django.setup()\n"
        "from tmsite.bus import changes\n"
        "changes.publish(sys.argv[1])\n"
        "print(changes.status()['backend'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, uri],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "redis"


def _open(http_client: httpx.Client, url: str, rid: str, uri: str) -> Any:
    return http_client.stream(
        "POST", url, json=listen_body(rid, resourceSubscriptions=[uri]), headers=listen_headers()
    )


def test_a_stream_hears_a_change_another_process_published(
    listen_url: str,
    http_client: httpx.Client,
    on_redis: RedisBackend,
    redis: RedisProcess,
    channel: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TM_LISTEN_IDLE", "60")
    uri = f"{H}/fs/docs/elsewhere.md"
    with _open(http_client, listen_url, "r-1", uri) as response:
        events = Events(response)
        assert events.message()["params"]["_meta"][SUB_ID] == "r-1"
        wait_until(lambda: on_redis.state == "up", what="subscribed")
        _other_process(redis, channel, uri, tmp_path)
        assert events.message() == {
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"uri": uri, "_meta": {SUB_ID: "r-1"}},
        }
        assert on_redis.status()["received"] == 1
        end_streams()  # end it now: nothing else came, nothing else does
        rest = [value for kind, value in events.rest() if kind == "message"]
    assert rest == [complete("r-1")]


def test_redis_stopped_ends_the_stream_and_a_new_one_works_once_it_is_back(
    listen_url: str,
    asgi_url: str,
    http_client: httpx.Client,
    on_redis: RedisBackend,
    redis: RedisProcess,
    channel: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TM_LISTEN_IDLE", "60")  # a stream not ended would hang the read (20 s)
    uri = f"{H}/fs/docs/kept.md"
    with _open(http_client, listen_url, "r-2", uri) as response:
        events = Events(response)
        events.message()
        wait_until(lambda: on_redis.state == "up", what="subscribed")
        redis.stop()
        started = time.monotonic()
        rest = [value for kind, value in events.rest() if kind == "message"]
        took = time.monotonic() - started
    assert rest == [complete("r-2")]
    assert took < ENDS_WITHIN
    wait_until(lambda: listen.SLOTS.status()["streams"] == 0, what="the slot freed")
    health = http_client.get(f"{asgi_url}/api/v1/health").json()
    assert health["status"] == "degraded"
    assert health["bus"]["backend"] == "redis" and health["bus"]["state"] == "down"
    assert health["bus"]["outages"] == 1 and health["bus"]["lost"] == 1
    assert any(r.startswith("the change bus does not reach Redis (") for r in health["reasons"])

    redis.start()
    wait_until(lambda: on_redis.state == "up", 15, "back")
    assert http_client.get(f"{asgi_url}/api/v1/health").json()["bus"]["state"] == "up"
    _heard_through_redis(http_client, listen_url, "r-3", uri, redis, channel)


def test_redis_frozen_ends_the_stream_and_a_new_one_works_once_it_thaws(
    listen_url: str,
    http_client: httpx.Client,
    on_redis: RedisBackend,
    redis: RedisProcess,
    channel: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TM_LISTEN_IDLE", "60")
    uri = f"{H}/fs/docs/kept.md"
    with _open(http_client, listen_url, "r-4", uri) as response:
        events = Events(response)
        events.message()
        wait_until(lambda: on_redis.state == "up", what="subscribed")
        redis.freeze()
        try:
            started = time.monotonic()
            rest = [value for kind, value in events.rest() if kind == "message"]
            took = time.monotonic() - started
        finally:
            redis.thaw()
    assert rest == [complete("r-4")]
    assert BEAT * 2 <= took < ENDS_WITHIN
    wait_until(lambda: on_redis.state == "up", 15, "thawed")
    _heard_through_redis(http_client, listen_url, "r-5", uri, redis, channel)


def _heard_through_redis(
    http_client: httpx.Client, url: str, rid: str, uri: str, redis: RedisProcess, channel: str
) -> None:
    """A new stream on this process hears a change another bus published through Redis."""
    other = Bus()
    backend = RedisBackend(other, redis.url, channel, heartbeat=BEAT)
    other.attach(backend)
    try:
        with _open(http_client, url, rid, uri) as response:
            events = Events(response)
            assert events.message()["params"]["_meta"][SUB_ID] == rid
            other.publish(Change("updated", uri=uri))
            assert events.message()["params"] == {"uri": uri, "_meta": {SUB_ID: rid}}
            end_streams()
            events.rest()
    finally:
        backend.close()
