"""A stop drains the same way whoever sends it: SIGTERM to the launcher alone (it passes it on
to its workers), or to the whole process group (systemd's default stop, a container's stop:
each worker gets it straight away, and again from the launcher), or Ctrl-C's SIGINT to the
group. The real ``python -m tmsite.serve`` in a process group of its own, holding an open
listen stream, a 2025-11-25 session's GET stream and a request whose body is still arriving:
the listen stream gets its ``complete`` result, the session stream ends cleanly, the request is
answered in full, and the launcher exits 0 well within the graceful timeout, no worker killed.
A stop sent while the worker is still starting (importing Django) is not lost either.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.oplog.servers import ROOT, free_port, json_lines, migrate, server_env, wait_for
from tests.subscriptions.helpers import Events, complete, listen_body, listen_headers
from tests.subscriptions.sessions_helpers import initialize, stream_headers

pytestmark = [pytest.mark.spec("OP5", "SUB1", "SUB2"), pytest.mark.slow]

#: The launcher's graceful timeout: past it a worker that has not stopped is killed.
GRACEFUL = 10
HOW = {
    "launcher-sigterm": (False, signal.SIGTERM),
    "group-sigterm": (True, signal.SIGTERM),
    "group-sigint": (True, signal.SIGINT),
}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    where = tmp_path_factory.mktemp("stop") / "var"
    made = server_env(where, TM_LISTEN_IDLE="600", TM_LISTEN_KEEPALIVE="600")
    migrate(made)
    return made


@contextmanager
def _launcher(env: dict[str, str], log: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """The launcher, its own process group's leader; killed with its group if a test fails."""
    port = free_port()
    command = [sys.executable, "-m", "tmsite.serve", "--port", str(port), "--workers", "1"]
    command += ["--threads", "4", "--graceful-timeout", str(GRACEFUL), "--skip-checks"]
    with log.open("ab") as sink:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=sink, stderr=sink, start_new_session=True
        )
    try:
        yield process, f"http://127.0.0.1:{port}"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.fixture
def launched(
    env: dict[str, str], tmp_path: Path
) -> Iterator[tuple[subprocess.Popen[bytes], str, Path]]:
    """The launcher, serving."""
    log = tmp_path / "serve.log"
    with _launcher(env, log) as (process, url):
        wait_for(f"{url}/api/v1/health", deadline=90)
        yield process, url, log


def _stop(process: subprocess.Popen[bytes], how: str) -> float:
    """Send the stop ``how`` says; the seconds until the launcher exited."""
    group, signum = HOW[how]
    stopped = time.monotonic()
    if group:
        os.killpg(process.pid, signum)
    else:
        process.send_signal(signum)
    process.wait(timeout=GRACEFUL + 10)
    return time.monotonic() - stopped


class _Listen(threading.Thread):
    """A listen stream read on a thread: its acknowledgement, then every event until it ends."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.acknowledged = threading.Event()
        self.events: list[tuple[str, Any]] = []
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            with (
                httpx.Client(timeout=httpx.Timeout(10, read=60)) as client,
                client.stream(
                    "POST",
                    f"{self.url}/api/mcp",
                    json=listen_body("stop-1", resourcesListChanged=True),
                    headers=listen_headers(),
                ) as response,
            ):
                assert response.status_code == 200
                events = Events(response)
                events.message()
                self.acknowledged.set()
                self.events = events.rest()
        except BaseException as exc:  # the test reads it
            self.failure = exc


class _SessionStream(threading.Thread):
    """A 2025-11-25 session's GET stream read on a thread until it ends."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.opened = threading.Event()
        self.ended_cleanly = False
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            with httpx.Client(timeout=httpx.Timeout(10, read=60)) as client:
                session, _ = initialize(client, f"{self.url}/api/mcp")
                with client.stream(
                    "GET", f"{self.url}/api/mcp", headers=stream_headers(session)
                ) as response:
                    assert response.status_code == 200
                    self.opened.set()
                    for _ in response.iter_bytes():
                        pass
                self.ended_cleanly = True
        except BaseException as exc:  # a cut stream: httpx's incomplete chunked read
            self.failure = exc


@pytest.mark.parametrize("how", sorted(HOW))
def test_a_stop_drains_the_same_way_whoever_sends_it(
    launched: tuple[subprocess.Popen[bytes], str, Path], how: str
) -> None:
    process, url, log = launched
    listen, session = _Listen(url), _SessionStream(url)
    listen.start()
    session.start()
    assert listen.acknowledged.wait(20), listen.failure
    assert session.opened.wait(20), session.failure
    body = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "ping"}).encode()
    slow = socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), timeout=20)
    slow.sendall(
        b"POST /api/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        + f"Expect: 100-continue\r\nContent-Length: {len(body)}\r\n\r\n".encode()
    )
    # granian sends "100 Continue" once the application reads the body: the request is in flight
    assert slow.recv(65536).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")

    with ThreadPoolExecutor(1) as pool:
        stopping = pool.submit(_stop, process, how)
        time.sleep(0.5)
        slow.sendall(body)
        answer = b""
        while chunk := slow.recv(65536):
            answer += chunk
        slow.close()
        took = stopping.result()
    listen.join(10)
    session.join(10)

    head, _, payload = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), answer[:300]
    assert json.loads(payload) == {"jsonrpc": "2.0", "id": 9, "result": {}}
    assert listen.failure is None, listen.failure
    assert listen.events == [("message", complete("stop-1"))]
    assert session.failure is None and session.ended_cleanly, session.failure
    text = log.read_text(errors="replace")
    assert "refused to gracefully stop" not in text, text[-2000:]
    assert process.returncode == 0
    assert took < GRACEFUL / 2, took
    streams = ("subscriptions/listen", "session-stream")
    ends = sorted((line["method"], line["outcome"]) for line in json_lines(log))
    assert [end for end in ends if end[0] in streams] == [
        ("session-stream", "closed"),
        ("subscriptions/listen", "closed"),
    ], ends


def _holds(pid: str, path: Path) -> bool:
    """Whether process ``pid`` has ``path`` open."""
    try:
        return any(os.readlink(fd) == str(path) for fd in Path(f"/proc/{pid}/fd").iterdir())
    except OSError:  # gone, or a descriptor closed while it was read
        return False


@pytest.mark.parametrize("how", ["launcher-sigterm", "group-sigterm"])
def test_a_stop_sent_while_the_worker_starts_is_not_lost(
    env: dict[str, str], tmp_path: Path, how: str
) -> None:
    """The worker is forked with the launcher's own stop handler, which does nothing in a
    worker, until granian installs the worker's, once Django is imported: a stop sent in
    between is heard all the same, and the worker stops as soon as it serves.

    The stop is sent once the worker has loaded the settings (it holds ``var/in-use.lock``),
    before it serves: the moments between the fork and the import of ``tmsite.serve`` are
    granian's alone, and a stop sent then is not seen by the application.
    """
    log = tmp_path / "serve.log"
    lock = Path(env["TM_VAR_DIR"]) / "in-use.lock"
    with _launcher(env, log) as (process, url):
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children")
        deadline = time.monotonic() + 60
        while not any(_holds(pid, lock) for pid in children.read_text().split()):
            assert time.monotonic() < deadline and process.poll() is None, log.read_text()
            time.sleep(0.005)
        with pytest.raises(httpx.TransportError):  # not serving yet
            httpx.get(f"{url}/api/v1/health", timeout=0.2)
        took = _stop(process, how)
    text = log.read_text(errors="replace")
    assert "refused to gracefully stop" not in text, text[-2000:]
    assert process.returncode == 0
    assert took < GRACEFUL / 2, took
