"""The Redis bucket: every process of every machine spends from one budget, atomically."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import caches

from tests.oplog.servers import ROOT
from tmsite.callers.buckets import Policy, RedisStore, decision
from tmsite.callers.clock import FakeClock

pytestmark = pytest.mark.spec("OP1", "OP5")

SPENDER = textwrap.dedent(
    """
    import os, sys, time
    import django
    django.setup()
    from tmsite.callers.buckets import Policy, RedisStore

    start, attempts, caller = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    store = RedisStore()
    rule = Policy(burst=300.0, refill=1.0)
    while time.time() < start:
        time.sleep(0.001)
    print(sum(store.take(caller, 1, 7_000_000.0, rule)[0] for _ in range(attempts)))
    """
)


@pytest.fixture
def redis_cache(settings: Any, redis_url: str, cache_prefix: str) -> Iterator[Any]:
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": redis_url,
            "KEY_PREFIX": cache_prefix,
        }
    }
    cache = caches["default"]
    yield cache
    client = cache._cache.get_client(None, write=True)
    for key in client.scan_iter(f"{cache_prefix}:*"):
        client.delete(key)  # this test's keys only: another may be using the same Redis


def test_processes_on_redis_grant_exactly_the_burst(
    redis_url: str, cache_prefix: str, tmp_path: Path
) -> None:
    env = {**os.environ, "TM_REDIS_URL": redis_url, "DJANGO_SETTINGS_MODULE": "tmsite.settings"}
    env["TM_CACHE_PREFIX"] = cache_prefix
    env["TM_VAR_DIR"] = str(tmp_path)
    env["TM_SECRET_KEY"] = "many-machines"
    caller = f"198.51.100.{int(time.time()) % 200}"
    start = time.time() + 3.0
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", SPENDER, str(start), "200", caller],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    granted = [int(p.communicate(timeout=60)[0]) for p in processes]
    assert sum(granted) == 300  # 800 attempts from four processes, one bucket of 300


def test_refill_and_retry_after_on_redis(redis_cache: Any) -> None:
    store, rule, clock = RedisStore(), Policy(burst=5, refill=0.5), FakeClock(2_000_000.0)
    assert [store.take("a", 1, clock(), rule)[0] for _ in range(6)] == [True] * 5 + [False]
    allowed, tokens = store.take("a", 3, clock(), rule)
    refused = decision(allowed, 3, tokens, rule)
    assert (refused.allowed, refused.retry_after) == (False, 6)
    clock.advance(5)
    assert store.take("a", 3, clock(), rule)[0] is False
    clock.advance(1)
    assert store.take("a", 3, clock(), rule) == (True, pytest.approx(0.0))


def test_redis_keeps_no_address_and_forgets_a_full_bucket(redis_cache: Any) -> None:
    store, rule = RedisStore(), Policy(burst=4, refill=2)
    store.take("198.51.100.23", 1, time.time(), rule)
    client = redis_cache._cache.get_client(None, write=False)
    keys = [key.decode() for key in client.keys(f"{redis_cache.key_prefix}:*tm-rate:b:*")]
    assert len(keys) == 1
    assert "198.51.100.23" not in keys[0]
    values = client.hgetall(keys[0])
    assert set(values) == {b"t", b"s"}
    assert not any(b"198.51.100" in v for v in values.values())
    ttl_ms = client.pttl(keys[0])
    assert 0 < ttl_ms <= 3000  # full again after 2 s (plus a second of slack): then gone


def test_each_day_has_its_own_secret(redis_cache: Any) -> None:
    day = 86_400
    store, rule = RedisStore(), Policy(burst=2, refill=0.001)
    t = 20_000 * day + 10.0
    assert [store.take("a", 1, t, rule)[0] for _ in range(3)] == [True, True, False]
    assert store.take("a", 1, t + day, rule)[0] is True
    other = RedisStore()  # another process reads the same day's secret from the cache
    assert other.take("a", 1, t + day, rule)[0] is True
    assert other.take("a", 1, t + day, rule)[0] is False


def test_a_charge_on_redis_goes_into_debt_and_lives_until_it_is_paid(redis_cache: Any) -> None:
    store, rule, clock = RedisStore(), Policy(burst=4, refill=2), FakeClock(3_000_000.0)
    caller = f"198.51.100.{int(time.time()) % 200}"
    assert store.take(caller, 1, clock(), rule) == (True, pytest.approx(3))
    assert store.charge(caller, 9, clock(), rule) == pytest.approx(-4)  # floored at -burst
    client = redis_cache._cache.get_client(None, write=False)
    (key,) = client.keys(f"{redis_cache.key_prefix}:*tm-rate:b:*")
    # empty → full takes 2 s; 4 in debt takes 2 s more (plus a second of slack)
    assert 4000 < client.pttl(key) <= 5000
    assert store.take(caller, 1, clock(), rule) == (False, pytest.approx(-4))
    assert 4000 < client.pttl(key) <= 5000  # a refusal in debt does not shorten its life
    clock.advance(2.5)
    assert store.take(caller, 1, clock(), rule) == (True, pytest.approx(0))


def test_a_redis_that_came_back_empty_is_given_the_secret_every_process_holds(
    redis_cache: Any,
) -> None:
    from tmsite.core import sharedcache

    store, rule, t = RedisStore(), Policy(burst=3, refill=0.001), 20_100 * 86_400 + 10.0
    assert store.take("a", 1, t, rule)[0] is True
    client = redis_cache._cache.get_client(None, write=True)
    for key in client.scan_iter(f"{redis_cache.key_prefix}:*"):
        client.delete(key)  # what a restart leaves: no secret, no bucket
    # an outage came and went (the circuit opened, a trial closed it)
    circuit = sharedcache.circuit()
    circuit.failed(ConnectionRefusedError(111, "Connection refused"), trial=False)
    circuit.succeeded(trial=True)
    assert [store.take("a", 1, t, rule)[0] for _ in range(3)] == [True, True, True]
    # a process started now keys the caller as this one does: one bucket, spent
    assert RedisStore().take("a", 1, t, rule)[0] is False
