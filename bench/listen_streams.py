"""Many ``subscriptions/listen`` streams open on one box: what they cost, and how fast they hear.

It starts ``python -m tmsite.serve`` (``--workers`` workers, 2 by default) on a free loopback
port, over a temporary checkout made for the run: ``docs/`` with ``FILES`` small files, the
checkout itself a git repository (built with dulwich) whose ``main`` holds ``docs/a.md``, served
as ``tm://tinymachines/git/box/``; a temporary SQLite database, migrated first. Then:

1. ``ping`` for ``--seconds`` over ``--connections`` kept-alive connections (``loadgen.py``):
   requests per second, p50 and p99 with no stream open;
2. ``--streams`` listen streams (1,000 by default) opened over loopback by one asyncio loop of
   raw sockets, ``OPENING`` at a time, each subscribed to one URI: most to one file of
   ``docs/``, one in ten to the directory ``docs/``, one in a hundred (at least one) to the git
   URI of ``docs/a.md``; each must be acknowledged with its subscription id and exactly its URI;
3. the server's resident memory (the sum of ``VmRSS`` over its process group, from ``/proc``)
   before the first stream, with a tenth of them open and with all of them open: per stream
   in all, and the marginal cost of the last nine tenths (the change sources the first stream
   installs are paid once);
4. ``ping`` again, with every stream open: the ratio to step 1 (the goal: within 10 %);
5. ``--edits`` file edits, ``SPACING`` seconds apart, each of a file some stream subscribed to:
   the time from the write to each notification of every stream that should hear of it (its
   file's subscribers, and the directory's), p50 and p99 over all of them (the goal: p50 under
   250 ms); a notification a stream did not ask for is counted, and must not happen;
6. the git branch moved (a new dulwich commit changing ``docs/a.md``, the ref set; no ``git``
   process) ``max(3, --edits // 3)`` times: the same latency for the git streams (the goal: p50
   under 1 s; the refs are polled every ``TM_SUB_GIT_POLL`` seconds, 0.5 by default);
7. every stream closed, and ``ping`` once more (the figure of step 4 is compared with the mean
   of steps 1 and 7, so that drift in a shared machine's load falls on both sides).

The server's caps on streams are raised for the run, in its environment: every stream comes
from one caller (127.0.0.1, no proxy header), so ``TM_LISTEN_STREAMS_PER_CALLER`` and
``TM_LISTEN_URIS_PER_CALLER`` are set to ``--streams``, as are ``TM_LISTEN_STREAMS`` and
``TM_LISTEN_URIS`` (each worker holds the streams it was given, whichever they are);
``TM_LISTEN_IDLE`` is set past the run's deadline, so no stream is ended for idling. A loopback
caller without a proxy header spends no rate-limit budget.

The run stops by itself: every wait is bounded and the whole run is cut at ``--deadline``
seconds (exit 2). The server is stopped (SIGTERM to its process group, then SIGKILL) however the
run ends; it is also told to stop should this script be killed. Traffic goes to 127.0.0.1 only.
The exit status is 1 when a stream was not acknowledged, a notification was missed or one not
asked for arrived, or a ``ping`` failed; the goals are reported, not enforced (a shared machine
cannot be held to them).

    .venv/bin/python bench/listen_streams.py [--streams 1000] [--workers 2] [--seconds 5]
        [--edits 30] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import loadgen, mcp_vs_sdk  # noqa: E402
from tests.gitstore.builder import Builder  # noqa: E402

HOST = "tinymachines"
REPO = "box"
FS = f"tm://{HOST}/fs/docs/"
GIT_URI = f"tm://{HOST}/git/{REPO}/docs/a.md"
PROTOCOL = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": PROTOCOL,
    "io.modelcontextprotocol/clientInfo": {"name": "listen-streams-bench", "version": "1.0.0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
SUB_ID = "io.modelcontextprotocol/subscriptionId"
#: Files in ``docs/``; streams subscribed to a file spread over them.
FILES = 50
#: Listens being opened at once (each runs the endpoint's checks on a request thread).
OPENING = 64
#: Seconds between two edits (or two moves of the branch), once the last one was heard.
SPACING = 0.3
#: Seconds an edit's notifications may take before the missing ones are counted missed.
HEAR_TIMEOUT = 10.0
#: Seconds for every stream to be acknowledged.
OPEN_TIMEOUT = 180.0
#: Bounds that keep a run finite whatever the arguments.
MAX_STREAMS = 5000
MAX_EDITS = 500


class Deadline(Exception):
    """The run's hard deadline passed."""


# --- the streams -------------------------------------------------------------------------------


@dataclass
class Listener:
    """One listen stream: what it subscribed to and what it heard (arrival times)."""

    index: int
    kind: str  # "file", "dir" or "git"
    uri: str
    acked: bool = False
    error: str = ""
    heard: list[tuple[float, str]] = field(default_factory=list)
    unasked: int = 0
    ended: str = ""

    @property
    def rid(self) -> str:
        return f"listen-{self.index}"

    def wants(self, uri: str) -> bool:
        """Whether this stream asked to hear of ``uri``."""
        if self.kind == "dir":
            return uri.startswith(self.uri) and uri != self.uri
        return uri == self.uri


def plan_streams(count: int) -> list[Listener]:
    """``count`` listeners: one in 100 on the git URI (at least one), one in 10 on ``docs/``."""
    out: list[Listener] = []
    for i in range(count):
        if i % 100 == 99 or (count < 100 and i == count - 1):
            out.append(Listener(i, "git", GIT_URI))
        elif i % 10 == 9:
            out.append(Listener(i, "dir", FS))
        else:
            out.append(Listener(i, "file", f"{FS}f{i % FILES:03d}.md"))
    return out


def listen_request(target: loadgen.Target, listener: Listener) -> bytes:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": listener.rid,
            "method": "subscriptions/listen",
            "params": {
                "notifications": {"resourceSubscriptions": [listener.uri]},
                "_meta": META,
            },
        },
        separators=(",", ":"),
    ).encode()
    head = (
        f"POST {target.path} HTTP/1.1\r\nHost: {target.host}:{target.port}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        f"MCP-Protocol-Version: {PROTOCOL}\r\nMcp-Method: subscriptions/listen\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode("ascii") + body


class Streams:
    """The listen streams, held by one asyncio loop on a thread of its own."""

    def __init__(self, target: loadgen.Target, listeners: list[Listener]) -> None:
        self.target = target
        self.listeners = listeners
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="streams", daemon=True)
        self.thread.start()
        self.tasks: list[asyncio.Task[None]] = []
        self.writers: list[asyncio.StreamWriter] = []

    def call(self, coro: Any, timeout: float) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def open(self, listeners: list[Listener]) -> float:
        """Open ``listeners``' streams; returns once each is acknowledged or failed (seconds)."""
        started = time.perf_counter()
        self.call(self._open(listeners), OPEN_TIMEOUT + 5)
        return time.perf_counter() - started

    async def _open(self, listeners: list[Listener]) -> None:
        gate = asyncio.Semaphore(OPENING)
        ready = [self.loop.create_future() for _ in listeners]
        for listener, done in zip(listeners, ready, strict=True):
            self.tasks.append(asyncio.ensure_future(self._hold(listener, gate, done)))
        await asyncio.wait(ready, timeout=OPEN_TIMEOUT)
        for listener, done in zip(listeners, ready, strict=True):
            if not done.done():
                listener.error = listener.error or "not acknowledged in time"

    async def _hold(self, listener: Listener, gate: asyncio.Semaphore, ready: Any) -> None:
        writer: asyncio.StreamWriter | None = None
        try:
            async with gate:
                reader, writer = await asyncio.open_connection(self.target.host, self.target.port)
                self.writers.append(writer)
                writer.write(listen_request(self.target, listener))
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), OPEN_TIMEOUT)
                status = int(head.split(b" ", 2)[1])
                chunked = b"transfer-encoding: chunked" in head.lower()
                if status != 200 or b"text/event-stream" not in head.lower():
                    listener.error = f"HTTP {status}: {head[:200]!r}"
                    return
                events = _events(reader, chunked)
                first = await asyncio.wait_for(events.__anext__(), OPEN_TIMEOUT)
                _check_ack(listener, first)
                listener.acked = True
                if not ready.done():
                    ready.set_result(None)
            async for message in events:
                self._heard(listener, message)
            listener.ended = listener.ended or "closed by the server"
        except (OSError, asyncio.IncompleteReadError, ValueError, TimeoutError) as exc:
            if not listener.error and not listener.acked:
                listener.error = f"{type(exc).__name__}: {exc}"
            listener.ended = listener.ended or f"{type(exc).__name__}"
        except (StopAsyncIteration, RuntimeError):
            listener.error = listener.error or "the stream ended before its acknowledgement"
        finally:
            if not ready.done():
                ready.set_result(None)
            if writer is not None:
                writer.close()

    @staticmethod
    def _heard(listener: Listener, message: dict[str, Any]) -> None:
        now = time.perf_counter()
        params = message.get("params") or {}
        if "result" in message:
            listener.ended = f"ended by the server: {message['result'].get('resultType')}"
            return
        uri = params.get("uri", "")
        if (
            message.get("method") != "notifications/resources/updated"
            or (params.get("_meta") or {}).get(SUB_ID) != listener.rid
            or not listener.wants(uri)
        ):
            listener.unasked += 1
            return
        listener.heard.append((now, uri))

    def close(self) -> None:
        """Close every stream (the client goes: the server frees its slots) and the loop."""

        async def close_all() -> None:
            for writer in self.writers:
                writer.close()
            for task in self.tasks:
                task.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)

        with contextlib.suppress(Exception):
            self.call(close_all(), 30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)


def _check_ack(listener: Listener, message: dict[str, Any]) -> None:
    params = message.get("params") or {}
    if message.get("method") != "notifications/subscriptions/acknowledged":
        raise ValueError(f"the first message is not the acknowledgement: {message}")
    if (params.get("_meta") or {}).get(SUB_ID) != listener.rid:
        raise ValueError(f"the acknowledgement's subscription id is not {listener.rid}: {message}")
    if params.get("notifications") != {"resourceSubscriptions": [listener.uri]}:
        raise ValueError(f"the acknowledgement honours something else: {message}")


async def _events(reader: asyncio.StreamReader, chunked: bool) -> Any:
    """The JSON messages of an SSE body (de-chunked), one at a time; comments skipped."""
    buffer = b""
    while True:
        if chunked:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip(), 16)
            if size == 0:
                return
            data = await reader.readexactly(size)
            await reader.readexactly(2)
        else:
            data = await reader.read(65536)
            if not data:
                return
        buffer += data
        while b"\n\n" in buffer:
            block, buffer = buffer.split(b"\n\n", 1)
            lines = [line for line in block.split(b"\n") if line.startswith(b"data:")]
            if lines:
                yield json.loads(b"\n".join(line[5:].lstrip() for line in lines))


# --- what the machine measures -----------------------------------------------------------------


def group_rss(pgid: int) -> int:
    """Resident bytes of every process in the process group ``pgid`` (from ``/proc``)."""
    total = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[2]) != pgid:
                continue
            for line in Path(f"/proc/{entry.name}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            continue
    return total


def ping(url: str, seconds: float, connections: int) -> dict[str, Any]:
    result = loadgen.run(
        loadgen.Target(url, mcp_vs_sdk.HEADERS), "ping", seconds=seconds, connections=connections
    )
    return {
        "rps": round(result.rps, 1),
        "p50_ms": round(result.percentile_ms(50), 2),
        "p99_ms": round(result.percentile_ms(99), 2),
        "requests": result.requests,
        "errors": result.errors,
        "first_error": result.first_error,
    }


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile (``nan`` for none)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(pct / 100.0 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def hear(
    listeners: list[Listener], uri: str, change: Any, timeout: float = HEAR_TIMEOUT
) -> tuple[list[float], int]:
    """Make ``change()`` happen; the latency (ms) of each stream that wants ``uri``, and the
    count of those that did not hear of it within ``timeout``."""
    expected = [listener for listener in listeners if listener.acked and listener.wants(uri)]
    started = time.perf_counter()
    change()
    deadline = started + timeout
    heard: dict[int, float] = {}
    while len(heard) < len(expected) and time.perf_counter() < deadline:
        for listener in expected:
            if listener.index in heard:
                continue
            for at, told in list(listener.heard):
                if told == uri and at >= started:
                    heard[listener.index] = (at - started) * 1000
                    break
        time.sleep(0.005)
    return list(heard.values()), len(expected) - len(heard)


# --- the run -----------------------------------------------------------------------------------


def make_checkout(where: Path) -> Builder:
    """The served checkout: ``docs/`` files on disk, and a repository whose main has a.md."""
    docs = where / "docs"
    docs.mkdir(parents=True)
    for n in range(FILES):
        (docs / f"f{n:03d}.md").write_text(f"# f{n:03d}\n")
    (docs / "a.md").write_text("# a\n")
    repo = Builder.init(str(where))
    first = repo.commit("first", {"docs/a.md": b"# a\n"}, when=0)
    repo.set_ref("refs/heads/main", first)
    repo.repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
    return repo


def server_env(work: Path, streams: int, deadline: float) -> dict[str, str]:
    env = mcp_vs_sdk.migrated_env(work / "var")
    env.update(
        {
            "TM_CHECKOUT": str(work / REPO),
            "TM_CHECKOUT_REPO": REPO,
            "TM_FS_ROOTS": "docs",
            "TM_GIT_REPOS": "",
            "TM_HOST": HOST,
            # the caps, raised for the run: every stream is one loopback caller's
            "TM_LISTEN_STREAMS": str(streams),
            "TM_LISTEN_STREAMS_PER_CALLER": str(streams),
            "TM_LISTEN_URIS": str(streams),
            "TM_LISTEN_URIS_PER_CALLER": str(streams),
            "TM_LISTEN_IDLE": str(int(deadline) + 60),
        }
    )
    return env


def run(args: argparse.Namespace) -> dict[str, Any]:
    load_before = os.getloadavg()
    listeners = plan_streams(args.streams)
    report: dict[str, Any] = {
        "streams": args.streams,
        "workers": args.workers,
        "connections": args.connections,
        "seconds": args.seconds,
        "caps": {
            "TM_LISTEN_STREAMS": args.streams,
            "TM_LISTEN_STREAMS_PER_CALLER": args.streams,
            "TM_LISTEN_URIS": args.streams,
            "TM_LISTEN_URIS_PER_CALLER": args.streams,
        },
    }
    with tempfile.TemporaryDirectory(prefix="tm-listen-bench-") as tmp:
        work = Path(tmp)
        repo = make_checkout(work / REPO)
        env = server_env(work, args.streams, args.deadline)
        launch = mcp_vs_sdk.Launch(
            "tmsite",
            lambda port: mcp_vs_sdk.TM_SERVERS["serve"](port, args.workers, args.threads),
            env,
            "/api/mcp",
        )
        started: list[mcp_vs_sdk.Server] = []
        streams: Streams | None = None
        try:
            mcp_vs_sdk.launch_all([launch], work, started)
            server = started[0]
            ping(server.url, min(1.0, args.seconds), args.connections)  # warm-up
            report["ping_before"] = ping(server.url, args.seconds, args.connections)
            rss = {"before": group_rss(server.process.pid)}
            streams = Streams(loadgen.Target(server.url), listeners)
            tenth = max(1, len(listeners) // 10)
            took = streams.open(listeners[:tenth])
            time.sleep(1.0)
            rss["tenth"] = group_rss(server.process.pid)
            took += streams.open(listeners[tenth:])
            time.sleep(1.0)
            rss["all"] = group_rss(server.process.pid)
            report["open_seconds"] = round(took, 2)
            report["acks"] = sum(listener.acked for listener in listeners)
            report["open_errors"] = sorted({lst.error for lst in listeners if lst.error})[:5]
            report["rss_mib"] = {k: round(v / 2**20, 1) for k, v in rss.items()}
            rest = len(listeners) - tenth
            report["kib_per_stream"] = round(
                (rss["all"] - rss["before"]) / 1024 / len(listeners), 1
            )
            report["kib_per_stream_marginal"] = (
                round((rss["all"] - rss["tenth"]) / 1024 / rest, 1) if rest else None
            )
            report["ping_with"] = ping(server.url, args.seconds, args.connections)

            # file edits, each of a file some stream (or the directory's) asked for
            time.sleep(1.0)  # the watches are set up
            targets = sorted({lst.uri for lst in listeners if lst.kind == "file"}) or [
                f"{FS}f000.md"
            ]
            latencies: list[float] = []
            missed = 0
            for n in range(args.edits):
                uri = targets[n % len(targets)]
                path = work / REPO / "docs" / uri.rsplit("/", 1)[1]
                got, lost = hear(listeners, uri, lambda p=path, n=n: p.write_text(f"# edit {n}\n"))
                latencies += got
                missed += lost
                time.sleep(SPACING)
            report["files"] = summary(latencies, missed, args.edits)

            # the branch moved: git streams hear of docs/a.md
            moves = max(3, args.edits // 3)
            head = repo.repo.refs[b"refs/heads/main"]
            latencies, missed = [], 0
            time.sleep(1.0)  # the ref watcher has noted where main is
            for n in range(moves):
                commit = repo.commit(
                    f"move {n}", {"docs/a.md": f"# a, moved {n}\n".encode()}, [head], when=n + 1
                )

                def move(commit: bytes = commit) -> None:
                    repo.set_ref("refs/heads/main", commit)

                got, lost = hear(listeners, GIT_URI, move)
                head = commit
                latencies += got
                missed += lost
                time.sleep(SPACING)
            report["git"] = summary(latencies, missed, moves)
            report["unasked"] = sum(listener.unasked for listener in listeners)
            report["ended_early"] = sum(bool(listener.ended) for listener in listeners)
            streams.close()
            streams = None
            time.sleep(1.0)
            report["ping_after"] = ping(server.url, args.seconds, args.connections)
        finally:
            if streams is not None:
                streams.close()
            for server in started:
                server.stop()
    without = (report["ping_before"]["rps"] + report["ping_after"]["rps"]) / 2
    report["rps_ratio"] = round(report["ping_with"]["rps"] / without, 3) if without else 0.0
    report["load_average"] = [round(x, 2) for x in (*load_before, *os.getloadavg())]
    return report


def summary(latencies: list[float], missed: int, changes: int) -> dict[str, Any]:
    return {
        "changes": changes,
        "notifications": len(latencies),
        "missed": missed,
        "p50_ms": round(percentile(latencies, 50), 1),
        "p99_ms": round(percentile(latencies, 99), 1),
        "mean_ms": round(statistics.fmean(latencies), 1) if latencies else float("nan"),
    }


def failures(report: dict[str, Any]) -> list[str]:
    """What makes the run fail (the goals are not among them)."""
    out = []
    if report["acks"] != report["streams"]:
        out.append(f"{report['streams'] - report['acks']} streams not acknowledged")
    for name in ("files", "git"):
        if report[name]["missed"]:
            out.append(f"{report[name]['missed']} {name} notifications missed")
    if report["unasked"]:
        out.append(f"{report['unasked']} notifications not asked for")
    if report["ended_early"]:
        out.append(f"{report['ended_early']} streams ended before the client closed them")
    for name in ("ping_before", "ping_with", "ping_after"):
        if report[name]["errors"]:
            out.append(f"{name}: {report[name]['errors']} errors ({report[name]['first_error']})")
    return out


def print_report(report: dict[str, Any]) -> None:
    load = report["load_average"]
    print(
        f"{report['streams']} listen streams on python -m tmsite.serve, {report['workers']} "
        f"workers; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} before, "
        f"{load[3]:.2f} {load[4]:.2f} {load[5]:.2f} after"
    )
    print("caps raised for the run: " + ", ".join(f"{k}={v}" for k, v in report["caps"].items()))
    print(
        f"acks: {report['acks']}/{report['streams']} in {report['open_seconds']:.1f} s"
        + (f" ({'; '.join(report['open_errors'])})" if report["open_errors"] else "")
    )
    rss = report["rss_mib"]
    print(
        f"server RSS: {rss['before']:.1f} MiB before, {rss['tenth']:.1f} MiB with a tenth open, "
        f"{rss['all']:.1f} MiB with all open: {report['kib_per_stream']:.1f} KiB per stream "
        f"({report['kib_per_stream_marginal']} KiB marginal)"
    )
    print(f"ping, {report['connections']} connections × {report['seconds']:g} s:")
    print(f"  {'':<16}{'rps':>9}{'p50 ms':>9}{'p99 ms':>9}{'errors':>8}")
    for name, label in (
        ("ping_before", "no streams"),
        ("ping_with", "streams open"),
        ("ping_after", "streams closed"),
    ):
        row = report[name]
        print(
            f"  {label:<16}{row['rps']:>9.1f}{row['p50_ms']:>9.2f}{row['p99_ms']:>9.2f}"
            f"{row['errors']:>8}"
        )
    ratio = report["rps_ratio"]
    verdict = "holds" if ratio >= 0.9 else "MISSED"
    print(f"ping rps with the streams open / without: {ratio:.3f} (goal ≥ 0.90: {verdict})")
    for name, label, goal in (("files", "file edit", 250), ("git", "git branch moved", 1000)):
        row = report[name]
        verdict = "holds" if row["p50_ms"] < goal else "MISSED"
        print(
            f"{label} → notification: {row['changes']} changes, {row['notifications']} "
            f"notifications, {row['missed']} missed: p50 {row['p50_ms']:.1f} ms, p99 "
            f"{row['p99_ms']:.1f} ms (goal p50 < {goal} ms: {verdict})"
        )
    print(f"notifications not asked for: {report['unasked']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=1000, help="listen streams held open")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8, help="request threads per worker")
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds of each ping run")
    parser.add_argument("--connections", type=int, default=16, help="ping connections")
    parser.add_argument("--edits", type=int, default=30, help="file edits (git moves: a third)")
    parser.add_argument("--deadline", type=float, default=600.0, help="the run's hard limit (s)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args()
    if not 1 <= args.streams <= MAX_STREAMS:
        parser.error(f"--streams must be in [1, {MAX_STREAMS}]")
    if not 1 <= args.edits <= MAX_EDITS:
        parser.error(f"--edits must be in [1, {MAX_EDITS}]")

    def cut(signum: int, frame: Any) -> None:
        raise Deadline(f"the run passed its deadline of {args.deadline:.0f} s")

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGALRM, cut)
    signal.signal(signal.SIGTERM, stop)
    signal.alarm(max(1, int(args.deadline)))
    try:
        report = run(args)
    except Deadline as exc:
        print(exc, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        signal.alarm(0)
    if args.json:
        print(json.dumps(report))
    else:
        print_report(report)
    bad = failures(report)
    for line in bad:
        print(f"FAILED: {line}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
