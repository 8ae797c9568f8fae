"""Benchmark: what a read makes the box do, what it is charged, and when a caller is refused.

Run standalone::

    .venv/bin/python bench/budget.py [--calls 40] [--names 5000] [--commits 2000]

It configures Django over a temporary ``var/`` (a fresh SQLite database, migrated first) and a
temporary checkout: ``docs/index.md`` (a small file), ``docs/big/`` (``--names`` files) and a
git repository of ``--commits`` commits built with dulwich, in which ``notes.md`` changed only
in the first commit. Requests go to the WSGI application (``tmsite.wsgi.application``) in
process, from loopback with ``X-Forwarded-For``, as nginx on the same machine sends them.

**Per read.** For each scenario — ``ping``, ``tools/list``, the small file, a miss in
``docs/big/`` (a new name each time, so each one ranks the directory), the first listing page
of ``docs/big/``, ``?as=log`` of ``notes.md`` (a new ``n`` each time, so each one walks every
commit) — it prints the CPU milliseconds per request (``time.process_time``: the machine may
be shared), the tokens charged (the log line's ``cost``) and the CPU milliseconds per token.

**One hammering caller.** Under the default policy (``TM_RATE_BURST`` 120, ``TM_RATE_REFILL``
2), one caller sends the same request as fast as it can until the first ``rate-limited``
refusal (or ``--cap`` CPU seconds); it prints the requests answered, the CPU seconds they took
and the tokens they were charged, and what share of a core the caller holds once at the limit
(2 tokens a second, at that CPU per token). The buckets' clock runs on this process's CPU time,
so the refill is what a dedicated core would see however loaded the machine is. Each is run
twice: priced only (every unit at 0 tokens: what the cost table alone charged, as before) and
metered (the unit table).
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
CALLER = "203.0.113.40"


def build_checkout(root: Path, names: int, commits: int) -> None:
    (root / "docs" / "big").mkdir(parents=True)
    (root / "docs" / "index.md").write_text("# Index\n\nA small file.\n")
    for i in range(names):
        (root / "docs" / "big" / f"part-{i:05d}-{'abcdefghij'[i % 10] * (i % 17)}.md").touch()
    from dulwich.objects import Blob, Commit, Tree
    from dulwich.repo import Repo

    repo = Repo.init(str(root / "repo"), mkdir=True)
    store = repo.object_store
    notes = Blob.from_string(b"notes\n")
    store.add_object(notes)
    parent: bytes | None = None
    for i in range(commits):
        counter = Blob.from_string(f"{i}\n".encode())
        store.add_object(counter)
        tree = Tree()
        tree.add(b"notes.md", 0o100644, notes.id)
        tree.add(b"counter.txt", 0o100644, counter.id)
        store.add_object(tree)
        commit = Commit()
        commit.tree = tree.id
        commit.parents = [parent] if parent else []
        commit.author = commit.committer = b"Bench <bench@example.invalid>"
        commit.author_time = commit.commit_time = 1_700_000_000 + i * 60
        commit.author_timezone = commit.commit_timezone = 0
        commit.encoding = b"UTF-8"
        commit.message = f"change {i}\n".encode()
        store.add_object(commit)
        parent = commit.id
    assert parent is not None
    repo.refs[b"refs/heads/main"] = parent
    repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")


def configure(var_dir: Path, checkout: Path) -> WsgiApp:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tmsite.settings")
    os.environ.update(
        {
            "TM_VAR_DIR": str(var_dir),
            "TM_HOST": "bench",
            "TM_CHECKOUT": str(checkout),
            "TM_FS_ROOTS": "docs",
            "TM_GIT_REPOS": f"bench={checkout / 'repo'}",
            "TM_RATE_STORE": "memory",
            "TM_RATE_BURST": "120",
            "TM_RATE_REFILL": "2",
        }
    )
    os.environ.setdefault("TM_SECRET_KEY", "bench-only-" + "k" * 40)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    from tmsite.wsgi import application

    return application  # type: ignore[return-value]


class Lines(logging.Handler):
    """The request log's lines, kept: the last one's ``cost`` is what a request was charged."""

    def __init__(self) -> None:
        super().__init__()
        self.costs: list[int] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.costs.append(int(record.__dict__.get("cost", 0)))


def call(app: WsgiApp, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    environ: dict[str, Any] = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/api/mcp",
        "SCRIPT_NAME": "",
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "HTTP_ACCEPT": "application/json, text/event-stream",
        "HTTP_MCP_PROTOCOL_VERSION": "2025-11-25",
        "HTTP_X_FORWARDED_FOR": CALLER,
        "wsgi.input": io.BytesIO(body),
        "wsgi.url_scheme": "http",
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "wsgi.version": (1, 0),
    }
    status: list[str] = []
    chunks = app(environ, lambda s, h, e=None: status.append(s))
    text = b"".join(chunks)
    close = getattr(chunks, "close", None)
    if close is not None:
        close()
    assert status and status[0].startswith("200"), status
    answer: dict[str, Any] = json.loads(text)
    return answer


Request = Callable[[int], tuple[str, dict[str, Any]]]


def scenarios() -> list[tuple[str, Request, str]]:
    """(name, the i-th request, what its answer must be: ``result`` or a refusal's reason)."""
    big = "tm://bench/fs/docs/big/"
    log = "tm://bench/git/bench/notes.md?as=log&n={}"
    return [
        ("ping", lambda i: ("ping", {}), "result"),
        ("tools/list", lambda i: ("tools/list", {}), "result"),
        (
            "small file",
            lambda i: ("resources/read", {"uri": "tm://bench/fs/docs/index.md"}),
            "result",
        ),
        (
            "miss in docs/big/",
            lambda i: ("resources/read", {"uri": f"{big}no-such-part-{i:06d}.md"}),
            "not-found",
        ),
        ("listing page of docs/big/", lambda i: ("resources/read", {"uri": big}), "result"),
        (
            "log of notes.md",
            lambda i: ("resources/read", {"uri": log.format(1 + i % 100)}),
            "result",
        ),
    ]


def outcome(answer: dict[str, Any]) -> str:
    if "result" in answer:
        return "result"
    return str(answer["error"].get("data", {}).get("reason", answer["error"]["code"]))


def per_read(app: WsgiApp, lines: Lines, calls: int) -> None:
    from django.test import override_settings

    from tmsite.callers import buckets

    print(f"{'per read':<28} {'CPU ms':>8} {'tokens':>7} {'CPU ms/token':>13}")
    with override_settings(TM_RATE_BURST=1e12):
        buckets._stores.clear()
        for name, request, expect in scenarios():
            # the first request of a scenario warms what is cached by scan, not by request
            method, params = request(10_000)
            assert outcome(call(app, method, params)) == expect
            lines.costs.clear()
            started = time.process_time()
            for i in range(calls):
                method, params = request(i)
                assert outcome(call(app, method, params)) == expect, name
            spent = (time.process_time() - started) / calls * 1000
            tokens = sum(lines.costs) / len(lines.costs)
            print(f"{name:<28} {spent:>8.2f} {tokens:>7.1f} {spent / tokens:>13.2f}")
    buckets._stores.clear()


class CpuClock:
    """The buckets' clock, run on this process's CPU time: the refill a dedicated core sees."""

    def __init__(self) -> None:
        self.base = time.time() - time.process_time()

    def __call__(self) -> float:
        return self.base + time.process_time()


def hammer(
    app: WsgiApp, lines: Lines, request: Request, expect: str, cap: float
) -> tuple[int, float, float]:
    """Requests answered, their CPU seconds and tokens charged, before the first refusal.

    The caller stops at the first refusal, or after ``cap`` CPU seconds (then it was never
    refused).
    """
    from django.core.cache import caches

    from tmsite.callers import buckets
    from tmsite.gitstore import cache

    buckets._stores.clear()
    cache.clear_all()  # each run walks the history anew, as the first did
    caches["default"].clear()
    lines.costs.clear()
    answered, cpu = 0, 0.0
    saved, buckets.clock = buckets.clock, CpuClock()
    try:
        while cpu < cap:
            method, params = request(answered)
            started = time.process_time()
            got = outcome(call(app, method, params))
            if got == "rate-limited":
                break
            assert got == expect, got
            answered += 1
            cpu += time.process_time() - started
    finally:
        buckets.clock = saved
    return answered, cpu, float(sum(lines.costs[:answered]))


def hammering(app: WsgiApp, lines: Lines, cap: float) -> None:
    from django.test import override_settings

    from tmsite.callers.costs import UNIT_COSTS

    print()
    print("one caller as fast as it can, burst 120, refill 2 a second (of CPU time), until refused")
    head = f"{'hammering':<28} {'charged':<8} {'answered':>9} {'CPU s':>7} {'tokens':>7}"
    print(f"{head} {'CPU s a second at the limit':>28}")
    zero = dict.fromkeys(UNIT_COSTS, 0)
    for name, request, expect in scenarios():
        if name in ("ping", "tools/list"):
            continue
        for label, units in (("priced", zero), ("metered", {})):
            with override_settings(TM_RATE_UNIT_COSTS=units):
                answered, cpu, tokens = hammer(app, lines, request, expect, cap)
            # at the limit a caller gets 2 tokens a second: this much of a core
            sustained = min(1.0, 2 * cpu / tokens) if tokens else 0.0
            refused = "" if cpu < cap else f" (not refused in {cap:g} CPU s)"
            print(
                f"{name:<28} {label:<8} {answered:>9} {cpu:>7.2f} {tokens:>7.0f} "
                f"{sustained:>28.3f}{refused}"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=40, help="requests per scenario, per read")
    parser.add_argument("--names", type=int, default=5000, help="files in docs/big/")
    parser.add_argument("--commits", type=int, default=2000, help="commits in the repository")
    parser.add_argument(
        "--cap", type=float, default=60.0, help="CPU seconds a hammering caller may spend"
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tm-bench-budget-"))
    try:
        build_checkout(work / "checkout", args.names, args.commits)
        (work / "var").mkdir()
        app = configure(work / "var", work / "checkout")
        logger = logging.getLogger("tmsite.requests")
        for handler in logger.handlers:
            if isinstance(handler, logging.StreamHandler):
                handler.setStream(io.StringIO())
        lines = Lines()
        logger.addHandler(lines)
        per_read(app, lines, args.calls)
        hammering(app, lines, args.cap)
        from tmsite.oplog import recorder

        recorder.flush()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
