"""tmsite against the official MCP Python SDK's server, served the production way, same client.

Starts two servers on free loopback ports:

* tmsite: ``gunicorn tmsite.wsgi`` with 2 gthread workers (8 threads each), on a temporary SQLite
  database (``TM_VAR_DIR`` points at a temporary directory, migrated first);
* the SDK: ``uvicorn bench.sdk_file_server:create_app --factory`` with 2 workers — ``MCPServer``,
  stateless Streamable HTTP, JSON responses — serving the same small checkout file as a resource.

Then, for each scenario (``ping``, ``tools/list``, ``resources/read`` of that file), it warms both
up and drives each with the same closed-loop client (``bench/loadgen.py``: N keep-alive connections
for a fixed time), every answer checked to be a JSON-RPC result. With ``--rounds`` above 1 the
servers take turns (ABBA order) so that drift in a shared machine's load falls on both alike.
It prints requests per second, p50 and p99 latency for each, and tmsite/SDK ratios (rps: above
1 means tmsite is faster; latency: below 1 means tmsite is faster). Both servers are stopped at
the end, on error, on Ctrl-C and on SIGTERM.

    .venv/bin/python bench/mcp_vs_sdk.py --seconds 5 --connections 8 --rounds 3
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import loadgen  # noqa: E402

PYTHON = Path(sys.executable)
BIN = PYTHON.parent
PROTOCOL = "2025-11-25"
HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": PROTOCOL}
START_TIMEOUT = 90.0
STOP_TIMEOUT = 10.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _child_setup() -> None:
    """In the child: its own process group, and SIGTERM if this benchmark dies unannounced."""
    os.setsid()
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            pr_set_pdeathsig = 1
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


@dataclass
class Server:
    name: str
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        """SIGTERM the server's process group, then SIGKILL whatever is left of it."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(STOP_TIMEOUT)
        # Workers may outlive their master for a moment; the group is ours alone.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(STOP_TIMEOUT)

    def tail(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-2000:]
        except OSError:
            return ""


def start(name: str, argv: list[str], env: dict[str, str], url: str, logdir: Path) -> Server:
    log = logdir / f"{name}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(  # an argument list, no shell
            argv,
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            preexec_fn=_child_setup,
        )
    return Server(name, url, process, log)


def wait_ready(server: Server) -> None:
    """Poll with ``ping`` until the server answers with a result (bounded in time)."""
    target = loadgen.Target(server.url, HEADERS)
    deadline = time.monotonic() + START_TIMEOUT
    last = ""
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(
                f"{server.name} exited ({server.process.returncode}):\n{server.tail()}"
            )
        try:
            with socket.create_connection((target.host, target.port), timeout=5) as sock:
                body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
                sock.sendall(target.request_bytes(body))
                data = b""
                while b"\r\n\r\n" not in data or not data.rstrip().endswith(b"}"):
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            head, _, payload = data.partition(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1]) if head else 0
            loadgen.check_answer(status, payload, 1)
            return
        except (OSError, ValueError, IndexError, loadgen.BadAnswer) as exc:
            last = f"{type(exc).__name__}: {exc}"
        time.sleep(0.25)
    raise RuntimeError(
        f"{server.name} did not answer ping in {START_TIMEOUT:.0f} s ({last}):\n{server.tail()}"
    )


@contextlib.contextmanager
def servers(
    file: str, logdir: Path, var_dir: Path, sdk_http: str = "auto", sdk_loop: str = "auto"
) -> Iterator[tuple[Server, Server]]:
    """Both servers, migrated, started and answering; stopped however the block ends."""
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("TM_", "BENCH_"))}
    tm_env = {
        **base_env,
        "TM_VAR_DIR": str(var_dir),
        "TM_CHECKOUT": str(ROOT),
        "TM_SECRET_KEY": "bench-" + os.urandom(16).hex(),
        "TM_LOG_LEVEL": "WARNING",
        "PYTHONUNBUFFERED": "1",
    }
    var_dir.mkdir(parents=True, exist_ok=True)
    migrate = subprocess.run(
        [str(PYTHON), "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT,
        env=tm_env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if migrate.returncode != 0:
        raise RuntimeError(f"migrate failed:\n{migrate.stdout}{migrate.stderr}")

    sdk_env = {**base_env, "BENCH_CHECKOUT": str(ROOT), "BENCH_FILE": file, "PYTHONUNBUFFERED": "1"}
    started: list[Server] = []
    try:
        tm_port = free_port()
        started.append(
            start(
                "tmsite",
                [
                    str(BIN / "gunicorn"),
                    "tmsite.wsgi",
                    "--bind",
                    f"127.0.0.1:{tm_port}",
                    "--workers",
                    "2",
                    "--worker-class",
                    "gthread",
                    "--threads",
                    "8",
                    "--timeout",
                    "60",
                ],
                tm_env,
                f"http://127.0.0.1:{tm_port}/api/mcp",
                logdir,
            )
        )
        sdk_port = free_port()
        started.append(
            start(
                "sdk",
                [
                    str(BIN / "uvicorn"),
                    "bench.sdk_file_server:create_app",
                    "--factory",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(sdk_port),
                    "--workers",
                    "2",
                    "--log-level",
                    "warning",
                    "--no-access-log",
                    "--http",
                    sdk_http,
                    "--loop",
                    sdk_loop,
                ],
                sdk_env,
                f"http://127.0.0.1:{sdk_port}/mcp",
                logdir,
            )
        )
        for server in started:
            wait_ready(server)
        yield started[0], started[1]
    finally:
        for server in reversed(started):
            server.stop()


SCENARIOS: list[tuple[str, str, dict[str, object] | None]] = [
    ("ping", "ping", None),
    ("tools/list", "tools/list", None),
    ("resources/read", "resources/read", {}),  # the uri is filled in from --file
]


def merge(results: list[loadgen.Result]) -> loadgen.Result:
    latencies = [value for result in results for value in result.latencies_ns]
    requests = sum(result.requests for result in results)
    return loadgen.Result(
        requests=requests,
        errors=sum(result.errors for result in results),
        seconds=sum(result.seconds for result in results),
        latencies_ns=latencies,
        response_bytes=max((result.response_bytes for result in results), default=0),
        first_error=next((result.first_error for result in results if result.first_error), ""),
    )


def _on_sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--seconds",
        type=float,
        default=5.0,
        help="measured seconds per scenario, server and round (default 5)",
    )
    parser.add_argument(
        "--connections", type=int, default=8, help="concurrent keep-alive connections (default 8)"
    )
    parser.add_argument(
        "--warmup",
        type=float,
        default=1.0,
        help="unmeasured seconds per scenario and server first (default 1)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="measured rounds, servers taking turns in ABBA order (default 1)",
    )
    parser.add_argument(
        "--file",
        default="docs/README.md",
        help="the small checkout file both serve (default docs/README.md)",
    )
    parser.add_argument(
        "--sdk-http",
        choices=("auto", "h11", "httptools"),
        default="auto",
        help="uvicorn's HTTP parser for the SDK server (default auto: httptools if installed)",
    )
    parser.add_argument(
        "--sdk-loop",
        choices=("auto", "asyncio", "uvloop"),
        default="auto",
        help="uvicorn's event loop for the SDK server (default auto: uvloop if installed)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    if not 0 < args.seconds <= loadgen.MAX_SECONDS or not 0 <= args.warmup <= 60:
        parser.error("--seconds must be in (0, 600] and --warmup in [0, 60]")
    if not 0 < args.connections <= loadgen.MAX_CONNECTIONS or not 1 <= args.rounds <= 20:
        parser.error("--connections must be in [1, 512] and --rounds in [1, 20]")
    if not (ROOT / args.file).is_file():
        parser.error(f"--file {args.file} is not a file of the checkout")

    # Ctrl-C and SIGTERM both unwind through the servers' cleanup (SIGINT is installed
    # explicitly because a shell starts background jobs with it ignored).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _on_sigterm)
    uri = f"tm://tinymachines/fs/{args.file}"
    scenarios = [
        (label, method, {"uri": uri} if params is not None else None)
        for label, method, params in SCENARIOS
    ]
    rows = []
    try:
        with (
            tempfile.TemporaryDirectory(prefix="tmsite-bench-") as tmp,
            servers(args.file, Path(tmp), Path(tmp) / "var", args.sdk_http, args.sdk_loop) as (
                tmsite,
                sdk,
            ),
        ):
            pair = [tmsite, sdk]
            for label, method, params in scenarios:
                per: dict[str, list[loadgen.Result]] = {"tmsite": [], "sdk": []}
                if args.warmup > 0:
                    for server in pair:
                        loadgen.run(
                            loadgen.Target(server.url, HEADERS),
                            method,
                            params,
                            seconds=args.warmup,
                            connections=args.connections,
                        )
                for round_no in range(args.rounds):
                    order = pair if round_no % 2 == 0 else pair[::-1]
                    for server in order:
                        per[server.name].append(
                            loadgen.run(
                                loadgen.Target(server.url, HEADERS),
                                method,
                                params,
                                seconds=args.seconds,
                                connections=args.connections,
                            )
                        )
                rows.append((label, merge(per["tmsite"]), merge(per["sdk"])))
                if not args.json:
                    print(f"  {label}: done", file=sys.stderr)
    except KeyboardInterrupt:
        print("interrupted; both servers stopped", file=sys.stderr)
        return 130

    errors = sum(tm.errors + sdk.errors for _, tm, sdk in rows)
    if args.json:
        print(
            json.dumps(
                {
                    "seconds": args.seconds,
                    "connections": args.connections,
                    "rounds": args.rounds,
                    "file": args.file,
                    "sdk_uvicorn": uvicorn_stack(args.sdk_http, args.sdk_loop),
                    "scenarios": [
                        {
                            "scenario": label,
                            **{
                                name: {
                                    "rps": r.rps,
                                    "p50_ms": r.percentile_ms(50),
                                    "p99_ms": r.percentile_ms(99),
                                    "requests": r.requests,
                                    "errors": r.errors,
                                    "response_bytes": r.response_bytes,
                                    "first_error": r.first_error,
                                }
                                for name, r in (("tmsite", tm), ("sdk", sdk))
                            },
                            "rps_ratio": tm.rps / sdk.rps if sdk.rps else None,
                        }
                        for label, tm, sdk in rows
                    ],
                    "errors": errors,
                },
                indent=2,
            )
        )
    else:
        print_table(rows, args)
    return 1 if errors else 0


def uvicorn_stack(http: str = "auto", loop: str = "auto") -> str:
    """The HTTP parser and event loop uvicorn runs on: as asked, else what it picks itself."""
    if http == "auto":
        http = "httptools" if importlib.util.find_spec("httptools") else "h11"
    if loop == "auto":
        loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    return f"{http} + {loop}"


def print_table(
    rows: list[tuple[str, loadgen.Result, loadgen.Result]], args: argparse.Namespace
) -> None:
    print()
    print(
        f"{args.connections} connections, {args.seconds:g} s x {args.rounds} round(s) per "
        f"scenario and server, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
        f"file {args.file}"
    )
    print(f"SDK server on uvicorn with {uvicorn_stack(args.sdk_http, args.sdk_loop)}")
    header = (
        f"{'scenario':15} | {'tmsite rps':>10} {'p50 ms':>7} {'p99 ms':>7} {'bytes':>6} | "
        f"{'SDK rps':>8} {'p50 ms':>7} {'p99 ms':>7} {'bytes':>6} | "
        f"{'rps ×':>6} {'p50 ×':>6} {'p99 ×':>6} | errors"
    )
    print(header)
    print("-" * len(header))
    for label, tm, sdk in rows:
        ratio = tm.rps / sdk.rps if sdk.rps else float("nan")
        p50 = tm.percentile_ms(50) / sdk.percentile_ms(50)
        p99 = tm.percentile_ms(99) / sdk.percentile_ms(99)
        print(
            f"{label:15} | {tm.rps:10.0f} {tm.percentile_ms(50):7.2f} "
            f"{tm.percentile_ms(99):7.2f} {tm.response_bytes:6d} | "
            f"{sdk.rps:8.0f} {sdk.percentile_ms(50):7.2f} {sdk.percentile_ms(99):7.2f} "
            f"{sdk.response_bytes:6d} | {ratio:6.2f} {p50:6.2f} {p99:6.2f} | "
            f"{tm.errors}/{sdk.errors}"
        )
        for name, result in (("tmsite", tm), ("SDK", sdk)):
            if result.first_error:
                print(f"    {name} first error: {result.first_error}")
    print(
        "rps ×: tmsite / SDK (above 1: tmsite ahead); p50 × and p99 ×: tmsite / SDK latency "
        "(below 1: tmsite ahead); errors: tmsite/SDK"
    )


if __name__ == "__main__":
    sys.exit(main())
