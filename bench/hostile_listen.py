"""What hostile listens cost the box, and whether its other answers wait for them.

Starts ``python -m tmsite.serve`` (one worker, eight request threads, a migrated temporary
database) on loopback and sends ``--concurrent`` ``subscriptions/listen`` requests at once, each
naming ``--uris`` distinct valid URIs (``--shape distinct``, a 3 MB body at 100,000) or one short
text repeated (``--shape junk``: ``["x"] * 830000``, 4 MB of refusals to echo). The client is
plain loopback, which the rate limit exempts, as in the probe that found the defect. While they
run, a prober asks ``ping`` and ``GET /api/v1/overview`` every 0.2 s. Printed: each hostile
request's time to its answer (a refusal) or to its acknowledgement (a stream's first event, after
which the stream is closed) and that size, the prober's latencies before and during, and the
server's resident memory (its process group, from ``/proc``) before, at its peak and after.
Linux only; every request is bounded in time; the server is stopped at the end.

    .venv/bin/python bench/hostile_listen.py --concurrent 16 --uris 100000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.mcp_vs_sdk import PYTHON, free_ports, migrated_env, start, wait_ready  # noqa: E402

HOST = "tinymachines"
REQUEST_TIMEOUT = 180.0
HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": "subscriptions/listen",
}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def body(shape: str, uris: int) -> bytes:
    listed = (
        [f"tm://{HOST}/fs/docs/n{i}.md" for i in range(uris)]
        if shape == "distinct"
        else ["x"] * uris
    )
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": "hostile",
            "method": "subscriptions/listen",
            "params": {"notifications": {"resourceSubscriptions": listed}, "_meta": META},
        }
    ).encode()


def group_rss_mb(pgid: int) -> float:
    """The resident memory of every process in group ``pgid``, in MB."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.getpgid(int(entry.name)) != pgid:
                continue
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except (OSError, ValueError):
            continue
    return total / 1024


class Prober(threading.Thread):
    """Asks ping and the overview every 0.2 s; keeps each answer's latency in ms."""

    def __init__(self, base: str) -> None:
        super().__init__(daemon=True)
        self.base, self.stop = base, threading.Event()
        self.ping: list[float] = []
        self.overview: list[float] = []
        self.failed = 0

    def run(self) -> None:
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        plain = {**HEADERS, "MCP-Protocol-Version": "2025-11-25"}
        del plain["Mcp-Method"]
        with httpx.Client(timeout=60) as client:
            mcp = f"{self.base}/api/mcp"
            while not self.stop.wait(0.2):
                self._time(self.ping, lambda: client.post(mcp, json=ping, headers=plain))
                self._time(self.overview, lambda: client.get(f"{self.base}/api/v1/overview"))

    def _time(self, kept: list[float], ask: Callable[[], httpx.Response]) -> None:
        started = time.perf_counter()
        try:
            ask().raise_for_status()
        except httpx.HTTPError:
            self.failed += 1
            return
        kept.append((time.perf_counter() - started) * 1000)


def first_event(answer: httpx.Response) -> int:
    """The bytes of a stream's first event (the acknowledgement); the stream is left open."""
    seen = bytearray()
    for chunk in answer.iter_raw():
        start = max(0, len(seen) - 3)
        seen += chunk
        end = seen.find(b"\n\n", start)
        if end >= 0:
            return end + 2
    return len(seen)


def hostile(base: str, payload: bytes, out: list[tuple[float, int, int]]) -> None:
    """One hostile listen: the time to its answer, or to a stream's acknowledgement, and its
    size. An acknowledged listen holds its stream open; it is closed once the first event is in,
    as a client that only wanted the acknowledgement would."""
    started = time.perf_counter()
    try:
        with (
            httpx.Client(timeout=REQUEST_TIMEOUT) as client,
            client.stream("POST", f"{base}/api/mcp", content=payload, headers=HEADERS) as answer,
        ):
            if answer.headers.get("content-type", "").startswith("text/event-stream"):
                size = first_event(answer)
            else:
                size = len(answer.read())
            out.append((time.perf_counter() - started, answer.status_code, size))
    except httpx.HTTPError:
        out.append((time.perf_counter() - started, 0, 0))


def summary(values: list[float]) -> str:
    if not values:
        return "none answered"
    ordered = sorted(values)
    return f"n={len(values)} median {statistics.median(ordered):.1f} ms, max {ordered[-1]:.1f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrent", type=int, default=16)
    parser.add_argument("--uris", type=int, default=100_000)
    parser.add_argument("--shape", choices=("distinct", "junk"), default="distinct")
    args = parser.parse_args(argv)
    if not 1 <= args.concurrent <= 64 or not 1 <= args.uris <= 1_000_000:
        parser.error("--concurrent must be in [1, 64] and --uris in [1, 1000000]")
    payload = body(args.shape, args.uris)
    with tempfile.TemporaryDirectory(prefix="tmsite-hostile-") as tmp:
        env = migrated_env(Path(tmp) / "var")
        port = free_ports(1)[0]
        argv_ = [str(PYTHON), "-m", "tmsite.serve", "--host", "127.0.0.1", "--port", str(port),
                 "--workers", "1", "--threads", "8"]  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        server = start("tmsite", argv_, env, f"{base}/api/mcp", Path(tmp))
        try:
            wait_ready(server)
            pgid = server.process.pid
            prober = Prober(base)
            prober.start()
            time.sleep(3)
            quiet_ping, quiet_overview = list(prober.ping), list(prober.overview)
            rss_before = group_rss_mb(pgid)
            results: list[tuple[float, int, int]] = []
            senders = [
                threading.Thread(target=hostile, args=(base, payload, results), daemon=True)
                for _ in range(args.concurrent)
            ]
            mark = len(prober.ping), len(prober.overview)
            started = time.perf_counter()
            for sender in senders:
                sender.start()
            peak = rss_before
            while any(sender.is_alive() for sender in senders):
                peak = max(peak, group_rss_mb(pgid))
                time.sleep(0.1)
            took = time.perf_counter() - started
            during_ping, during_overview = prober.ping[mark[0] :], prober.overview[mark[1] :]
            prober.stop.set()
            prober.join(10)
            rss_after = group_rss_mb(pgid)
        finally:
            server.stop()
    times = sorted(t for t, _, _ in results)
    print(
        f"{args.concurrent} listens at once, each {args.uris:,} URIs ({args.shape}), "
        f"{len(payload) / 1e6:.1f} MB each; all answered in {took:.2f} s"
    )
    print(
        f"  each: median {statistics.median(times):.2f} s, max {times[-1]:.2f} s; statuses "
        f"{sorted({s for _, s, _ in results})}; "
        f"answer or ack {max(n for _, _, n in results):,} bytes"
    )
    print(f"  ping      quiet: {summary(quiet_ping)}; during: {summary(during_ping)}")
    print(f"  overview  quiet: {summary(quiet_overview)}; during: {summary(during_overview)}")
    print(f"  probes failed: {prober.failed}")
    print(
        f"  server memory: {rss_before:.0f} MB before, {peak:.0f} MB at peak, "
        f"{rss_after:.0f} MB after"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
