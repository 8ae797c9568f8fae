"""Heavy git answers kept in Redis: one machine computes, another reads; a lock in between.

Another machine is a process of its own with its own ``var/`` (no file it could share), and
Redis between them.

Spec: ANY2.
"""

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
from tmsite import gitstore
from tmsite.core import sharedcache
from tmsite.gitstore import kept

pytestmark = pytest.mark.spec("ANY2")

KEY = ("blame", "/repo", "d" * 40, "refs.c")

MACHINE = textwrap.dedent(
    """
    import sys, time
    import django
    django.setup()
    from tmsite.gitstore import kept
    KEY = ("blame", "/repo", "d" * 40, "refs.c")

    def compute():
        print("computing", flush=True)
        time.sleep(float(sys.argv[1]))
        return ["from the other machine"]

    print(kept.once(KEY, compute, len), flush=True)
    """
)


@pytest.fixture
def redis_cache(settings: Any, redis_url: str, cache_prefix: str, tmp_path: Path) -> Iterator[Any]:
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": redis_url,
            "KEY_PREFIX": cache_prefix,
        }
    }
    settings.TM_REDIS_URL = redis_url
    settings.VAR_DIR = tmp_path / "this-machine"
    sharedcache.reset()
    gitstore.clear_caches()
    cache = caches["default"]
    yield cache
    client = cache._cache.get_client(None, write=True)
    for key in client.scan_iter(f"{cache_prefix}:*"):
        client.delete(key)
    gitstore.clear_caches()
    sharedcache.reset()


def machine(redis_url: str, prefix: str, var: Path, seconds: float) -> subprocess.Popen[str]:
    env = {**os.environ, "TM_REDIS_URL": redis_url, "TM_CACHE_PREFIX": prefix}
    env.update(DJANGO_SETTINGS_MODULE="tmsite.settings", TM_VAR_DIR=str(var), TM_SECRET_KEY="kept")
    return subprocess.Popen(
        [sys.executable, "-c", MACHINE, str(seconds)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_another_machine_waits_for_the_one_computing_and_reads_it_from_redis(
    redis_cache: Any, redis_url: str, cache_prefix: str, tmp_path: Path
) -> None:
    other = machine(redis_url, cache_prefix, tmp_path / "other-machine", 1.5)
    assert other.stdout is not None
    assert other.stdout.readline().strip() == "computing"
    started = time.monotonic()
    answer = kept.once(KEY, lambda: pytest.fail("computed on two machines"), len)
    assert answer == ["from the other machine"]
    assert time.monotonic() - started > 0.5  # it waited on the lock
    _out, err = other.communicate(timeout=30)
    assert other.returncode == 0, err
    # nothing on this machine's disk: Redis holds it
    assert not list((tmp_path / "this-machine").glob("git-kept/*/*.pickle"))
    assert redis_cache.get(f"gitkept:{kept.store_key(KEY)}") is not None


def test_an_answer_kept_here_is_read_by_another_machine(
    redis_cache: Any, redis_url: str, cache_prefix: str, tmp_path: Path
) -> None:
    assert kept.once(KEY, lambda: ["from this machine"], len) == ["from this machine"]
    other = machine(redis_url, cache_prefix, tmp_path / "other-machine", 0)
    out, err = other.communicate(timeout=60)
    assert other.returncode == 0, err
    assert "computing" not in out
    assert out.strip() == "['from this machine']"
