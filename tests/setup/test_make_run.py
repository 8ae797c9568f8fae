"""``make run`` as a newcomer meets it: real ``make``, real servers on free loopback ports.

A port taken (``PORT`` or ``DEMO_PORT``) stops ``make run`` before anything is set up, with one
sentence naming the variable that moves it and what holds the port. A first start on an empty
``var/`` (``TM_VAR_DIR`` in a temporary directory) prints no warning, and once the server
answers one banner says where the MCP endpoint, the site, the explorer and the admin are and
how to make the admin's first user; a test run beside it, guarding that ``var/``, passes and
names the box as the writer; Ctrl-C to the terminal's process group stops everything quietly.

Spec: OP5.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.spec("OP5")

ROOT = Path(__file__).resolve().parents[2]
MAKE = shutil.which("make") or "make"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port something else listens on."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield int(listener.getsockname()[1])


def make_env(var_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"MAKEFLAGS", "MFLAGS", "MAKELEVEL"}}
    env.pop("TM_SECRET_KEY", None)
    return {**env, "TM_VAR_DIR": str(var_dir)}


def make(*args: str) -> list[str]:
    """``make`` in the checkout with the venv running the tests, taken as installed (``-o``)."""
    venv = sys.prefix
    return [MAKE, "--no-print-directory", f"VENV={venv}", "-o", f"{venv}/.installed", *args]


@pytest.mark.parametrize(
    ("variable", "what"), [("DEMO_PORT", "the demo static site"), ("PORT", "the server")]
)
def test_a_taken_port_stops_make_run_before_anything(
    tmp_path: Path, taken_port: int, variable: str, what: str
) -> None:
    ports = {"PORT": str(free_port()), "DEMO_PORT": str(free_port())}
    ports[variable] = str(taken_port)
    done = subprocess.run(
        make("run", *(f"{k}={v}" for k, v in ports.items())),
        cwd=ROOT,
        env=make_env(tmp_path / "var"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    said = (
        f"make run: port {taken_port} on 127.0.0.1 ({variable}, {what}) is in use by "
        f"pid {os.getpid()} ("
    )
    assert said in done.stderr
    assert f"or move {what} with {variable}=" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert "migrate" not in done.stdout, "nothing is set up"
    assert not (tmp_path / "var").exists()


def python_shown() -> str:
    """The venv's python as the banner names it: relative to the checkout when inside it."""
    python = Path(sys.prefix) / "bin" / "python"
    return os.path.relpath(python, ROOT) if python.is_relative_to(ROOT) else str(python)


class Output:
    """A process's merged output, read on a thread of its own."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        assert process.stdout is not None
        stream = process.stdout
        self.thread = threading.Thread(target=lambda: self.lines.extend(stream), daemon=True)
        self.thread.start()

    def text(self) -> str:
        return "".join(self.lines)

    def wait_for(self, text: str, seconds: float, process: subprocess.Popen[str]) -> None:
        deadline = time.monotonic() + seconds
        while text not in self.text():
            assert process.poll() is None, self.text()
            assert time.monotonic() < deadline, f"no {text!r} in:\n{self.text()}"
            time.sleep(0.1)


@pytest.mark.slow
def test_a_first_make_run_warns_of_nothing_prints_one_banner_and_stops_quietly(
    tmp_path: Path,
) -> None:
    var_dir = tmp_path / "var"
    port, demo_port = free_port(), free_port()
    started = subprocess.Popen(
        make("run", f"PORT={port}", f"DEMO_PORT={demo_port}", "WORKERS=1", "THREADS=4"),
        cwd=ROOT,
        # each request's log row written at once: the box writes var/ while the run beside runs
        env={**make_env(var_dir), "TM_LOG_FLUSH_ROWS": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, as a terminal gives it
    )
    output = Output(started)
    try:
        output.wait_for("tmsite is serving", 240, started)
        time.sleep(0.5)
        first_start = output.text()
        site = f"http://127.0.0.1:{port}"
        banner = [
            f"  MCP endpoint  {site}/api/mcp",
            f"  site          {site}/",
            f"  explorer      {site}/explore",
            f"  admin         {site}/admin/",
            f"(its first user: {python_shown()} manage.py createsuperuser)",
            f"  demo site     http://127.0.0.1:{demo_port}/ (DEMO_PORT",
        ]
        for line in banner:
            assert line in first_start
        assert first_start.count("tmsite is serving") == 1
        for noise in ("WARNING", "tm.W0", "Traceback", "kept as corrected\n", "$(BIN)"):
            assert noise not in first_start.replace("0 kept as corrected", ""), first_start
        assert "--workers" not in first_start, "the serve recipe is not echoed"
        assert "manage.py migrate" not in first_start, "nor the setup's commands"

        with httpx.Client(timeout=30) as http:
            ping = http.post(
                f"{site}/api/mcp",
                json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                headers={"MCP-Protocol-Version": "2025-11-25"},
            )
            assert ping.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}
            assert http.get(f"http://127.0.0.1:{demo_port}/").status_code == 200
            # a test run beside it, guarding its var/, while the box writes its request log
            beside = guard_run_beside(var_dir, http, site)
        assert beside.returncode == 0, beside.stdout + beside.stderr
        assert "written by the box serving from it, not by the run" in beside.stdout
    finally:
        try:
            os.killpg(started.pid, signal.SIGINT)  # Ctrl-C: the whole foreground group
            started.wait(timeout=90)
        except subprocess.TimeoutExpired:
            os.killpg(started.pid, signal.SIGKILL)
            started.wait()
        except ProcessLookupError:
            pass  # it stopped by itself: the assertions say why
        output.thread.join(timeout=10)
    stopped = output.text()
    assert "make run: stopped." in stopped, stopped
    assert "No such process" not in stopped and "Traceback" not in stopped, stopped
    assert "Killing worker" not in stopped, "each worker drained"
    for number in (port, demo_port):
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(("127.0.0.1", number))  # nothing is left listening


PROBE_ARGS = ("-p", "no:randomly", "-p", "no:xdist", "-k", "until_the_box_writes")


def guard_run_beside(
    var_dir: Path, http: httpx.Client, site: str
) -> subprocess.CompletedProcess[str]:
    """The var/ guard's probe run with ``var_dir`` guarded, the box answering requests meanwhile."""
    env = {**os.environ, "TM_TEST_GUARDED_VAR": str(var_dir), "PYTHONPATH": str(ROOT)}
    beside = subprocess.Popen(
        [sys.executable, "-m", "pytest", "tests/var_guard_probe.py", *PROBE_ARGS],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    while beside.poll() is None:
        http.get(f"{site}/api/v1/overview")  # a logged request: a row in the box's database
        time.sleep(0.05)
    out, err = beside.communicate(timeout=60)
    return subprocess.CompletedProcess(beside.args, beside.returncode, out, err)


def test_a_server_that_stops_on_its_own_stops_the_demo_site_too(tmp_path: Path) -> None:
    port, demo_port = free_port(), free_port()
    env = {**make_env(tmp_path / "var"), "TM_DATABASE_URL": "nosuchdb://x"}  # tm.E002 at start
    ports = ["--port", str(port), "--demo-port", str(demo_port)]
    done = subprocess.run(
        [sys.executable, "-m", "tmsite.demo.run", *ports, "--workers", "1", "--threads", "2"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "tm.E002" in done.stderr
    assert "make run: the server stopped (exit status 1); stopped the rest." in done.stderr
    assert "tmsite is serving" not in done.stdout
    with socket.socket() as probe:  # the demo site is gone with it
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", demo_port))
