"""Heavy answers kept once for every worker, computed once at a time, abandoned with their client.

Real threads, real files under a temporary ``var/``, and real processes: another worker is a
Python process of its own that reads the same files or holds the same lock (``flock``).

Spec: ANY2, ANY3.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tmsite import gitstore
from tmsite.core import work
from tmsite.gitstore import kept

pytestmark = pytest.mark.spec("ANY2", "ANY3")

KEY = ("blame", "/repo", "c" * 40, "src/app.py")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def var(settings: Any, tmp_path: Path) -> Iterator[Path]:
    """A ``var/`` of the test's own, no Redis, empty caches."""
    settings.VAR_DIR = tmp_path / "var"
    settings.TM_REDIS_URL = ""
    gitstore.clear_caches()
    yield settings.VAR_DIR
    gitstore.clear_caches()


def other_worker(var: Path, script: str) -> subprocess.Popen[str]:
    """Another worker: a Python process with the box's settings and the same ``var/``."""
    prelude = textwrap.dedent(
        """
        import django, fcntl, sys, time
        django.setup()
        from tmsite.gitstore import kept
        KEY = ("blame", "/repo", "c" * 40, "src/app.py")
        """
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "tmsite.settings",
        "TM_VAR_DIR": str(var),
        "TM_SECRET_KEY": "kept-tests",
    }
    return subprocess.Popen(
        [sys.executable, "-c", prelude + textwrap.dedent(script)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_threads_asking_one_key_compute_it_once() -> None:
    calls: list[int] = []
    gate = threading.Event()

    def compute() -> list[str]:
        calls.append(1)
        gate.wait(10)
        return ["line"]

    with ThreadPoolExecutor(8) as pool:
        asked = [pool.submit(kept.once, KEY, compute, len) for _ in range(8)]
        time.sleep(0.3)
        gate.set()
        answers = [future.result(timeout=10) for future in asked]
    assert calls == [1]
    assert answers == [["line"]] * 8


def test_an_answer_is_kept_on_disk_for_another_worker(var: Path) -> None:
    assert kept.once(KEY, lambda: ["kept line"], len) == ["kept line"]
    files = list((var / "git-kept").glob("*/*.pickle"))
    assert [f.name for f in files] == [f"{kept.store_key(KEY)}.pickle"]
    worker = other_worker(
        var,
        """
        def compute():
            sys.exit("computed again")
        print(kept.once(KEY, compute, len))
        """,
    )
    out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err
    assert out.strip() == "['kept line']"


def test_a_worker_waits_for_the_one_computing_and_reads_its_answer(var: Path) -> None:
    worker = other_worker(
        var,
        """
        def compute():
            print("computing", flush=True)
            time.sleep(1.5)
            return ["from the other worker"]
        kept.once(KEY, compute, len)
        """,
    )
    assert worker.stdout is not None
    assert worker.stdout.readline().strip() == "computing"
    started = time.monotonic()
    answer = kept.once(KEY, lambda: pytest.fail("computed twice"), len)
    assert answer == ["from the other worker"]
    assert time.monotonic() - started > 0.5  # it waited
    worker.wait(timeout=30)


def test_a_waiter_whose_client_left_stops_waiting(var: Path) -> None:
    worker = other_worker(
        var,
        """
        def compute():
            print("computing", flush=True)
            time.sleep(30)
        kept.once(KEY, compute, len)
        """,
    )
    try:
        assert worker.stdout is not None
        assert worker.stdout.readline().strip() == "computing"
        gone = threading.Event()
        threading.Timer(0.3, gone.set).start()
        started = time.monotonic()
        with work.abandoned_when(gone), pytest.raises(work.Abandoned):
            kept.once(KEY, lambda: pytest.fail("computed while waiting"), len)
        assert time.monotonic() - started < 2
    finally:
        worker.kill()
        worker.wait()


def test_an_abandoned_computation_is_not_kept() -> None:
    gone = threading.Event()

    def compute() -> list[str]:
        gone.set()  # the client leaves while the walk runs
        work.spend("commits")
        return ["never"]

    with work.abandoned_when(gone), pytest.raises(work.Abandoned):
        kept.once(KEY, compute, len)
    assert kept.once(KEY, lambda: ["computed anew"], len) == ["computed anew"]


def walk(commits: int) -> list[str]:
    for _ in range(commits):
        work.spend("commits")
    return ["walked"]


def test_a_computation_past_the_allowance_is_remembered_and_refused_at_once() -> None:
    prices: dict[work.Unit, float] = {"commits": 1 / 20}
    with work.allowing(10, prices), pytest.raises(work.OverBudget) as first:
        kept.once(KEY, lambda: walk(300), len)
    assert first.value.tokens == pytest.approx(201 / 20)  # stopped at the 201st commit
    assert first.value.allowance == 10
    calls: list[int] = []
    with work.allowing(10, prices), pytest.raises(work.OverBudget) as again:
        kept.once(KEY, lambda: calls.append(1) or walk(300), len)  # type: ignore[func-returns-value]
    assert calls == []  # refused without the work
    assert again.value.tokens == pytest.approx(201 / 20)
    # a caller whose budget is larger than the one it went past computes it (so does a caller
    # with no limit); from then on it is kept for everyone
    with work.allowing(20, prices):
        assert kept.once(KEY, lambda: walk(300), len) == ["walked"]
    with work.allowing(10, prices):
        assert kept.once(KEY, lambda: pytest.fail("computed again"), len) == ["walked"]


def burn() -> list[str]:
    """A walk whose every step (one commit) takes 2 ms of CPU: a blame's diffs."""
    while True:
        end = time.thread_time() + 0.002
        while time.thread_time() < end:
            pass
        work.spend("commits")


def test_heavy_work_costs_its_cpu_when_that_is_more_than_its_units() -> None:
    prices: dict[work.Unit, float] = {"commits": 1 / 20, "cpu": 1 / 2}
    with (
        work.metered() as meter,
        work.allowing(5, prices),
        pytest.raises(work.OverBudget) as over,
    ):
        kept.once(KEY, burn, len)
    # stopped at the first commit past 10 ms of CPU (5 tokens), not after 100 commits
    assert 5 < over.value.tokens < 8
    units = meter.units()
    assert units["commits"] <= 8
    # what was charged: its commits, and the CPU beyond them
    charged = units["commits"] * prices["commits"] + units["cpu"] * prices["cpu"]
    assert charged == pytest.approx(over.value.tokens, abs=0.5)


def test_work_outside_a_heavy_block_has_no_allowance() -> None:
    with work.allowing(1, {"commits": 1.0}):
        walk(50)  # a plain read's units are charged after, never stopped
        with pytest.raises(work.OverBudget), work.heavy():
            walk(2)


def test_the_files_are_trimmed_to_their_bound(var: Path) -> None:
    store = kept.FileStore(var / "bounded", max_bytes=10_000)
    for i in range(40):
        store.put(f"{i:064x}", b"x" * 1_000)
        time.sleep(0.002)
    store.trim()
    left = sorted(p.stem for p in (var / "bounded").glob("*/*.pickle"))
    assert 5 <= len(left) <= 10
    assert left[-1] == f"{39:064x}"  # the newest stay
