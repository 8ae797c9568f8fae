"""Benchmark: what one ``/api/mcp`` request costs in process, without a server or a socket.

Run standalone::

    .venv/bin/python bench/hot_path.py [--calls 2000] [--repeat 5] [--caller forwarded]

It configures Django over a temporary ``var/`` (a fresh SQLite database, migrated first) and
this checkout, then calls the WSGI application (``tmsite.wsgi.application``) directly with a
prepared environ (or, with ``--interface asgi``, the ASGI application ``python -m tmsite.serve``
serves, ``tmsite.serve.app.application``, in an event loop, each body in two messages as granian
hands it over), ``--calls`` times per scenario and repetition: ``ping``, ``tools/list`` and
``resources/read`` of a small ``fs`` file (``docs/README.md``), of the same file in the
checkout's repository (``git/tmsite/docs/README.md``, when the checkout is one) and of an entity
(``entity/pattern/pad-poll``, the checkout's records loaded first), all under protocol
2025-11-25. ``tools/call resolve`` of the fs file and a read of a file that is not there (a miss)
follow. Every answer must be 200 with a ``result`` (the miss: its ``error``). It prints, per
scenario, the median over the repetitions of the CPU microseconds per call
(``time.process_time``: the machine may be shared) with the smallest and largest beside, the
calling thread's own CPU (``time.thread_time``; for ``asgi`` the event loop's: what a worker's
one thread spends, the request log's writer threads apart), and the wall microseconds per call.

``--caller forwarded`` (the default) sends every request as nginx on the same machine would,
from loopback with ``X-Forwarded-For``, so the rate limit keys and charges a bucket (kept in
memory, with a burst no run exhausts); ``--caller loopback`` is the box's own, exempt caller.
The request log is on (rows batched to the database, one JSON line per request to a stream that
is discarded), as it is when serving.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

VERSION = "2025-11-25"
SCENARIOS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("ping", "ping", {}),
    ("tools/list", "tools/list", {}),
    ("resources/read, small fs file", "resources/read", {"uri": "tm://bench/fs/docs/README.md"}),
    ("resources/read, git file", "resources/read", {"uri": "tm://bench/git/tmsite/docs/README.md"}),
    ("resources/read, entity", "resources/read", {"uri": "tm://bench/entity/pattern/pad-poll"}),
    (
        "tools/call resolve, same file",
        "tools/call",
        {"name": "resolve", "arguments": {"uri": "tm://bench/fs/docs/README.md"}},
    ),
    ("resources/read, a miss", "resources/read", {"uri": "tm://bench/fs/docs/absent.md"}),
)
#: What each answer must hold: a result, or (a miss) the error that says so.
ANSWERED = (b'"result"', b'"error"')

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def configure(var_dir: Path) -> WsgiApp:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tmsite.settings")
    os.environ["TM_VAR_DIR"] = str(var_dir)
    os.environ["TM_HOST"] = "bench"
    os.environ["TM_RATE_STORE"] = "memory"
    os.environ["TM_RATE_BURST"] = "1e12"
    os.environ.setdefault("TM_SECRET_KEY", "bench-only-" + "k" * 40)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    call_command("tm_load_records", verbosity=0)
    import logging

    from tmsite.wsgi import application  # sets up Django again: logging is configured anew

    for handler in logging.getLogger("tmsite.requests").handlers:
        if isinstance(handler, logging.StreamHandler):
            handler.setStream(io.StringIO())  # formatted as when serving, then dropped
    return application  # type: ignore[return-value]


def environ_for(method: str, params: dict[str, Any], caller: str) -> tuple[dict[str, Any], bytes]:
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
        "HTTP_HOST": "127.0.0.1:8000",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "HTTP_ACCEPT": "application/json, text/event-stream",
        "HTTP_MCP_PROTOCOL_VERSION": VERSION,
        "wsgi.url_scheme": "http",
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "wsgi.version": (1, 0),
    }
    if caller == "forwarded":
        environ["HTTP_X_FORWARDED_FOR"] = "203.0.113.7"
    return environ, body


def call(app: WsgiApp, environ: dict[str, Any], body: bytes) -> bytes:
    status: list[str] = []

    def start_response(line: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
        status.append(line)

    env = dict(environ)
    env["wsgi.input"] = io.BytesIO(body)
    result = app(env, start_response)
    try:
        answer = b"".join(result)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    if not status or not status[0].startswith("200") or not _answered(answer):
        raise RuntimeError(f"unexpected answer {status[:1]}: {answer[:200]!r}")
    return answer


def _answered(answer: bytes) -> bool:
    return any(mark in answer for mark in ANSWERED)


def scope_of(environ: dict[str, Any]) -> dict[str, Any]:
    """The ASGI scope granian hands ``tmsite.serve.app`` for the request ``environ`` describes."""
    headers = [
        (name[5:].replace("_", "-").lower().encode("latin-1"), str(value).encode("latin-1"))
        for name, value in environ.items()
        if name.startswith("HTTP_")
    ]
    headers += [
        (b"content-type", environ["CONTENT_TYPE"].encode()),
        (b"content-length", environ["CONTENT_LENGTH"].encode()),
    ]
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": environ["PATH_INFO"],
        "raw_path": environ["PATH_INFO"].encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": (environ["REMOTE_ADDR"], 50000),
        "server": ("127.0.0.1", 8000),
    }


async def asgi_calls(app: Any, environ: dict[str, Any], body: bytes, calls: int) -> None:
    """``calls`` requests to the ASGI application, each body in two messages as granian sends it."""
    scope = scope_of(environ)
    for _ in range(calls):
        messages = [
            {"type": "http.request", "body": body, "more_body": True},
            {"type": "http.request", "body": b"", "more_body": False},
        ]
        sent: list[dict[str, Any]] = []

        async def receive(messages: list[dict[str, Any]] = messages) -> dict[str, Any]:
            return messages.pop(0)

        async def send(message: dict[str, Any], sent: list[dict[str, Any]] = sent) -> None:
            sent.append(message)

        await app(dict(scope), receive, send)
        if sent[0].get("status") != 200 or not _answered(sent[-1].get("body", b"")):
            raise RuntimeError(f"unexpected answer: {sent[:2]!r}")


def settle(limit: float = 30.0) -> None:
    """Wait while the request log's own threads write what the calls left them.

    The event loop only queues its rows and lines; a server's loop waits on its sockets between
    requests and the writers run then, where these calls follow one another with no wait.
    Their CPU is counted with the calls'.
    """
    from tmsite.oplog import recorder

    deadline = time.monotonic() + limit
    while recorder.pending() and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(0.05)  # the lines' writer gathers for 20 ms


def run(
    app: WsgiApp, environ: dict[str, Any], body: bytes, calls: int, loop: Any = None
) -> tuple[float, float, float]:
    """CPU (the process's, and the calling thread's) and wall microseconds per call.

    With ``loop``, ``app`` is the ASGI application and the calls run in that event loop.
    """
    cpu, own, wall = time.process_time(), time.thread_time(), time.perf_counter()
    if loop is None:
        for _ in range(calls):
            call(app, environ, body)
    else:
        loop.run_until_complete(asgi_calls(app, environ, body, calls))
        settle()
    cpu, own = time.process_time() - cpu, time.thread_time() - own
    wall = time.perf_counter() - wall
    return cpu / calls * 1e6, own / calls * 1e6, wall / calls * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per scenario and round")
    parser.add_argument("--repeat", type=int, default=5, help="rounds (median reported)")
    parser.add_argument("--caller", choices=("forwarded", "loopback"), default="forwarded")
    parser.add_argument(
        "--interface",
        choices=("wsgi", "asgi"),
        default="wsgi",
        help="the WSGI application (the endpoint's chain), or the ASGI one python -m "
        "tmsite.serve serves (prepared answers in its event loop)",
    )
    args = parser.parse_args(argv)
    var_dir = Path(tempfile.mkdtemp(prefix="tm-hot-path-"))
    loop = None
    try:
        app: Any = configure(var_dir)
        if args.interface == "asgi":
            import uvloop

            from tmsite.serve.app import application

            app, loop = application, uvloop.new_event_loop()
        prepared = [
            (label, *environ_for(method, params, args.caller))
            for label, method, params in SCENARIOS
        ]
        for _, environ, body in prepared:  # warm: imports, first reads, caches
            run(app, environ, body, 50, loop)
        samples: dict[str, list[tuple[float, float, float]]] = {label: [] for label, *_ in prepared}
        for _ in range(args.repeat):
            for label, environ, body in prepared:  # interleaved, so drift falls on all alike
                samples[label].append(run(app, environ, body, args.calls, loop))
        print(
            f"in process, {args.interface}, {args.calls} calls x {args.repeat} rounds, "
            f"caller {args.caller}, protocol {VERSION}"
        )
        print(
            f"{'scenario':32} {'cpu us/call':>12} {'min':>8} {'max':>8} "
            f"{'own thread':>11} {'wall us/call':>13}"
        )
        for label, rows in samples.items():
            cpu = [c for c, _, _ in rows]
            own = [o for _, o, _ in rows]
            wall = [w for _, _, w in rows]
            print(
                f"{label:32} {statistics.median(cpu):12.0f} {min(cpu):8.0f} {max(cpu):8.0f} "
                f"{statistics.median(own):11.0f} {statistics.median(wall):13.0f}"
            )
    finally:
        if loop is not None:
            loop.close()
        from tmsite.oplog import recorder

        recorder.flush_quietly()  # before the database goes
        from django.db import connections

        connections.close_all()
        shutil.rmtree(var_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
