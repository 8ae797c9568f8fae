"""Heavy git reads: priced after the cache, refused ``too-costly`` past a budget, abandoned.

A real repository of 300 commits where ``notes.md`` changed only in the first (its history walks
all 300), ``docs/sparse.md`` changed again only in ``c299``, ``c250``, ``c150`` and ``c50``, and
each later commit ``i`` rewrote line ``7i mod 300`` of ``ladder.txt`` (a blame that walks them all
to blame its first line, and blames lines scattered over the file on the way), served over
real loopback HTTP: the live server for the budget (a caller forwarded by a proxy on loopback,
burst 10 refilled at 1 a second on a fake clock), and ``tmsite.serve.app`` on uvicorn in a
thread of the test for a client that goes away while another worker — a process of its own
holding the answer's lock — computes what it asked.

Spec: ANY2, ANY3.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.gitstore.builder import Builder
from tests.oplog.conftest import CALLER
from tests.serve.inthread import served as served_in_thread
from tmsite import gitstore
from tmsite.callers import buckets
from tmsite.callers.clock import FakeClock
from tmsite.gitstore import kept
from tmsite.mounts import registry
from tmsite.oplog.logs import JsonFormatter
from tmsite.serve.app import Application

pytestmark = pytest.mark.spec("ANY2", "ANY3")

COMMITS = 300
BURST = 10
LOG = "tm://tinymachines/git/walk/notes.md?as=log&n=8"
BLAME = "tm://tinymachines/git/walk/n.txt?as=blame"
LADDER = "tm://tinymachines/git/walk/ladder.txt?as=blame"
#: The commits after the first that changed ``docs/sparse.md``.
SPARSE = (299, 250, 150, 50)


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


def _text(lines: list[str]) -> bytes:
    return "".join(f"{line}\n" for line in lines).encode()


@pytest.fixture
def walk(settings: Any, tmp_path: Path) -> Iterator[Path]:
    """The repository ``walk``, served; a ``var/`` of the test's own; empty caches."""
    builder = Builder.init(str(tmp_path / "walk"))
    ladder = [f"line {i} from the start" for i in range(COMMITS)]
    head = builder.commit(
        "c0",
        {
            "notes.md": b"notes\n",
            "n.txt": b"0\n",
            "ladder.txt": _text(ladder),
            "docs/sparse.md": b"0\n",
        },
        when=0,
    )
    for i in range(1, COMMITS):
        ladder[7 * i % COMMITS] = f"line {7 * i % COMMITS} rewritten by c{i}"
        changes = {"n.txt": f"{i}\n".encode(), "ladder.txt": _text(ladder)}
        if i in SPARSE:
            changes["docs/sparse.md"] = f"{i}\n".encode()
        head = builder.commit(f"c{i}", changes, [head], when=60 * i)
    builder.set_ref("refs/heads/main", head)
    builder.repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
    settings.TM_GIT_REPOS = {"walk": tmp_path / "walk"}
    settings.VAR_DIR = tmp_path / "var"
    settings.TM_REDIS_URL = ""
    gitstore.clear_caches()
    registry.reset()
    yield tmp_path / "walk"
    registry.reset()
    gitstore.clear_caches()


@pytest.fixture
def limited(settings: Any, clock: FakeClock) -> Iterator[FakeClock]:
    settings.TM_RATE_LIMIT = True
    settings.TM_RATE_STORE = "memory"
    settings.TM_RATE_BURST = BURST
    settings.TM_RATE_REFILL = 1
    # the walk's CPU is priced too when it is more than its commits; here the commits alone
    # (tests/gitstore/test_kept.py prices the CPU)
    settings.TM_RATE_UNIT_COSTS = {"cpu": 0}
    buckets._stores.clear()
    yield clock
    buckets._stores.clear()


def read(base: str, uri: str, rid: int, *, caller: str | None = CALLER) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": rid, "method": "resources/read", "params": {"uri": uri}}
    headers = {"MCP-Protocol-Version": "2025-11-25"}
    if caller is not None:
        headers["X-Forwarded-For"] = caller
    return httpx.post(f"{base}/api/mcp", json=body, headers=headers, timeout=30)


@pytest.mark.django_db(transaction=True)
def test_a_walk_past_a_whole_budget_is_refused_too_costly_then_at_once(
    walk: Path, limited: FakeClock, live_server: Any, lines: list[dict[str, Any]]
) -> None:
    base = live_server.url
    first = read(base, LOG, 1)
    error = first.json()["error"]
    assert error["code"] == -32002
    assert error["data"] == {
        "reason": "too-costly",
        "uri": LOG,
        "cost": 11,  # stopped at the 201st commit: 201 / 20 tokens, past the 10 of the budget
        "budget": BURST,
        # none of its entries was found: no narrower log is known to fit (any n walks as far)
        "narrower": [],
    }
    # what it spent until it stopped is charged: the caller is at the end of its budget
    assert first.headers["RateLimit"] == '"tm";r=0;t=11'
    limited.advance(5)
    again = read(base, LOG, 2)
    assert again.json()["error"]["data"]["cost"] == 11  # known: refused without the walk
    assert [(line["outcome"], line["cost"]) for line in lines] == [
        ("too-costly", 11),
        ("too-costly", 1),
    ]
    # the box's own loopback has no limit: it computes it, and keeps it for everyone
    assert "result" in read(base, LOG, 3, caller=None).json()
    kept_read = read(base, LOG, 4)
    assert "result" in kept_read.json()
    assert lines[-1]["kind"] == "history"
    assert lines[-1]["cost"] == 1  # a kept history costs what a file costs
    # a quarter of the entries (what was offered before) walks as far, and is refused too
    limited.advance(60)
    quarter = read(base, "tm://tinymachines/git/walk/notes.md?as=log&n=2", 5).json()["error"]
    assert (quarter["data"]["reason"], quarter["data"]["narrower"]) == ("too-costly", [])


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("path", ["docs/sparse.md", "docs/"])
def test_a_log_past_a_whole_budget_offers_the_entries_it_found(
    walk: Path, limited: FakeClock, live_server: Any, path: str
) -> None:
    base = live_server.url
    uri = f"tm://tinymachines/git/walk/{path}?as=log&n=8"
    error = read(base, uri, 1).json()["error"]
    # the 200 commits walked (c299 down to c100) held three of its entries: that many are
    # offered, a walk that stops at the third, within what the stopped one had walked
    offered = [f"tm://tinymachines/git/walk/{path}?as=log&n=3"]
    refusal = {"reason": "too-costly", "uri": uri, "cost": 11, "budget": BURST}
    assert error["code"] == -32002
    assert error["data"] == {**refusal, "narrower": offered}
    limited.advance(60)
    again = read(base, uri, 2).json()["error"]
    assert again["data"] == {**refusal, "narrower": offered}  # known: refused at once, the same
    for rid, address in enumerate(offered, 3):
        limited.advance(60)
        answer = read(base, address, rid).json()
        assert "result" in answer, answer
        body = json.loads(answer["result"]["contents"][0]["text"])
        assert (body["uri"], body["n"]) == (address, 3)
        assert [c["subject"] for c in body["commits"]] == [f"c{i}" for i in SPARSE[:3]]


def _runs(lines: set[int]) -> list[tuple[int, int]]:
    """The runs ``(first, last)`` of consecutive numbers in ``lines``."""
    runs: list[tuple[int, int]] = []
    for line in sorted(lines):
        if runs and runs[-1][1] == line - 1:
            runs[-1] = (runs[-1][0], line)
        else:
            runs.append((line, line))
    return runs


@pytest.mark.django_db(transaction=True)
def test_a_blame_past_a_whole_budget_offers_line_ranges_that_read(
    walk: Path, limited: FakeClock, live_server: Any
) -> None:
    base = live_server.url
    error = read(base, LADDER, 1).json()["error"]
    data = error["data"]
    assert error["code"] == -32002
    assert (data["reason"], data["uri"], data["cost"], data["budget"]) == (
        "too-costly",
        LADDER,
        11,
        BURST,
    )
    # the 200 commits walked (c299 down to c100) blamed the lines they rewrote: the three
    # longest runs of those lines are offered, each blamed alone
    blamed = {7 * i % COMMITS + 1 for i in range(100, COMMITS)}
    longest = sorted(_runs(blamed), key=lambda run: (run[0] - run[1], run[0]))[:3]
    offered = [f"{LADDER}&lines={first}-{last}" for first, last in sorted(longest)]
    assert data["narrower"] == offered
    limited.advance(60)
    again = read(base, LADDER, 2).json()["error"]["data"]
    assert (again["reason"], again["narrower"]) == ("too-costly", offered)  # known: at once
    for rid, ((first, last), uri) in enumerate(zip(sorted(longest), offered, strict=True), 3):
        limited.advance(60)
        answer = read(base, uri, rid).json()
        assert "result" in answer, answer
        body = json.loads(answer["result"]["contents"][0]["text"])
        assert body["total"] == COMMITS
        assert [line["line"] for line in body["lines"]] == list(range(first, last + 1))
        assert all("rewritten" in line["text"] for line in body["lines"])
    # a line the stopped walk had not reached (from the first commit) costs as much alone
    limited.advance(60)
    past = read(base, f"{LADDER}&lines=1-1", 9).json()["error"]["data"]
    assert (past["reason"], past["narrower"]) == ("too-costly", [])
    # a blame that had blamed nothing offers nothing: the file's history walks as far
    limited.advance(60)
    notes = read(base, "tm://tinymachines/git/walk/notes.md?as=blame", 10).json()["error"]["data"]
    assert (notes["reason"], notes["narrower"]) == ("too-costly", [])
    limited.advance(60)
    history = read(base, "tm://tinymachines/git/walk/notes.md?as=log", 11).json()["error"]["data"]
    assert history["reason"] == "too-costly"


def hold_lock(var: Path, name: str) -> subprocess.Popen[str]:
    """Another worker, computing the answer ``name``: a process holding its lock file."""
    lock = var / "git-kept" / name[:2] / f"{name}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    script = (
        "import fcntl, sys, time\n"
        "handle = open(sys.argv[1], 'a+b')\n"
        "fcntl.flock(handle, fcntl.LOCK_EX)\n"
        "print('held', flush=True)\n"
        "time.sleep(60)\n"
    )
    worker = subprocess.Popen(
        [sys.executable, "-c", script, str(lock)], stdout=subprocess.PIPE, text=True
    )
    assert worker.stdout is not None
    assert worker.stdout.readline().strip() == "held"
    return worker


@pytest.mark.django_db(transaction=True)
def test_a_read_whose_client_left_is_abandoned_and_logged_so(
    settings: Any, walk: Path, lines: list[dict[str, Any]]
) -> None:
    settings.TM_RATE_LIMIT = False
    repo = gitstore.open_repo(walk)
    head = gitstore.resolve(repo, None).commit
    name = kept.store_key(("blame", repo.path, head, "n.txt"))
    worker = hold_lock(settings.VAR_DIR, name)
    try:
        with served_in_thread(Application()) as base:
            started = time.monotonic()
            with pytest.raises(httpx.ReadTimeout):
                httpx.post(
                    f"{base}/api/mcp",
                    json={
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "resources/read",
                        "params": {"uri": BLAME},
                    },
                    headers={"MCP-Protocol-Version": "2025-11-25"},
                    timeout=1.0,
                )
            deadline = time.monotonic() + 10
            while not lines and time.monotonic() < deadline:
                time.sleep(0.05)
        assert [(line["outcome"], line["target"]) for line in lines] == [("abandoned", BLAME)]
        # it stopped when its client left, not when the other worker let go (60 s)
        assert time.monotonic() - started < 8
    finally:
        worker.kill()
        worker.wait()
