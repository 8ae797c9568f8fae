"""The 2025-era official SDK clients as subprocesses: the Python SDK 1.x and the TypeScript SDK 1.x.

``make sdk-clients`` installs them outside what git tracks: the Python SDK 1.x in a venv of its
own, ``.sdk-clients/sdk1`` (pinned by ``sdk1/``), the TypeScript SDK 1.x in ``ts/node_modules``
(``make test`` makes them when it can). A test that needs one that is not there is skipped
saying so (failed under ``CI=true``). Each client is a small script (``sdk1/client.py``,
``ts/client.mjs``) given one JSON object (where the server is, the scenario) that prints one
JSON object a line; the tests assert on those lines.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.services import missing

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SDK1 = HERE / "sdk1"
SDK_VENV = ROOT / ".sdk-clients" / "sdk1"
TS = HERE / "ts"
#: The clients the tests drive: the id of each is the name of its directory here.
CLIENTS = ("sdk1", "ts")
#: The box's host, in the tests' addresses and the servers' settings.
HOST = "tinymachines"
WAIT = 90.0


def command(client: str) -> list[str]:
    """The command that starts ``client``'s script, or a skip naming ``make sdk-clients``."""
    if client == "sdk1":
        python = SDK_VENV / "bin" / "python"
        if not (SDK_VENV / ".installed").is_file() or not python.is_file():
            missing("the Python SDK 1.x client is not installed", "make sdk-clients installs it")
        return [str(python), "-B", str(SDK1 / "client.py")]
    node = shutil.which("node")
    if node is None:
        missing("node is not on PATH", "the TypeScript SDK 1.x client needs Node.js 18 or later")
    if not (TS / "node_modules" / ".installed").is_file():
        missing("the TypeScript SDK 1.x client is not installed", "make sdk-clients installs it")
    return [node, str(TS / "client.mjs")]


def stdio_server(**env: str) -> dict[str, Any]:
    """``manage.py mcp_stdio`` with this run's environment (its own ``TM_VAR_DIR``) and ``env``."""
    return {
        "command": sys.executable,
        "args": ["manage.py", "mcp_stdio"],
        "cwd": str(ROOT),
        "env": {**os.environ, "PYTHONPATH": str(ROOT), **env},
    }


def where(transport: str, url: str, box: Path) -> dict[str, Any]:
    """Where the client finds the server: ``url`` over HTTP, or ``mcp_stdio`` serving ``box``."""
    if transport == "http":
        return {"url": url}
    return {"stdio": stdio_server(TM_CHECKOUT=str(box), TM_FS_ROOTS="docs", TM_HOST=HOST)}


def client_env() -> dict[str, str]:
    """The client's environment: no bytecode written, nothing of the project's venv on the path."""
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run(client: str, config: dict[str, Any]) -> list[dict[str, Any]]:
    """Runs ``client`` with ``config`` to its end: the lines it printed."""
    done = subprocess.run(
        [*command(client), json.dumps(config)],
        cwd=HERE,
        env=client_env(),
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )
    assert done.returncode == 0, f"{client} exited {done.returncode}:\n{done.stderr}"
    return [json.loads(line) for line in done.stdout.splitlines()]


class Running:
    """A client still running: its lines as it prints them."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(json.loads(line))
        self.lines.put(None)

    def _drain(self) -> None:
        assert self.process.stderr is not None
        self.stderr.extend(self.process.stderr)

    def line(self, seconds: float = WAIT) -> dict[str, Any]:
        """The next line; the client ending first fails the test with what it wrote on stderr."""
        try:
            got = self.lines.get(timeout=seconds)
        except queue.Empty:
            raise AssertionError(f"no line within {seconds} s") from None
        if got is None:
            self.process.wait(timeout=10)
            raise AssertionError(
                f"the client ended ({self.process.returncode}):\n{''.join(self.stderr)}"
            )
        return got

    def poll_line(self, seconds: float) -> dict[str, Any] | None:
        """The next line if one comes within ``seconds``."""
        try:
            got = self.lines.get(timeout=seconds)
        except queue.Empty:
            return None
        if got is None:
            self.lines.put(None)  # ended: the next ``line`` says so
            return None
        return got


@contextmanager
def started(client: str, config: dict[str, Any]) -> Iterator[Running]:
    """``client`` running with ``config`` while the block runs; stopped after it."""
    process = subprocess.Popen(
        [*command(client), json.dumps(config)],
        cwd=HERE,
        env=client_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    running = Running(process)
    try:
        yield running
        code = process.wait(timeout=30)
        assert code == 0, f"{client} exited {code}:\n{''.join(running.stderr)}"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
