"""A real ``manage.py mcp_stdio`` over a temporary checkout, driven line by line."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from tests import wire_schema
from tests.transport.transport_helpers import MODERN_META

ROOT = Path(__file__).resolve().parents[2]
HOST = "tinymachines"
FS = f"tm://{HOST}/fs"
SUB_ID = "io.modelcontextprotocol/subscriptionId"


def make_checkout(tmp: Path) -> Path:
    """A checkout with two fs roots: ``docs`` (a file, a directory, a denied name) and ``data``."""
    root = tmp / "box"
    (root / "docs" / "guide").mkdir(parents=True)
    (root / "docs" / "a.md").write_text("# a\n")
    (root / "docs" / "guide" / "b.md").write_text("# b\n")
    (root / "docs" / ".env").write_text("SECRET=1\n")
    (root / "data").mkdir()
    return root


def server_env(checkout: Path, **more: str) -> dict[str, str]:
    """The environment of a server over ``checkout`` (this run's own ``TM_VAR_DIR``)."""
    return {
        **os.environ,
        "TM_CHECKOUT": str(checkout),
        "TM_FS_ROOTS": "docs,data",
        "TM_HOST": HOST,
        "TM_FS_POLL_MS": "100",
        **more,
    }


def listen_request(rid: Any, **notifications: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "subscriptions/listen",
        "params": {"notifications": notifications, "_meta": MODERN_META},
    }


def request(rid: Any, method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def initialize(rid: Any = 0) -> dict[str, Any]:
    return request(
        rid,
        "initialize",
        protocolVersion="2025-11-25",
        capabilities={},
        clientInfo={"name": "stdio-subscriptions", "version": "1"},
    )


class Stdio:
    """The server as a subprocess: lines sent on its stdin, its stdout read line by line."""

    def __init__(self, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "mcp_stdio"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.sent: list[bytes] = []
        self.out: list[bytes] = []
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._errors: list[bytes] = []
        self._err_reader = threading.Thread(target=self._read_errors, daemon=True)
        self._err_reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.out.append(line)
            self._lines.put(line)
        self._lines.put(None)

    def _read_errors(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self._errors.append(line)

    @property
    def stderr(self) -> str:
        return b"".join(self._errors).decode(errors="replace")

    def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message).encode()
        self.sent.append(data)
        assert self.process.stdin is not None
        self.process.stdin.write(data + b"\n")
        self.process.stdin.flush()

    def next(self, timeout: float = 20) -> Any:
        """The next line written, parsed (fails after ``timeout`` seconds)."""
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"nothing written in {timeout} s\n{self.stderr}") from None
        if line is None:
            raise EOFError("stdout closed")
        return json.loads(line)

    def quiet(self, seconds: float) -> list[Any]:
        """Every line written in the next ``seconds`` seconds."""
        got: list[Any] = []
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                break
            got.append(json.loads(line))
        return got

    def ask(self, message: dict[str, Any], timeout: float = 30) -> Any:
        """Send a request and return its answer (notifications before it are skipped)."""
        self.send(message)
        while True:
            line = self.next(timeout)
            if line.get("id") == message["id"] and "method" not in line:
                return line

    def close_stdin(self, timeout: float = 10) -> tuple[int, float]:
        """Close stdin and wait for the exit: its status and how long it took."""
        started = time.monotonic()
        assert self.process.stdin is not None
        self.process.stdin.close()
        status = self.process.wait(timeout=timeout)
        took = time.monotonic() - started
        self._reader.join(timeout=5)
        wire_schema.check_stdio(self.sent, b"".join(self.out))
        return status, took

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None and not stream.closed:
                stream.close()


def told_after_edits(server: Stdio, path: Path, wanted: Any, seconds: float = 30) -> list[Any]:
    """Edit ``path`` until a line for which ``wanted(line)`` is written; every line until then.

    The watch starts on a thread of its own (a poll has its first look first): an edit made
    before it looks is not seen, so the file is edited again until it is told.
    """
    seen: list[Any] = []
    deadline = time.monotonic() + seconds
    attempt = 0
    while time.monotonic() < deadline:
        path.write_text(f"edit {attempt}\n")
        attempt += 1
        for line in server.quiet(0.4):
            seen.append(line)
            if wanted(line):
                return seen
    raise AssertionError(f"not told in {seconds} s: {seen}\n{server.stderr}")
