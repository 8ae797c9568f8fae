"""The budget follows the work: a read is charged what it made the box do, after the answer.

A real directory of 5,000 names in a temporary checkout, served over real loopback HTTP by the
live server; every request comes from loopback with ``X-Forwarded-For`` (as nginx sends it),
so it spends from the caller's bucket (this process's memory, the default policy of 120
tokens refilled at 2 a second, on a fake clock). A miss there ranks the 5,000 names and a
listing page builds 500 entries: each is charged its units by ``costs.UNIT_COSTS`` — in the
``RateLimit`` header, the log line's ``cost`` and the refusal that comes the sooner — while a
small file, ``ping`` and ``tools/list`` keep their cost of 1 and a caller of small reads its
120 reads.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.gitstore.builder import Builder
from tests.oplog.conftest import CALLER
from tmsite.callers import buckets, costs
from tmsite.callers.buckets import FileStore, MemoryStore, Policy, Store
from tmsite.callers.clock import FakeClock
from tmsite.core import work
from tmsite.mounts import registry
from tmsite.oplog import recorder
from tmsite.oplog.logs import JsonFormatter
from tmsite.oplog.models import RequestLog

pytestmark = pytest.mark.spec("OP1", "OP2")

NAMES = 5000
BIG = "tm://tinymachines/fs/docs/big/"
FILE = "tm://tinymachines/fs/docs/index.md"
BURST, REFILL = 120, 2


def name(i: int) -> str:
    return f"part-{i:05d}-{'abcdefghij'[i % 10] * (i % 17)}.md"


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """``docs/index.md`` and ``docs/big/`` with 5,000 files (a new directory: not yet scanned)."""
    root = tmp_path / "checkout"
    big = root / "docs" / "big"
    big.mkdir(parents=True)
    (root / "docs" / "index.md").write_text("# Index\n\nA small file.\n")
    for i in range(NAMES):
        (big / name(i)).touch()
    return root


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[dict[str, Any]] = []
        self.setFormatter(JsonFormatter())

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(self.format(record)))


@pytest.fixture
def lines() -> Iterator[list[dict[str, Any]]]:
    """The request log's JSON lines written during the test."""
    handler = _Lines()
    logger = logging.getLogger("tmsite.requests")
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    yield handler.lines
    logger.removeHandler(handler)
    logger.setLevel(level)


@pytest.fixture
def served(
    settings: Any, checkout: Path, clock: FakeClock, live_server: Any
) -> Iterator[tuple[str, FakeClock]]:
    """The live server's base URL over the checkout, the default policy on the fake clock."""
    settings.TM_CHECKOUT = checkout
    settings.TM_FS_ROOTS = ["docs"]
    settings.TM_RATE_LIMIT = True
    settings.TM_RATE_STORE = "memory"
    settings.TM_RATE_BURST = BURST
    settings.TM_RATE_REFILL = REFILL
    buckets._stores.clear()
    registry.reset()
    yield live_server.url, clock
    registry.reset()
    buckets._stores.clear()


def mcp(base: str, method: str, rid: int, **params: Any) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    headers = {"X-Forwarded-For": CALLER, "MCP-Protocol-Version": "2025-11-25"}
    return httpx.post(f"{base}/api/mcp", json=body, headers=headers, timeout=30)


def remaining(reply: httpx.Response) -> int:
    """``r`` of the ``RateLimit`` header."""
    fields = dict(part.split("=") for part in reply.headers["RateLimit"].split(";")[1:])
    return int(fields["r"])


def miss(i: int) -> str:
    return f"{BIG}no-such-part-{i:05d}.md"


def worth(reply: httpx.Response, **units: int) -> int:
    """What a read that spent ``units`` and answered ``reply`` is charged, by the table."""
    spent = {**units, "bytes": len(reply.content)}
    work_done = sum(costs.UNIT_COSTS[unit] * n for unit, n in spent.items())
    return max(1, math.floor(1 + work_done))


def rate_limited(reply: httpx.Response, rid: int, uri: str) -> int:
    """The refusal's ``retryAfter``, after checking it is the real ``rate-limited`` refusal."""
    assert reply.status_code == 200
    body = reply.json()
    assert body["id"] == rid
    assert "result" not in body, body
    assert body["error"]["code"] == -32000
    assert "Too many requests" in body["error"]["message"]
    data = body["error"]["data"]
    assert (data["reason"], data["uri"]) == ("rate-limited", uri)
    assert "Retry-After" not in reply.headers  # an MCP refusal is HTTP 200
    retry_after: int = data["retryAfter"]
    assert reply.headers["RateLimit"] == f'"tm";r=0;t={retry_after}'
    return retry_after


@pytest.mark.django_db(transaction=True)
def test_a_miss_is_charged_the_names_it_ranked(
    served: tuple[str, FakeClock], lines: list[dict[str, Any]]
) -> None:
    base, _clock = served
    first = mcp(base, "resources/read", 1, uri=miss(1))
    assert first.json()["error"]["data"]["reason"] == "not-found"
    assert len(first.json()["error"]["data"]["nearest"]) == 5
    # the first miss also read the directory from the disk; the next finds it scanned
    assert worth(first, ranked=NAMES, scanned=NAMES) == 2
    assert first.headers["RateLimit-Policy"] == '"tm";q=120;w=60'
    assert first.headers["RateLimit"] == f'"tm";r={BURST - 2};t=1'
    second = mcp(base, "resources/read", 2, uri=miss(2))
    assert worth(second, ranked=NAMES) == 2
    assert second.headers["RateLimit"] == f'"tm";r={BURST - 4};t=2'
    assert [line["cost"] for line in lines] == [2, 2]
    assert [line["outcome"] for line in lines] == ["not-found", "not-found"]
    recorder.flush()
    rows = list(RequestLog.objects.order_by("id").values_list("kind", "target", "outcome"))
    assert rows == [("fs", miss(1), "not-found"), ("fs", miss(2), "not-found")]


@pytest.mark.django_db(transaction=True)
def test_hammering_misses_meets_the_limit_twice_as_soon(
    served: tuple[str, FakeClock], lines: list[dict[str, Any]]
) -> None:
    base, clock = served
    answered = 0
    while True:
        reply = mcp(base, "resources/read", answered + 1, uri=miss(answered))
        if "result" not in reply.json() and reply.json()["error"]["data"]["reason"] != "not-found":
            break
        answered += 1
        assert answered < BURST, "the misses were never refused"
    # 2 each: the 60th empties the bucket, the 61st waits for its token at 2 a second
    assert answered == BURST // 2
    assert [line["cost"] for line in lines[:-1]] == [2] * answered
    assert rate_limited(reply, answered + 1, miss(answered)) == 1
    assert lines[-1]["outcome"] == "rate-limited"
    clock.advance(1)
    again = mcp(base, "resources/read", 99, uri=miss(answered))
    assert again.json()["error"]["data"]["reason"] == "not-found"


@pytest.mark.django_db(transaction=True)
def test_a_listing_page_is_charged_its_entries_and_its_debt_is_waited_out(
    served: tuple[str, FakeClock], lines: list[dict[str, Any]]
) -> None:
    base, clock = served
    for i in range(BURST - 10):  # 10 tokens left
        assert "result" in mcp(base, "resources/read", i, uri=FILE).json()
    page = mcp(base, "resources/read", 200, uri=BIG)
    body = page.json()["result"]["contents"][0]
    assert len(json.loads(body["text"])["children"]) == 500
    charged = worth(page, listed=500, scanned=NAMES)
    assert charged == 33
    assert lines[-1]["cost"] == charged
    # 10 - 33: 23 in debt, shown as none left; full again after (120 + 23) / 2 seconds
    assert page.headers["RateLimit"] == '"tm";r=0;t=72'
    # a file now waits until the debt is paid and one token is back: 24 tokens, 12 seconds
    assert rate_limited(mcp(base, "resources/read", 201, uri=FILE), 201, FILE) == 12
    clock.advance(11)
    assert rate_limited(mcp(base, "resources/read", 202, uri=FILE), 202, FILE) == 1
    clock.advance(1)
    assert "result" in mcp(base, "resources/read", 203, uri=FILE).json()


@pytest.mark.django_db(transaction=True)
def test_cheap_reads_keep_their_cost_and_a_small_reader_its_allowance(
    served: tuple[str, FakeClock], lines: list[dict[str, Any]]
) -> None:
    base, _clock = served
    with httpx.Client(headers={"X-Forwarded-For": CALLER}, timeout=30) as client:
        assert remaining(mcp(base, "ping", 1)) == BURST - 1
        assert remaining(mcp(base, "tools/list", 2)) == BURST - 2
        assert remaining(client.get(f"{base}/api/v1/templates")) == BURST - 3
        reply = client.get(f"{base}/api/v1/resolve", params={"uri": FILE})
        assert reply.status_code == 200 and remaining(reply) == BURST - 4
    assert [line["cost"] for line in lines] == [1, 1, 1, 1]
    for i in range(BURST - 4):
        reply = mcp(base, "resources/read", 10 + i, uri=FILE)
        assert "result" in reply.json(), (i, reply.json())
    assert remaining(reply) == 0
    assert rate_limited(mcp(base, "resources/read", 999, uri=FILE), 999, FILE) == 1
    assert {line["cost"] for line in lines} == {1}


@pytest.mark.django_db(transaction=True)
def test_rest_charges_the_same_and_refuses_with_retry_after(
    served: tuple[str, FakeClock], lines: list[dict[str, Any]]
) -> None:
    base, _clock = served
    with httpx.Client(headers={"X-Forwarded-For": CALLER}, timeout=30) as client:
        pages = [client.get(f"{base}/api/v1/resolve", params={"uri": BIG}) for _ in range(4)]
        assert [page.status_code for page in pages] == [200] * 4
        # 33 for the first (it scans), 32 for each after: 120 - 129, 9 in debt
        assert [line["cost"] for line in lines] == [33, 32, 32, 32]
        assert worth(pages[1], listed=500) == 32
        assert pages[2].headers["RateLimit"] == '"tm";r=23;t=49'
        assert pages[3].headers["RateLimit"] == '"tm";r=0;t=65'
        refused = client.get(f"{base}/api/v1/resolve", params={"uri": FILE})
    # a file needs 10 tokens: 5 seconds
    assert refused.status_code == 429
    assert refused.headers["Retry-After"] == "5"
    assert refused.headers["RateLimit"] == '"tm";r=0;t=5'
    body = refused.json()
    assert isinstance(body.pop("error"), str)
    assert body == {"reason": "rate-limited", "uri": FILE, "retryAfter": 5}
    recorder.flush()
    outcomes = list(RequestLog.objects.order_by("id").values_list("surface", "outcome"))
    assert outcomes == [("rest", "ok")] * 4 + [("rest", "rate-limited")]


COMMITS = 300


@pytest.fixture
def history(settings: Any, tmp_path: Path) -> Iterator[None]:
    """A repository served as ``walk``: 300 commits, ``notes.md`` changed only in the first."""
    builder = Builder.init(str(tmp_path / "walk"))
    head = builder.commit("c0", {"notes.md": b"notes\n", "n.txt": b"0\n"}, when=0)
    for i in range(1, COMMITS):
        head = builder.commit(f"c{i}", {"n.txt": f"{i}\n".encode()}, [head], when=60 * i)
    builder.set_ref("refs/heads/main", head)
    builder.repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
    settings.TM_GIT_REPOS = {"walk": tmp_path / "walk"}
    # the walk's CPU is priced too when it is more than its commits; here the commits alone
    settings.TM_RATE_UNIT_COSTS = {"cpu": 0}
    registry.reset()
    yield
    registry.reset()


@pytest.mark.django_db(transaction=True)
def test_a_history_walk_is_charged_the_commits_it_visited(
    served: tuple[str, FakeClock], history: None, lines: list[dict[str, Any]]
) -> None:
    base, _clock = served
    log = "tm://tinymachines/git/walk/notes.md?as=log&n=5"
    reply = mcp(base, "resources/read", 1, uri=log)
    assert "result" in reply.json(), reply.json()
    # one commit changed notes.md: the walk visits all 300 to find it; 1 + 300 / 20
    assert worth(reply, commits=COMMITS) == 16
    assert reply.headers["RateLimit"] == f'"tm";r={BURST - 16};t=8'
    # the same log again is answered from what the first walk kept: its price, 1
    again = mcp(base, "resources/read", 2, uri=log)
    assert again.headers["RateLimit"] == f'"tm";r={BURST - 17};t=9'
    assert [(line["kind"], line["cost"]) for line in lines] == [("history", 16), ("history", 1)]


# --- the meter and the debt, without a server -----------------------------------------------


def test_the_meter_counts_only_inside_a_metered_request() -> None:
    work.spend("ranked", 10)  # nowhere to go
    with work.metered() as outer:
        work.spend("ranked", 3)
        with work.metered() as inner:
            work.spend("listed", 2)
        work.spend("ranked", 0)
    assert outer.units() == {"ranked": 3}
    assert inner.units() == {"listed": 2}


def test_every_unit_has_a_price() -> None:
    assert set(costs.UNIT_COSTS) == set(work.UNITS)
    assert costs.charged(costs.of_uri(FILE), {"bytes": 650}).cost == 1
    assert costs.charged(costs.of_uri(FILE), {"ranked": 5000}).cost == 2
    assert costs.charged(costs.of_uri(FILE), {"ranked": 100_000}).cost == 26
    page = costs.of_uri("tm://tinymachines/http/tinymachines.ai/docs/")
    assert costs.charged(page, {"fetched": 1, "bytes": 9000}).cost == 4  # what it is priced at
    assert costs.charged(costs.of_prompt("tour"), {"fetched": 2}).cost == 8
    assert costs.charged(costs.of_prompt("tour"), {"fetched": 3}).cost == 10


POLICY = Policy(burst=10, refill=2)


@pytest.fixture(params=["memory", "file"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "memory":
        return MemoryStore()
    return FileStore(tmp_path / "buckets", slots=64)


def test_a_charge_goes_into_debt_down_to_minus_the_burst(store: Store) -> None:
    assert store.take("a", 4, 100.0, POLICY) == (True, pytest.approx(6))
    assert store.charge("a", 8, 100.0, POLICY) == pytest.approx(-2)
    assert store.take("a", 1, 100.0, POLICY) == (False, pytest.approx(-2))
    assert store.take("a", 1, 101.0, POLICY) == (False, pytest.approx(0))
    assert store.take("a", 1, 101.5, POLICY) == (True, pytest.approx(0))
    assert store.charge("a", 1000, 101.5, POLICY) == pytest.approx(-10)
    assert store.charge("b", 3, 101.5, POLICY) == pytest.approx(7)  # a new caller: full


def test_a_negative_charge_gives_back_up_to_the_burst(store: Store) -> None:
    """What a request was charged up front beyond what it cost (a refused proposal) comes back."""
    assert store.take("a", 8, 100.0, POLICY) == (True, pytest.approx(2))
    assert store.charge("a", -7, 100.0, POLICY) == pytest.approx(9)
    assert store.charge("a", -7, 100.0, POLICY) == pytest.approx(10)  # never past the burst
    assert store.charge("b", -3, 100.0, POLICY) == pytest.approx(10)  # a new caller: full


def test_a_bucket_in_debt_is_kept_until_it_would_be_full(tmp_path: Path) -> None:
    """The file frees a slot only when its bucket would be full: debt takes longer to pay."""
    file = FileStore(tmp_path / "buckets", slots=64)
    file.charge("a", 20, 100.0, POLICY)  # -10: full after 10 s, not the 5 of an empty bucket
    assert file.take("a", 0, 107.0, POLICY) == (True, pytest.approx(4))
    file.charge("b", 20, 100.0, POLICY)
    assert file.take("b", 0, 110.0, POLICY) == (True, pytest.approx(10))


def test_the_charge_decision_says_the_debt_and_when_it_is_full(small_limit: FakeClock) -> None:
    buckets.take("198.51.100.9", 4)
    owed = buckets.charge("198.51.100.9", 10)
    assert (owed.allowed, owed.remaining, owed.retry_after, owed.reset) == (True, -4, 0, 14)
