"""Heavy git reads of a large repository: kept once, computed once at a time, abandoned, priced.

Serves a repository given by path (``--repo``) as the neighbour ``big`` with ``python -m
tmsite.serve`` (``--workers``, a temporary ``var/``: no Redis, so the answers are kept in
``var/git-kept/``) and, for each file of ``--files`` (a blame each), in the same run:

* ``together`` — ``--clients`` clients from loopback (no limit) ask the same cold blame of
  ``--together`` at the same moment, spread over the workers: each one's time; computed once,
  the others wait and read it;
* ``kept`` — the same blame again, from a fresh connection (whichever worker): warm;
* ``gone`` — a cold blame of ``--gone`` whose client gives up after ``--give-up`` seconds;
  the request log's line for it (``abandoned``, not ``ok``), and how soon a cheap read on the
  same worker is answered after;
* ``priced`` — a cold blame of ``--priced`` asked by a rate-limited caller
  (``X-Forwarded-For`` from a documentation range, the default budget of 120): refused
  ``too-costly`` with what it cost, then refused again at once; once kept, what it costs.

Each request's JSON line (``tmsite.requests``) is read from the server's stderr.

    .venv/bin/python bench/git_heavy.py --repo /path/to/git.git [--together refs.c]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.oplog.servers import json_lines, migrate, server_env, serving  # noqa: E402

HOST = "tinymachines"
CALLER = "203.0.113.9"


def uri(path: str, facet: str = "blame") -> str:
    # the whole blame: a ``?lines=`` range is blamed alone, walking less
    return f"tm://{HOST}/git/big/{path}?as={facet}"


def post(base: str, address: str, *, caller: str | None = None, timeout: float = 600) -> Any:
    """One ``resources/read``: (seconds, the JSON-RPC answer or the exception's name)."""
    headers = {"MCP-Protocol-Version": "2025-11-25"}
    if caller is not None:
        headers["X-Forwarded-For"] = caller
    body = {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": address}}
    started = time.perf_counter()
    try:
        with httpx.Client(timeout=timeout) as http:
            answer: Any = http.post(f"{base}/api/mcp", json=body, headers=headers).json()
    except httpx.HTTPError as exc:
        answer = type(exc).__name__
    return time.perf_counter() - started, answer


def outcome(answer: Any) -> str:
    if isinstance(answer, str):
        return answer
    error = answer.get("error")
    return "ok" if error is None else str(error["data"].get("reason"))


def rows_for(log: Path, address: str) -> list[dict[str, Any]]:
    return [r for r in json_lines(log) if r.get("event") == "request" and r["target"] == address]


def together(base: str, path: str, clients: int) -> None:
    results: list[Any] = [None] * clients

    def ask(i: int) -> None:
        results[i] = post(base, uri(path))

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    seconds = sorted(round(r[0], 2) for r in results)
    print(f"  together  {clients} clients at once: {wall:.2f} s wall; each {seconds}")
    print(f"            outcomes {sorted(outcome(r[1]) for r in results)}")
    again, answer = post(base, uri(path))
    print(f"  kept      again: {again * 1000:.1f} ms ({outcome(answer)})")


def gone(base: str, path: str, give_up: float, log: Path) -> None:
    spent, answer = post(base, uri(path), timeout=give_up)
    time.sleep(0.5)
    cheap, cheap_answer = post(base, f"tm://{HOST}/git/big/README.md")
    rows = rows_for(log, uri(path))
    shown = [(r["outcome"], round(r["duration_ms"])) for r in rows]
    print(f"  gone      client gave up after {spent:.1f} s ({outcome(answer)}); log: {shown}")
    print(f"            a small read {cheap * 1000:.0f} ms later: {outcome(cheap_answer)}")


def priced(base: str, path: str, log: Path) -> None:
    first, answer = post(base, uri(path), caller=CALLER)
    data = answer.get("error", {}).get("data", {}) if isinstance(answer, dict) else {}
    print(
        f"  priced    limited caller, cold: {first:.2f} s, {outcome(answer)} "
        f"cost={data.get('cost')} budget={data.get('budget')} narrower={data.get('narrower')}"
    )
    again, answer = post(base, uri(path), caller="203.0.113.10")
    print(f"            another limited caller: {again * 1000:.1f} ms, {outcome(answer)}")
    post(base, uri(path))  # the box's own loopback computes it
    kept, answer = post(base, uri(path), caller="203.0.113.11")
    time.sleep(1.0)  # the log lines are written by their own thread
    costs = [(r["outcome"], r["cost"]) for r in rows_for(log, uri(path))]
    print(f"            once kept: {kept * 1000:.1f} ms, {outcome(answer)}; costs {costs}")


def run(args: argparse.Namespace) -> int:
    repo = args.repo.resolve()
    work = Path(tempfile.mkdtemp(prefix="tm-git-heavy-"))
    env = server_env(
        work / "var",
        TM_GIT_REPOS=f"big={repo}",
        TM_LOG_JSON="1",
        TM_LOG_LEVEL="INFO",
    )
    migrate(env)
    log = work / "server.log"
    with serving(env, args.workers, log, threads=args.threads) as machine:
        base = machine.url
        post(base, f"tm://{HOST}/git/big/")  # the repository opened in a worker
        print(f"{args.together}:")
        together(base, args.together, args.clients)
        print(f"{args.gone}:")
        gone(base, args.gone, args.give_up, log)
        print(f"{args.priced}:")
        priced(base, args.priced, log)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--together", default="refs.c", help="the file asked all at once")
    parser.add_argument("--gone", default="Makefile", help="the file whose client gives up")
    parser.add_argument("--priced", default="diff.c", help="the file a limited caller asks")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--give-up", type=float, default=3.0)
    return run(parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
