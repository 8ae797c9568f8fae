"""Each worker's memory over many distinct git reads of a large repository: flat, or not.

Serves a repository given by path (``--repo``; a bare git directory or a work tree, read only)
as the neighbour ``big`` through ``TM_GIT_REPOS`` with ``python -m tmsite.serve``
(``--workers`` × ``--threads``, a temporary ``var/``), then sends ``--reads`` distinct reads from
``--clients`` threads over loopback: files at tags spread over the whole history (60 %), their
``?as=stat`` (20 %) and directory listings (20 %), no address twice. The addresses come from
the git CLI (``git for-each-ref``, ``git ls-tree``), which is allowed here as an oracle only.

Every ``--every`` reads it samples each worker's ``/proc/<pid>/status``: ``VmRSS`` and its two
parts, ``RssAnon`` (the heap: parsed objects, caches) and ``RssFile`` (pages of the mapped pack
and index files, which the kernel can drop and read again). At the end it prints the curve, the
largest RSS of any worker against ``--ceiling`` (MiB), and the answers by outcome.

    .venv/bin/python bench/git_memory.py --repo /path/to/git.git [--reads 20000] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from urllib.parse import quote

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.oplog.servers import migrate, server_env, serving  # noqa: E402

HOST = "tinymachines"
NAME = "big"
#: The largest file read whole (the read cap is 256 KiB; larger ones would be refused).
MAX_FILE = 200_000


def git(repo: Path, *args: str) -> str:
    """The git CLI's output (the oracle; never used by the product)."""
    done = subprocess.run(
        ["git", f"--git-dir={repo}", *args], capture_output=True, text=True, check=True
    )
    return done.stdout


def git_dir(repo: Path) -> Path:
    """The git directory of ``repo`` (a work tree's ``.git``, or the bare directory itself)."""
    return repo / ".git" if (repo / ".git").is_dir() else repo


def addresses(repo: Path, count: int, seed: int) -> list[str]:
    """``count`` distinct read URIs: files, stats and directories at tags across the history."""
    tags = git(repo, "for-each-ref", "--sort=creatordate", "--format=%(refname:short)", "refs/tags")
    names = [t for t in tags.split() if t]
    rng = random.Random(seed)
    picked = names[:: max(1, len(names) // 60)] or ["HEAD"]
    files: list[tuple[str, str]] = []
    dirs: list[tuple[str, str]] = []
    for tag in picked:
        listing = git(repo, "ls-tree", "-r", "-t", "-l", tag)
        for line in listing.splitlines():
            meta, _, path = line.partition("\t")
            kind, size = meta.split()[1], meta.split()[3]
            if kind == "tree":
                dirs.append((tag, path))
            elif kind == "blob" and size.isdigit() and int(size) <= MAX_FILE:
                files.append((tag, path))
    rng.shuffle(files)
    rng.shuffle(dirs)
    out: list[str] = []
    plan = ["file"] * 3 + ["stat", "dir"]
    seen: set[str] = set()
    it_files, it_stats, it_dirs = iter(files), iter(files[::-1]), iter(dirs)
    while len(out) < count:
        kind = plan[len(out) % len(plan)]
        try:
            if kind == "dir":
                tag, path = next(it_dirs)
                uri = f"tm://{HOST}/git/{NAME}/{quote(path)}/?at={quote(tag)}"
            else:
                tag, path = next(it_stats if kind == "stat" else it_files)
                uri = f"tm://{HOST}/git/{NAME}/{quote(path)}?at={quote(tag)}"
                if kind == "stat":
                    uri += "&as=stat"
        except StopIteration:
            plan.remove(kind)
            if not plan:
                break
            continue
        if uri not in seen:
            seen.add(uri)
            out.append(uri)
    return out


def status(pid: int) -> dict[str, int]:
    """A process's resident memory in KiB: ``VmRSS``, ``RssAnon``, ``RssFile``."""
    out: dict[str, int] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile"):
                out[key] = int(value.split()[0])
    except OSError:
        pass
    return out


HEADER = "  reads      s   each worker: RSS / anon / file (MiB)"


def line(count: int, at: float, rows: list[dict[str, int]]) -> str:
    """One sample: reads so far, seconds, and each worker's RSS, anon and file parts in MiB."""
    cells = "   ".join(
        f"{r.get('VmRSS', 0) / 1024:5.0f} / {r.get('RssAnon', 0) / 1024:4.0f} / "
        f"{r.get('RssFile', 0) / 1024:4.0f}"
        for r in rows
    )
    return f"  {count:6d} {at:6.1f}   {cells}"


def outcome(reply: httpx.Response) -> str:
    """``ok``, a refusal's reason, or the HTTP status."""
    if reply.status_code != 200:
        return f"http-{reply.status_code}"
    error = reply.json().get("error")
    return "ok" if error is None else str((error.get("data") or {}).get("reason", error["code"]))


def run(args: argparse.Namespace) -> int:
    """Serve, read, sample; print the curve and the verdict."""
    repo = args.repo.resolve()
    uris = addresses(git_dir(repo), args.reads, args.seed)
    print(f"{len(uris)} distinct reads of {repo} ({args.workers} workers × {args.threads} threads)")
    work = Path(tempfile.mkdtemp(prefix="tm-git-memory-"))
    env = server_env(
        work / "var",
        TM_GIT_REPOS=f"{NAME}={repo}",
        TM_LOG_JSON="0",
        TM_LOG_REQUESTS="0",
        TM_RATE_LIMIT="0",
    )
    migrate(env)
    outcomes: Counter[str] = Counter()
    samples: list[tuple[int, float, list[dict[str, int]]]] = []
    lock = threading.Lock()
    done = [0]
    with serving(env, args.workers, work / "server.log", threads=args.threads) as machine:
        time.sleep(1.0)
        pids = machine.workers()
        samples.append((0, 0.0, [status(p) for p in pids]))
        started = time.perf_counter()

        def client(part: list[str]) -> None:
            with httpx.Client(base_url=machine.url, timeout=120) as http:
                for uri in part:
                    body = {
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "resources/read",
                        "params": {"uri": uri},
                    }
                    try:
                        got = outcome(http.post("/api/mcp", json=body))
                    except httpx.HTTPError as exc:
                        got = type(exc).__name__
                    with lock:
                        outcomes[got] += 1
                        done[0] += 1
                        if done[0] % args.every == 0:
                            at = time.perf_counter() - started
                            samples.append((done[0], at, [status(p) for p in pids]))
                            print(line(*samples[-1]), flush=True)

        print(HEADER, flush=True)
        print(line(*samples[0]), flush=True)
        parts = [uris[i :: args.clients] for i in range(args.clients)]
        threads = [threading.Thread(target=client, args=(p,)) for p in parts]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
        samples.append((done[0], elapsed, [status(p) for p in pids]))
    print(line(*samples[-1]))
    print(f"\n{done[0]} reads in {elapsed:.1f} s ({done[0] / elapsed:.0f}/s); outcomes:")
    print("  " + ", ".join(f"{k} {v}" for k, v in outcomes.most_common()))
    peak = max((r.get("VmRSS", 0) for _c, _a, rows in samples for r in rows), default=0) / 1024
    verdict = "under" if peak <= args.ceiling else "OVER"
    print(f"\nlargest worker RSS {peak:.0f} MiB: {verdict} the {args.ceiling} MiB ceiling")
    if args.json:
        args.json.write_text(json.dumps({"samples": samples, "outcomes": outcomes}, indent=1))
    return 0 if peak <= args.ceiling else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, required=True, help="the repository to serve")
    parser.add_argument("--reads", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--every", type=int, default=2_000, help="reads between two samples")
    parser.add_argument("--ceiling", type=int, default=300, help="MiB a worker may hold")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", type=Path, help="also write the samples here")
    return run(parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
