"""Real peers as real processes: argv for the peer scripts, HTTP peers on loopback, and the
checks that no process a test started outlives it.

The test packages that talk to peers (``tests/mcpclient``, ``tests/mcpmount``) import from
here; the module-scoped HTTP peer fixtures below are imported into their conftests.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PEERS = Path(__file__).resolve().parent
ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
SHARED_PEERS: set[int] = set()


def peer(name: str, *args: str) -> list[str]:
    """The argv that runs one peer script."""
    return [PYTHON, str(PEERS / name), *args]


def gone(pid: int, timeout: float = 5.0) -> bool:
    """Whether a process has ended (exited, reaped, or a zombie awaiting its parent)."""
    end = time.monotonic() + timeout
    while True:
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                state = stat.read().rsplit(b")", 1)[1].split()[0]
            if state in (b"Z", b"X"):
                return True
        except (FileNotFoundError, ProcessLookupError):
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(0.02)


@dataclass
class HttpPeer:
    proc: subprocess.Popen[bytes]
    port: int

    def url(self, path: str = "/mcp") -> str:
        return f"http://127.0.0.1:{self.port}{path}"


def start_http_peer(argv: list[str], env: dict[str, str] | None = None) -> HttpPeer:
    """Start an HTTP peer and read the ``PORT <n>`` line it prints once listening."""
    child_env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT), **(env or {})}
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=child_env,
        cwd=ROOT,
        start_new_session=True,
    )
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 20)
    line = proc.stdout.readline() if ready else b""
    if not line.startswith(b"PORT "):
        stop_http_peer(HttpPeer(proc, 0))
        raise RuntimeError(f"{argv[1]} did not start: {line!r}")
    SHARED_PEERS.add(proc.pid)
    return HttpPeer(proc, int(line.split()[1]))


def stop_http_peer(p: HttpPeer) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(p.proc.pid, signal.SIGKILL)
    p.proc.wait(timeout=10)
    SHARED_PEERS.discard(p.proc.pid)
    if p.proc.stdout is not None:
        p.proc.stdout.close()
    assert gone(p.proc.pid), "the HTTP peer outlived its test"


def children() -> set[int]:
    """This process's live children (zombies awaiting reaping excluded)."""
    found: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            found.update(int(pid) for pid in (task / "children").read_text().split())
        except (FileNotFoundError, ProcessLookupError):
            continue
    return {pid for pid in found if not gone(pid, timeout=0)}


def assert_none_left(before: set[int]) -> None:
    """Every child started since ``before`` was taken is gone (shared HTTP peers excepted)."""
    left = {pid for pid in children() - before - SHARED_PEERS if not gone(pid, timeout=5)}
    assert not left, f"processes left behind: {sorted(left)}"


@pytest.fixture(scope="module")
def sdk_stateless() -> Iterator[HttpPeer]:
    p = start_http_peer(peer("sdk_http_peer.py", "--stateless"))
    yield p
    stop_http_peer(p)


@pytest.fixture(scope="module")
def sdk_sessions() -> Iterator[HttpPeer]:
    p = start_http_peer(peer("sdk_http_peer.py"))
    yield p
    stop_http_peer(p)


@pytest.fixture(scope="module")
def sdk_token() -> Iterator[HttpPeer]:
    p = start_http_peer(
        peer("sdk_http_peer.py", "--stateless", "--json", "--token-env", "ELEMENTS_TOKEN"),
        env={"ELEMENTS_TOKEN": "s3cret-token"},
    )
    yield p
    stop_http_peer(p)
