"""The token bucket: burst, constant refill, honest retryAfter, costs — on a fake clock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tmsite.callers import buckets, costs
from tmsite.callers.buckets import (
    SWEEP_EVERY,
    FileStore,
    MemoryStore,
    Policy,
    Store,
    decision,
    digest,
    step,
)
from tmsite.callers.clock import FakeClock

pytestmark = pytest.mark.spec("OP1")

POLICY = Policy(burst=10, refill=2)


@pytest.fixture(params=["memory", "file"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "memory":
        return MemoryStore()
    return FileStore(tmp_path / "buckets", slots=64)


def test_a_new_caller_has_the_whole_burst_and_then_nothing(store: Store) -> None:
    now = 1_000.0
    results = [store.take("198.51.100.1", 1, now, POLICY)[0] for _ in range(11)]
    assert results == [True] * 10 + [False]


def test_tokens_come_back_at_the_refill_rate_and_never_past_the_burst(store: Store) -> None:
    clock = FakeClock(1_000.0)
    for _ in range(10):
        assert store.take("a", 1, clock(), POLICY)[0]
    clock.advance(1.0)  # 2 tokens a second
    assert [store.take("a", 1, clock(), POLICY)[0] for _ in range(3)] == [True, True, False]
    clock.advance(0.25)  # half a token: not enough
    assert store.take("a", 1, clock(), POLICY) == (False, pytest.approx(0.5))
    clock.advance(0.25)
    assert store.take("a", 1, clock(), POLICY) == (True, pytest.approx(0.0))
    clock.advance(3600)  # a long pause fills the bucket, no more
    assert [store.take("a", 1, clock(), POLICY)[0] for _ in range(11)] == [True] * 10 + [False]


def test_callers_have_separate_buckets(store: Store) -> None:
    for _ in range(10):
        store.take("a", 1, 5.0, POLICY)
    assert store.take("a", 1, 5.0, POLICY)[0] is False
    assert store.take("b", 1, 5.0, POLICY)[0] is True


def test_a_refused_request_spends_nothing(store: Store) -> None:
    for _ in range(4):
        store.take("a", 2, 5.0, POLICY)
    assert store.take("a", 4, 5.0, POLICY) == (False, pytest.approx(2.0))
    assert store.take("a", 2, 5.0, POLICY) == (True, pytest.approx(0.0))


#: (seconds paused after emptying the bucket, the cost asked, the whole seconds it must wait) at
#: 0.75 tokens a second, worked out by hand: the fewest whole seconds after which what the
#: pause refilled plus seconds × 0.75 reaches the cost.
HONEST_WAITS = [
    pytest.param(0, 1, 2, id="1-short-in-1.33s"),
    pytest.param(0, 2, 3, id="2-short-in-2.67s"),
    pytest.param(0, 3, 4, id="3-short-in-4s"),
    pytest.param(0, 4, 6, id="4-short-in-5.33s"),
    pytest.param(0, 8, 11, id="8-short-in-10.67s"),
    pytest.param(1, 2, 2, id="1.25-short-in-1.67s"),
    pytest.param(4, 4, 2, id="1-short-in-1.33s-after-a-pause"),
    pytest.param(4, 3.5, 1, id="0.5-short-in-0.67s-after-a-pause"),
]


@pytest.mark.parametrize(("pause", "cost", "wait"), HONEST_WAITS)
def test_retry_after_is_honest(store: Store, pause: float, cost: float, wait: int) -> None:
    """Waiting exactly ``retryAfter`` seconds lets the refused request through; a second less
    does not. Both are asked of the store itself, on its clock."""
    rule = Policy(burst=8, refill=0.75)
    clock = FakeClock(50_000.0)
    assert [store.take("a", 1, clock(), rule)[0] for _ in range(9)] == [True] * 8 + [False]
    clock.advance(pause)
    allowed, tokens = store.take("a", cost, clock(), rule)
    refused = decision(allowed, cost, tokens, rule)
    assert not refused.allowed
    clock.advance(refused.retry_after - 1)
    assert store.take("a", cost, clock(), rule)[0] is False, "a second short"
    clock.advance(1)
    assert store.take("a", cost, clock(), rule)[0] is True, "after exactly retryAfter"
    assert refused.retry_after == wait


def test_decision_reports_remaining_and_reset() -> None:
    allowed, tokens, _ = step(None, None, 0.0, 3, POLICY)
    made = decision(allowed, 3, tokens, POLICY)
    assert (made.allowed, made.remaining, made.retry_after, made.reset) == (True, 7, 0, 2)
    refused = decision(False, 4, 1.0, POLICY)
    assert (refused.retry_after, refused.reset) == (2, 5)


def test_a_clock_behind_neither_refills_nor_drains() -> None:
    allowed, tokens, stamp = step(4.0, 100.0, 90.0, 1, POLICY)
    assert (allowed, tokens, stamp) == (True, 3.0, 100.0)


def test_a_new_day_forgets_every_bucket(store: Store) -> None:
    day = 86_400.0
    for _ in range(10):
        store.take("a", 1, 3 * day - 1, POLICY)
    assert store.take("a", 1, 3 * day - 1, POLICY)[0] is False
    assert store.take("a", 1, 3 * day, POLICY)[0] is True  # new secret, new keys


def test_the_file_keeps_no_address(tmp_path: Path) -> None:
    path = tmp_path / "buckets"
    store = FileStore(path, slots=64)
    store.take("198.51.100.23", 1, 10.0, POLICY)
    raw = path.read_bytes()
    assert b"198.51.100.23" not in raw
    assert "198.51.100.23".encode("utf-16-le") not in raw


def test_a_bucket_full_again_is_erased_from_the_file(tmp_path: Path) -> None:
    """The key standing for a caller stays only while its bucket is below full: erased when a
    take probes its slot, and by the sweep of the whole table (at most every minute)."""
    path = tmp_path / "buckets"
    store = FileStore(path, slots=64, probes=4)
    store.take("198.51.100.23", 1, 100.0, POLICY)
    secret = path.read_bytes()[16:48]  # the day's secret, in the header
    key = digest(secret, "198.51.100.23")
    assert key in path.read_bytes()
    store.take("198.51.100.24", 1, 100.0 + POLICY.full_after - 1, POLICY)  # not full yet
    assert key in path.read_bytes()
    store.take("198.51.100.24", 1, 100.0 + SWEEP_EVERY + 1, POLICY)  # full again: swept
    assert key not in path.read_bytes()
    assert digest(secret, "198.51.100.24") in path.read_bytes()  # its own take wrote it again


def test_a_probe_erases_the_full_buckets_it_passes(tmp_path: Path) -> None:
    path = tmp_path / "buckets"
    store = FileStore(path, slots=4, probes=4)
    store.take("a", 1, 100.0, POLICY)
    store.take("b", 1, 100.0, POLICY)
    secret = path.read_bytes()[16:48]
    later = 100.0 + POLICY.full_after  # both full again, no sweep due yet
    store.take("c", 1, later, POLICY)
    raw = path.read_bytes()
    assert digest(secret, "a") not in raw and digest(secret, "b") not in raw


def test_the_file_reuses_the_slot_of_a_full_bucket(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "buckets", slots=4, probes=4)
    for caller in "abcd":
        store.take(caller, 1, 10.0, POLICY)
    # every slot holds a live bucket; five seconds later all are full again, so free
    for caller in "efgh":
        assert store.take(caller, 10, 15.0, POLICY)[0] is True
    assert [store.take(caller, 1, 15.0, POLICY)[0] for caller in "efgh"] == [False] * 4


def test_take_caps_the_cost_at_the_burst(settings: Any, clock: FakeClock) -> None:
    settings.TM_RATE_STORE = "memory"
    settings.TM_RATE_BURST = 4
    settings.TM_RATE_REFILL = 1
    buckets._stores.clear()
    try:
        first = buckets.take("a", 8)
        assert (first.allowed, first.cost, first.remaining) == (True, 4, 0)
        second = buckets.take("a", 8)
        assert (second.allowed, second.retry_after) == (False, 4)
    finally:
        buckets._stores.clear()


# --- costs ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("uri", "kind", "cost"),
    [
        ("tm://tinymachines/fs/docs/index.md", "fs", 1),
        ("tm://tinymachines/fs/docs/", "fs", 1),
        ("tm://tinymachines/git/tmsite/README.md?as=log", "history", 1),
        ("tm://tinymachines/git/tmsite/README.md?as=blame", "history", 1),
        ("tm://tinymachines/fs/docs/index.md?as=blocks", "blocks", 2),
        ("tm://tinymachines/http/tinymachines/docs/mcp", "http", 4),
        ("tm://tinymachines/http/tinymachines/docs/mcp?as=stat", "http", 4),
        ("tm://tinymachines/mcp/terrapulse/", "mcp", 2),
        ("tm://tinymachines/mcp/terrapulse/tools/search", "mcp", 2),
        ("tm://tinymachines/mcp/terrapulse/map", "mcp", 2),
        ("tm://tinymachines/mcp/terrapulse/dex/earthquake/42", "mcp-run", 8),
        ("tm://tinymachines/mcp/terrapulse/resources/", "mcp", 2),
        ("tm://tinymachines/mcp/terrapulse/resources/quake:%2F%2F42", "mcp-run", 8),
        ("tm://tinymachines/mcp/terrapulse/resources/quake:%2F%2F42?as=raw", "mcp-run", 8),
        ("tm://tinymachines/mcp/terrapulse/resources/quake:%2F%2F42?as=declaration", "mcp", 2),
        ("tm://tinymachines/mcp/terrapulse/resources/quake:%2F%2F42?as=stat", "mcp", 2),
        ("tm://tinymachines/", "protocol", 1),
        ("not a uri", "bad-uri", 1),
    ],
)
def test_reads_cost_by_mount_and_facet(uri: str, kind: str, cost: int) -> None:
    priced = costs.of_uri(uri)
    assert (priced.kind, priced.cost) == (kind, cost)


def test_pages_cost_more_than_files_and_peer_runs_most() -> None:
    file = costs.of_uri("tm://tinymachines/fs/docs/index.md").cost
    page = costs.of_uri("tm://tinymachines/http/tinymachines/docs/").cost
    run = costs.of_uri("tm://tinymachines/mcp/terrapulse/dex/earthquake/1").cost
    assert file < page < run


def test_a_tool_call_keeps_the_name_and_never_the_arguments() -> None:
    priced = costs.of_tool("resolve", {"uri": "tm://tinymachines/http/tinymachines/docs/"})
    assert (priced.kind, priced.cost, priced.target, priced.facet) == ("http", 4, "resolve", "")
    assert costs.of_tool("overview", {}).cost == 4
    assert costs.of_tool("piece", {"key": "secret-key"}).target == "piece"


def test_costs_can_be_repriced_in_settings(settings: Any) -> None:
    settings.TM_RATE_COSTS = {"http": 6}
    assert costs.of_uri("tm://tinymachines/http/tinymachines/docs/").cost == 6
