"""How many long-lived response streams a serving model holds at once, and on how many threads.

Each candidate server runs one worker serving a tiny application whose every answer is an
event stream (``text/event-stream``, one event a second for 30 s): the WSGI one a generator that
sleeps between events, the ASGI one a coroutine that awaits between them. The probe opens
``--streams`` connections at once, counts those whose first event arrives within 5 s, and reads
the worker's thread count from ``/proc`` while they are open. A WSGI server keeps a thread busy
for as long as its stream lasts, so it holds as many streams as it has threads and the others
wait; an ASGI server holds a stream as a suspended coroutine. Linux only (``/proc``); loopback
only; every server is stopped at the end (SIGTERM to its process group, then SIGKILL).

    .venv/bin/python bench/stream_capacity.py --streams 1000 --threads 8
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
FIRST_EVENT = 5.0
APP = """
import asyncio, time

def wsgi(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/event-stream")])
    def events():
        for _ in range(30):
            yield b"data: tick\\n\\n"
            time.sleep(1)
    return events()

async def asgi(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/event-stream")]})
    for _ in range(30):
        await send({"type": "http.response.body", "body": b"data: tick\\n\\n", "more_body": True})
        await asyncio.sleep(1)
    await send({"type": "http.response.body", "body": b""})
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def candidates(port: int, threads: int) -> dict[str, list[str]]:
    return {
        "gunicorn gthread (WSGI)": [
            str(BIN / "gunicorn"), "stream_app:wsgi", "--bind", f"127.0.0.1:{port}",
            "--workers", "1", "--worker-class", "gthread", "--threads", str(threads),
        ],
        "granian (WSGI)": [
            str(BIN / "granian"), "--interface", "wsgi", "--host", "127.0.0.1",
            "--port", str(port), "--workers", "1", "--blocking-threads", str(threads),
            "--log-level", "warning", "stream_app:wsgi",
        ],
        "granian (ASGI)": [
            str(BIN / "granian"), "--interface", "asgi", "--host", "127.0.0.1",
            "--port", str(port), "--workers", "1", "--log-level", "warning", "stream_app:asgi",
        ],
        "uvicorn httptools + uvloop (ASGI)": [
            str(BIN / "uvicorn"), "stream_app:asgi", "--host", "127.0.0.1", "--port", str(port),
            "--workers", "1", "--http", "httptools", "--loop", "uvloop", "--log-level", "warning",
        ],
    }  # fmt: skip


def group_threads(pgid: int) -> list[int]:
    """Thread counts of the processes in process group ``pgid``."""
    counts = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()
            if int(fields[2]) == pgid:
                counts.append(len(os.listdir(f"/proc/{entry}/task")))
    return sorted(counts)


async def hold(port: int, streams: int, pgid: int) -> tuple[int, list[int]]:
    """Open ``streams`` streams together; count first events; threads while they are open."""
    first: list[float] = []

    async def one() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(f"GET /events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
            await asyncio.wait_for(reader.readuntil(b"data: tick"), FIRST_EVENT)
            first.append(time.monotonic())
            await asyncio.sleep(3600)
        except (OSError, TimeoutError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    tasks = [asyncio.create_task(one()) for _ in range(streams)]
    await asyncio.sleep(FIRST_EVENT + 0.5)
    threads = group_threads(pgid)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return len(first), threads


def wait_listening(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and process.poll() is None:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return
        time.sleep(0.1)
    raise RuntimeError(f"the server on port {port} did not start")


def stop(process: subprocess.Popen[bytes]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=1000, help="streams opened (default 1000)")
    parser.add_argument("--threads", type=int, default=8, help="WSGI threads (default 8)")
    args = parser.parse_args(argv)
    if not 1 <= args.streams <= 5000 or not 1 <= args.threads <= 256:
        parser.error("--streams must be in [1, 5000] and --threads in [1, 256]")
    if not sys.platform.startswith("linux"):
        parser.error("reads /proc: Linux only")
    with tempfile.TemporaryDirectory(prefix="tmsite-streams-") as tmp:
        (Path(tmp) / "stream_app.py").write_text(APP)
        print(
            f"{args.streams} streams opened at once, one worker each, {args.threads} WSGI threads"
        )
        for name in candidates(0, args.threads):
            port = free_port()
            argv_ = candidates(port, args.threads)[name]
            process = subprocess.Popen(  # an argument list, no shell
                argv_, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True,
            )  # fmt: skip
            try:
                wait_listening(port, process)
                served, threads = asyncio.run(hold(port, args.streams, process.pid))
            finally:
                stop(process)
            print(
                f"  {name:34} {served:5d} got their first event within {FIRST_EVENT:g} s; "
                f"threads per process {threads}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
