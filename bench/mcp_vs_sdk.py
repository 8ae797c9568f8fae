"""tmsite against the official MCP Python SDK's server, served the production way, same client.

For each worker count (``--workers``, default 2 then 1) it starts two servers on free loopback
ports, with that many workers each:

* tmsite: by default ``python -m tmsite.serve`` (granian's ASGI workers, 8 request threads each), as
  ``make run`` and ``deploy/`` serve it; ``--tm-server`` serves the same application with gunicorn's
  gthread workers, granian's WSGI or ASGI interface, or uvicorn instead. It runs on a temporary
  SQLite database (``TM_VAR_DIR`` in a temporary directory, migrated first);
* the SDK: ``uvicorn bench.sdk_file_server:create_app --factory`` on httptools + uvloop (what
  ``uvicorn[standard]`` installs, the way the SDK's users serve it) — ``MCPServer``, stateless
  Streamable HTTP, JSON responses — serving the same small checkout file as a resource.

Then, for each connection count (``--connections``, default 16 and 64) and each scenario
(``ping``, ``tools/list``, ``resources/read`` of that file; then ``nearest``, a read of a name
missing from a directory of 5,000, which both refuse), it warms both up and drives each
with the same closed-loop client (``bench/loadgen.py``: N keep-alive connections for a fixed
time), every answer checked to be a JSON-RPC result. The servers take turns (ABBA order over
``--rounds``, default 2) so that drift in a shared machine's load falls on both alike. It prints
requests per second, p50 and p99 latency for each, the tmsite/SDK ratios (rps: above 1 means
tmsite is faster; latency: below 1 means tmsite is faster), each server's scaling from the
fewest workers to the most, the load average before and after, and the count of errors, which
must be 0 (the exit status is 1 otherwise). Both servers are stopped at the end, on error, on
Ctrl-C and on SIGTERM.

    .venv/bin/python bench/mcp_vs_sdk.py --seconds 5 --rounds 2
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
from collections.abc import Callable, Iterator
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


#: How many times a server whose port was taken meanwhile is started again on another.
START_ATTEMPTS = 5
#: What a server that could not bind its port says (uvicorn, granian; gunicorn).
ADDRESS_IN_USE = ("address already in use", "errno 98", "connection in use")


def free_ports(count: int, avoid: frozenset[int] = frozenset()) -> list[int]:
    """``count`` loopback ports free now, all different (bound together, then let go)."""
    held: list[socket.socket] = []
    try:
        while len(held) < count:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            if sock.getsockname()[1] in avoid:
                sock.close()
                continue
            held.append(sock)
        return [int(sock.getsockname()[1]) for sock in held]
    finally:
        for sock in held:
            sock.close()


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


def _port_taken(server: Server) -> bool:
    """Whether ``server`` exited because its port was bound by another process first."""
    if server.process.poll() is None:
        return False
    said = server.tail().lower()
    return any(sign in said for sign in ADDRESS_IN_USE)


@dataclass(frozen=True)
class Launch:
    """How to start one server on a given port: its argument list, environment and URL."""

    name: str
    argv: Callable[[int], list[str]]
    env: dict[str, str]
    path: str

    def url(self, port: int) -> str:
        return f"http://127.0.0.1:{port}{self.path}"


def launch_all(
    launches: list[Launch], logdir: Path, started: list[Server], first: list[int] | None = None
) -> None:
    """Start every server on its own free port and wait until each answers ``ping``.

    The ports are chosen together before any server starts (a port chosen after one server
    started but before it bound is free again, and could be chosen twice). A server whose
    port another process took in between exits saying so; it is started again on a fresh
    port, up to ``START_ATTEMPTS`` times. ``started`` receives each server as it starts, so
    the caller stops them all however this ends; ``first`` gives the first ports (tests).
    """
    ports = first if first is not None else free_ports(len(launches))
    for launch, port in zip(launches, ports, strict=True):
        started.append(start(launch.name, launch.argv(port), launch.env, launch.url(port), logdir))
    for index, launch in enumerate(launches):
        for attempt in range(1, START_ATTEMPTS + 1):
            server = started[index]
            try:
                wait_ready(server)
                break
            except RuntimeError:
                if attempt == START_ATTEMPTS or not _port_taken(server):
                    raise
            server.stop()
            avoid = frozenset(loadgen.Target(other.url).port for other in started)
            port = free_ports(1, avoid)[0]
            started[index] = start(
                launch.name, launch.argv(port), launch.env, launch.url(port), logdir
            )


def uvicorn(
    app: str,
    port: int,
    workers: int,
    http: str = "httptools",
    loop: str = "uvloop",
    factory: bool = False,
) -> list[str]:
    """uvicorn's argument list for ``app``, quiet, on loopback."""
    return [
        str(BIN / "uvicorn"),
        app,
        *(["--factory"] if factory else []),
        *("--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)),
        *("--http", http, "--loop", loop, "--log-level", "warning", "--no-access-log"),
    ]


#: How tmsite can be served: the deployed way first. Each entry builds the server's argument
#: list from (port, workers, threads); all serve the same application on the same database.
TM_SERVERS: dict[str, Callable[[int, int, int], list[str]]] = {
    "gunicorn": lambda port, workers, threads: [
        str(BIN / "gunicorn"),
        "tmsite.wsgi",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        "--worker-class",
        "gthread",
        "--threads",
        str(threads),
        "--timeout",
        "60",
    ],
    "granian-wsgi": lambda port, workers, threads: [
        str(BIN / "granian"),
        "--interface",
        "wsgi",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--blocking-threads",
        str(threads),
        "--no-ws",
        "--log-level",
        "warning",
        "tmsite.wsgi:application",
    ],
    "granian-asgi": lambda port, workers, threads: [
        str(BIN / "granian"),
        "--interface",
        "asgi",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--no-ws",
        "--log-level",
        "warning",
        "tmsite.asgi:application",
    ],
    # The ASGI serving model (tmsite.serve): the launcher, granian on uvloop, the endpoint's
    # prepared answers in the event loop, the rest on a pool of ``threads`` threads.
    "serve": lambda port, workers, threads: [
        str(PYTHON),
        "-m",
        "tmsite.serve",
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--threads",
        str(threads),
    ],
    # The same application on uvicorn (httptools + uvloop), the SDK's own server.
    "serve-uvicorn": lambda port, workers, threads: uvicorn(
        "tmsite.serve.app:application", port, workers
    ),
    "uvicorn-asgi": lambda port, workers, threads: uvicorn(
        "tmsite.asgi:application", port, workers
    ),
}


def migrated_env(var_dir: Path) -> dict[str, str]:
    """tmsite's environment over ``var_dir``, its database migrated."""
    tm_env = {
        **base_env(),
        "TM_VAR_DIR": str(var_dir),
        "TM_CHECKOUT": str(ROOT),
        "TM_SECRET_KEY": "bench-" + os.urandom(16).hex(),
        "TM_LOG_LEVEL": "WARNING",
        "PYTHONUNBUFFERED": "1",
    }
    var_dir.mkdir(parents=True, exist_ok=True)
    run_python(["manage.py", "migrate", "--noinput", "-v", "0"], tm_env, 300, "migrate")
    return tm_env


def run_python(args: list[str], env: dict[str, str], timeout: float, what: str) -> str:
    """What this Python prints for ``args`` in the checkout; ``RuntimeError`` when it fails."""
    done = subprocess.run(  # an argument list, no shell
        [str(PYTHON), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def base_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("TM_", "BENCH_"))}


@contextlib.contextmanager
def servers(
    file: str,
    logdir: Path,
    tm_env: dict[str, str],
    workers: int,
    tm_server: str = "gunicorn",
    threads: int = 8,
    sdk_http: str = "httptools",
    sdk_loop: str = "uvloop",
    sdk_tools: Path | None = None,
) -> Iterator[tuple[Server, Server]]:
    """Both servers with ``workers`` workers each, started and answering; stopped however the
    block ends. ``sdk_tools``: the ``tools/list`` result the SDK lists the same tools as."""
    sdk_env = {
        **base_env(),
        "BENCH_CHECKOUT": str(ROOT),
        "BENCH_FILE": file,
        "PYTHONUNBUFFERED": "1",
        **({"BENCH_TOOLS": str(sdk_tools)} if sdk_tools is not None else {}),
    }
    launches = [
        Launch(
            "tmsite",
            lambda port: TM_SERVERS[tm_server](port, workers, threads),
            tm_env,
            "/api/mcp",
        ),
        Launch(
            "sdk",
            lambda port: uvicorn(
                "bench.sdk_file_server:create_app",
                port,
                workers,
                http=sdk_http,
                loop=sdk_loop,
                factory=True,
            ),
            sdk_env,
            "/mcp",
        ),
    ]
    started: list[Server] = []
    try:
        launch_all(launches, logdir, started)
        yield started[0], started[1]
    finally:
        for server in reversed(started):
            server.stop()


SCENARIOS: list[tuple[str, str, dict[str, object] | None]] = [
    ("ping", "ping", None),
    ("tools/list", "tools/list", None),
    ("resources/read", "resources/read", {}),  # the uri is filled in from --file
]


#: The ``nearest`` scenario: a read of a name missing from a directory of this many names,
#: which tmsite refuses ``not-found`` with the names nearest it (ranked over the directory),
#: and the SDK refuses as a resource it does not have. Its tmsite is a second server over a
#: checkout made for it (``crowd_checkout``); the rest of the run serves the real one.
NEAREST_NAMES = 5_000
NEAREST_DIR = "docs/crowd5k"
NEAREST_URI = f"tm://tinymachines/fs/{NEAREST_DIR}/alpha-999999.md"


def crowd_checkout(where: Path, file: str) -> Path:
    """A checkout with ``file`` and a directory of ``NEAREST_NAMES`` names (tmsite's miss)."""
    from bench.nearest import name_of  # the names bench/nearest.py ranks: many near-ties

    for root in ("docs", "data", "notes"):
        (where / root).mkdir(parents=True, exist_ok=True)
    copy = where / file
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_bytes((ROOT / file).read_bytes())
    crowd = where / NEAREST_DIR
    crowd.mkdir(parents=True, exist_ok=True)
    for i in range(NEAREST_NAMES):
        (crowd / name_of(i)).write_bytes(b"")
    return where


@contextlib.contextmanager
def crowd_server(
    logdir: Path, tm_env: dict[str, str], checkout: Path, workers: int, args: argparse.Namespace
) -> Iterator[Server]:
    """tmsite over the crowd checkout, answering; stopped however the block ends."""
    env = {**tm_env, "TM_CHECKOUT": str(checkout)}
    launch = Launch(
        "tmsite",
        lambda port: TM_SERVERS[args.tm_server](port, workers, args.threads),
        env,
        "/api/mcp",
    )
    started: list[Server] = []
    try:
        launch_all([launch], logdir, started)
        yield started[0]
    finally:
        for server in started:
            server.stop()


#: Prints tmsite's ``tools/list`` result as a client of the bench's protocol version gets it.
_TOOLS_LIST = f"""
import json, django
django.setup()
from tmsite.mcp.protocol import CallContext
from tmsite.mcp.tools import list_tools
print(json.dumps(list_tools({{}}, CallContext(version="{PROTOCOL}", transport="http"))))
"""


def tmsite_tools(tm_env: dict[str, str], where: Path) -> Path:
    """tmsite's ``tools/list`` result, written to ``where`` (for the SDK to list alike)."""
    env = {**tm_env, "DJANGO_SETTINGS_MODULE": "tmsite.settings"}
    where.write_text(run_python(["-c", _TOOLS_LIST], env, 120, "tools/list"), encoding="utf-8")
    return where


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


def int_list(text: str) -> list[int]:
    """``"16,64"`` -> ``[16, 64]`` (for the options that take several values)."""
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {text}") from exc
    if not values:
        raise argparse.ArgumentTypeError("at least one value")
    return values


@dataclass
class Row:
    """One scenario at one worker and connection count: both servers, all rounds merged."""

    workers: int
    connections: int
    scenario: str
    tmsite: loadgen.Result
    sdk: loadgen.Result
    #: CPU seconds each server's processes spent during the measured runs (nan if unknown).
    tmsite_cpu: float = float("nan")
    sdk_cpu: float = float("nan")

    def cpu_us(self, name: str) -> float:
        """CPU microseconds per answer of ``name``'s processes: robust to a busy machine."""
        result: loadgen.Result = getattr(self, name)
        cpu: float = getattr(self, f"{name}_cpu")
        return cpu / result.requests * 1e6 if result.requests else float("nan")

    @property
    def rps_ratio(self) -> float:
        return self.tmsite.rps / self.sdk.rps if self.sdk.rps else float("nan")

    def latency_ratio(self, pct: float) -> float:
        return self.tmsite.percentile_ms(pct) / self.sdk.percentile_ms(pct)


def group_cpu_seconds(pgid: int) -> float:
    """User + system CPU seconds of the living processes in process group ``pgid`` (Linux)."""
    total = 0
    try:
        entries = os.listdir("/proc")
    except OSError:
        return float("nan")
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()
        except OSError:
            continue
        if len(fields) > 12 and int(fields[2]) == pgid:
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def measure(
    pair: list[Server],
    scenarios: list[tuple[str, str, dict[str, object] | None]],
    workers: int,
    connections: int,
    args: argparse.Namespace,
    refusal: bool = False,
) -> list[Row]:
    """Every scenario on both servers: a warm-up each, then the rounds in ABBA order.

    With ``refusal`` every answer must be a JSON-RPC error (the ``nearest`` scenario).
    """
    rows = []
    for label, method, params in scenarios:
        per: dict[str, list[loadgen.Result]] = {"tmsite": [], "sdk": []}
        cpu = {"tmsite": 0.0, "sdk": 0.0}
        if args.warmup > 0:
            for server in pair:
                loadgen.run(
                    loadgen.Target(server.url, HEADERS),
                    method,
                    params,
                    seconds=args.warmup,
                    connections=connections,
                    refusal=refusal,
                )
        for round_no in range(args.rounds):
            order = pair if round_no % 2 == 0 else pair[::-1]
            for server in order:
                before = group_cpu_seconds(server.process.pid)
                per[server.name].append(
                    loadgen.run(
                        loadgen.Target(server.url, HEADERS),
                        method,
                        params,
                        seconds=args.seconds,
                        connections=connections,
                        refusal=refusal,
                    )
                )
                cpu[server.name] += group_cpu_seconds(server.process.pid) - before
        rows.append(
            Row(
                workers,
                connections,
                label,
                merge(per["tmsite"]),
                merge(per["sdk"]),
                cpu["tmsite"],
                cpu["sdk"],
            )
        )
        if not args.json:
            print(
                f"  {workers} worker(s), {connections} connections, {label}: done", file=sys.stderr
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--seconds",
        type=float,
        default=5.0,
        help="measured seconds per scenario, server and round (default 5)",
    )
    parser.add_argument(
        "--connections",
        type=int_list,
        default=[16, 64],
        help="concurrent keep-alive connections, comma-separated for several runs (default 16,64)",
    )
    parser.add_argument(
        "--workers",
        type=int_list,
        default=[2, 1],
        help="worker processes of each server, comma-separated for several runs (default 2,1)",
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
        default=2,
        help="measured rounds, servers taking turns in ABBA order (default 2)",
    )
    parser.add_argument(
        "--file",
        default="docs/README.md",
        help="the small checkout file both serve (default docs/README.md)",
    )
    parser.add_argument(
        "--tm-server",
        choices=sorted(TM_SERVERS),
        default="serve",
        help="how tmsite is served (default serve: python -m tmsite.serve, as deployed)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=8,
        help="threads per tmsite worker for the WSGI servers (default 8)",
    )
    parser.add_argument(
        "--sdk-http",
        choices=("h11", "httptools"),
        default="httptools",
        help="uvicorn's HTTP parser for the SDK server (default httptools)",
    )
    parser.add_argument(
        "--sdk-loop",
        choices=("asyncio", "uvloop"),
        default="uvloop",
        help="uvicorn's event loop for the SDK server (default uvloop)",
    )
    parser.add_argument(
        "--sdk-tools",
        choices=("same", "two"),
        default="same",
        help="the SDK lists the same tools as tmsite (default), or two small ones of its own",
    )
    parser.add_argument(
        "--no-nearest",
        action="store_true",
        help=f"skip the nearest scenario (a miss in a directory of {NEAREST_NAMES:,} names)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    if not 0 < args.seconds <= loadgen.MAX_SECONDS or not 0 <= args.warmup <= 60:
        parser.error("--seconds must be in (0, 600] and --warmup in [0, 60]")
    if not all(0 < c <= loadgen.MAX_CONNECTIONS for c in args.connections):
        parser.error("--connections must be in [1, 512]")
    if not 1 <= args.rounds <= 20 or not all(1 <= w <= 16 for w in args.workers):
        parser.error("--rounds must be in [1, 20] and --workers in [1, 16]")
    if not 1 <= args.threads <= 256:
        parser.error("--threads must be in [1, 256]")
    if not (ROOT / args.file).is_file():
        parser.error(f"--file {args.file} is not a file of the checkout")
    for module in {"httptools": args.sdk_http, "uvloop": args.sdk_loop}.values():
        if module in ("httptools", "uvloop") and importlib.util.find_spec(module) is None:
            parser.error(
                f"{module} is not installed: pip install -c constraints.txt -e '.[bench]' "
                "(or --sdk-http h11 / --sdk-loop asyncio to compare on uvicorn's fallbacks)"
            )

    # Ctrl-C and SIGTERM both unwind through the servers' cleanup (SIGINT is installed
    # explicitly because a shell starts background jobs with it ignored).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _on_sigterm)
    uri = f"tm://tinymachines/fs/{args.file}"
    scenarios = [
        (label, method, {"uri": uri} if params is not None else None)
        for label, method, params in SCENARIOS
    ]
    load_before = os.getloadavg()
    rows: list[Row] = []
    try:
        with tempfile.TemporaryDirectory(prefix="tmsite-bench-") as tmp:
            tm_env = migrated_env(Path(tmp) / "var")
            sdk_tools = (
                tmsite_tools(tm_env, Path(tmp) / "tools.json") if args.sdk_tools == "same" else None
            )
            crowd = None if args.no_nearest else crowd_checkout(Path(tmp) / "crowd", args.file)
            nearest = [("nearest", "resources/read", {"uri": NEAREST_URI})]
            for workers in args.workers:
                with servers(
                    args.file,
                    Path(tmp),
                    tm_env,
                    workers,
                    args.tm_server,
                    args.threads,
                    args.sdk_http,
                    args.sdk_loop,
                    sdk_tools,
                ) as (tmsite, sdk):
                    for connections in args.connections:
                        rows += measure([tmsite, sdk], scenarios, workers, connections, args)
                    if crowd is not None:
                        tmsite.stop()  # its cores are the crowd server's now
                        with crowd_server(Path(tmp), tm_env, crowd, workers, args) as missing:
                            for connections in args.connections:
                                rows += measure(
                                    [missing, sdk], nearest, workers, connections, args, True
                                )
    except KeyboardInterrupt:
        print("interrupted; both servers stopped", file=sys.stderr)
        return 130
    load_after = os.getloadavg()

    answers = sum(row.tmsite.requests + row.sdk.requests for row in rows)
    errors = sum(row.tmsite.errors + row.sdk.errors for row in rows)
    if args.json:
        print(json.dumps(report(rows, args, load_before, load_after, errors), indent=2))
    else:
        print_tables(rows, args, load_before, load_after)
        verdict = "OK" if errors == 0 else "FAILED"
        print(f"errors: {errors} in {answers:,} checked answers ({verdict}: must be 0)")
    return 1 if errors else 0


def scaling(rows: list[Row]) -> list[tuple[int, str, str, float]]:
    """Per connection count, scenario and server: rps at the most workers / rps at the fewest."""
    counts = sorted({row.workers for row in rows})
    if len(counts) < 2:
        return []
    low, high = counts[0], counts[-1]
    by = {(row.workers, row.connections, row.scenario): row for row in rows}
    out = []
    for row in rows:
        if row.workers != high or (low, row.connections, row.scenario) not in by:
            continue
        base = by[(low, row.connections, row.scenario)]
        for name in ("tmsite", "sdk"):
            before = getattr(base, name).rps
            out.append(
                (
                    row.connections,
                    row.scenario,
                    name,
                    getattr(row, name).rps / before if before else float("nan"),
                )
            )
    return out


def report(
    rows: list[Row],
    args: argparse.Namespace,
    load_before: tuple[float, float, float],
    load_after: tuple[float, float, float],
    errors: int,
) -> dict[str, object]:
    return {
        "seconds": args.seconds,
        "rounds": args.rounds,
        "file": args.file,
        "tm_server": args.tm_server,
        "threads": args.threads,
        "sdk_uvicorn": f"{args.sdk_http} + {args.sdk_loop}",
        "sdk_tools": args.sdk_tools,
        "load_average": {"before": load_before, "after": load_after},
        "scenarios": [
            {
                "workers": row.workers,
                "connections": row.connections,
                "scenario": row.scenario,
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
                    for name, r in (("tmsite", row.tmsite), ("sdk", row.sdk))
                },
                "rps_ratio": row.rps_ratio if row.sdk.rps else None,
                "cpu_us_per_answer": {"tmsite": row.cpu_us("tmsite"), "sdk": row.cpu_us("sdk")},
            }
            for row in rows
        ],
        "scaling": [
            {"connections": c, "scenario": s, "server": n, "ratio": x}
            for c, s, n, x in scaling(rows)
        ],
        "errors": errors,
    }


def print_tables(
    rows: list[Row],
    args: argparse.Namespace,
    load_before: tuple[float, float, float],
    load_after: tuple[float, float, float],
) -> None:
    print()
    print(
        f"{args.seconds:g} s x {args.rounds} round(s) per scenario and server, "
        f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}, file {args.file}"
    )
    print(
        f"tmsite on {args.tm_server} ({args.threads} threads a worker for WSGI); "
        f"SDK on uvicorn with {args.sdk_http} + {args.sdk_loop}, listing "
        + ("the same tools as tmsite" if args.sdk_tools == "same" else "two small tools")
    )
    print(
        "load average (1, 5, 15 min) before "
        + " ".join(f"{v:.2f}" for v in load_before)
        + ", after "
        + " ".join(f"{v:.2f}" for v in load_after)
    )
    header = (
        f"{'scenario':15} | {'tmsite rps':>10} {'p50 ms':>7} {'p99 ms':>7} {'bytes':>6} | "
        f"{'SDK rps':>8} {'p50 ms':>7} {'p99 ms':>7} {'bytes':>6} | "
        f"{'rps ×':>6} {'p50 ×':>6} {'p99 ×':>6} | {'CPU µs/answer':>13} {'×':>5} | errors"
    )
    groups: dict[tuple[int, int], list[Row]] = {}
    for row in rows:
        groups.setdefault((row.workers, row.connections), []).append(row)
    for (workers, connections), group in groups.items():
        print()
        print(f"{workers} worker(s) each, {connections} connections")
        print(header)
        print("-" * len(header))
        for row in group:
            tm, sdk = row.tmsite, row.sdk
            print(
                f"{row.scenario:15} | {tm.rps:10.0f} {tm.percentile_ms(50):7.2f} "
                f"{tm.percentile_ms(99):7.2f} {tm.response_bytes:6d} | "
                f"{sdk.rps:8.0f} {sdk.percentile_ms(50):7.2f} {sdk.percentile_ms(99):7.2f} "
                f"{sdk.response_bytes:6d} | {row.rps_ratio:6.2f} {row.latency_ratio(50):6.2f} "
                f"{row.latency_ratio(99):6.2f} | "
                f"{row.cpu_us('tmsite'):6.0f}/{row.cpu_us('sdk'):<6.0f} "
                f"{row.cpu_us('tmsite') / row.cpu_us('sdk'):5.2f} | {tm.errors}/{sdk.errors}"
            )
            for name, result in (("tmsite", tm), ("SDK", sdk)):
                if result.first_error:
                    print(f"    {name} first error: {result.first_error}")
    scaled = scaling(rows)
    if scaled:
        counts = sorted({row.workers for row in rows})
        print()
        print(f"scaling, rps at {counts[-1]} workers / rps at {counts[0]}:")
        for connections, scenario, name, ratio in scaled:
            print(f"  {connections:3d} connections  {scenario:15} {name:7} {ratio:5.2f}")
    print()
    print(
        "rps ×: tmsite / SDK (above 1: tmsite ahead); p50 × and p99 ×: tmsite / SDK latency "
        "(below 1: tmsite ahead); CPU µs/answer: the server processes' user + system CPU time "
        "over the answers, tmsite/SDK, and × their ratio (a busy machine moves it less than "
        "rps); errors: tmsite/SDK"
    )


if __name__ == "__main__":
    sys.exit(main())
