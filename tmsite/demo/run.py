"""What ``make run`` runs once the box is set up: the server and the demo static site beside it.

``python -m tmsite.demo.run --port 8000 --demo-port 8001``: checks that both ports are free
(a port taken is one sentence naming the variable that moves it, and what holds the port when
this machine says), starts the demo static site and the server (``python -m tmsite.serve``, or
gunicorn), waits until both answer, then prints one banner: the MCP endpoint, the site, the
explorer, the admin and how to make its first user. Ctrl-C (or SIGTERM, SIGHUP) stops both and
waits for them (each in a process group of its own, stopped with one SIGTERM); when either stops
on its own, the other is stopped too and the exit status says so.
``--check-ports`` only checks the ports (``make run`` does that before setting anything up).

Only the standard library: it runs before anything else of tmsite is needed.

Spec: OP5.
"""

from __future__ import annotations

import argparse
import errno
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parents[2]
DEMO_SITE = "demo_sites/demo.tinymachines.ai"
#: Seconds the server may take to answer its first request (its checks run first).
READY_SECONDS = 120.0
#: Seconds a stopped child may take to finish its requests before it is killed.
STOP_SECONDS = 30.0
WILDCARDS = frozenset({"0.0.0.0", "::", ""})
#: The status :meth:`Box.wait_ready` gives a child that never answered (no exit status is).
NEVER_ANSWERED = -1000


@dataclass(frozen=True)
class Port:
    """One port ``make run`` listens on, and the make variable that moves it."""

    variable: str
    what: str
    host: str
    number: int


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The options, as the Makefile passes them."""
    parser = argparse.ArgumentParser(prog="python -m tmsite.demo.run", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--demo-port", type=int, default=8001)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--server", choices=["serve", "gunicorn"], default="serve")
    parser.add_argument("--check-ports", action="store_true", help="check the ports and stop")
    return parser.parse_args(argv)


def ports(options: argparse.Namespace) -> list[Port]:
    """The server's port and the demo site's."""
    return [
        Port("PORT", "the server", options.host, options.port),
        Port("DEMO_PORT", "the demo static site", "127.0.0.1", options.demo_port),
    ]


def bind_error(host: str, number: int) -> OSError | None:
    """Why a server could not listen on ``host:number`` now, or None when it could.

    ``SO_REUSEADDR`` as the servers set it: a port left in TIME_WAIT is free to them.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, number))
        except OSError as exc:
            return exc
    return None


def free_port_near(host: str, number: int, avoid: set[int]) -> int | None:
    """A port a hundred or a few hundred above ``number`` that is free now, to suggest."""
    for candidate in range(number + 100, min(number + 1000, 65536), 100):
        if candidate not in avoid and bind_error(host, candidate) is None:
            return candidate
    return None


def holder(number: int) -> str:
    """What listens on TCP port ``number``, as ``pid N (command)``, when /proc says; else ""."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()  # sl local remote state(0A: listening) … inode
            listening = len(fields) > 9 and fields[3] == "0A"
            if listening and int(fields[1].rsplit(":", 1)[1], 16) == number:
                inodes.add(f"socket:[{fields[9]}]")
    if not inodes:
        return ""
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") in inodes for fd in fds):
                command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                return f"pid {pid} ({command.decode(errors='replace').strip()[:120]})"
        except OSError:
            continue
    return ""


def port_problems(wanted: list[Port]) -> list[str]:
    """One sentence per port that cannot be listened on: which variable moves it, and where."""
    problems = []
    numbers = {port.number for port in wanted}
    if len(numbers) < len(wanted):
        names = " and ".join(port.variable for port in wanted)
        return [f"make run: {names} are both {wanted[0].number}: give each its own port"]
    for port in wanted:
        error = bind_error(port.host, port.number)
        if error is None:
            continue
        if error.errno == errno.EADDRINUSE:
            held = holder(port.number)
            why = f"is in use{' by ' + held if held else ''}"
        else:
            why = f"cannot be listened on ({error.strerror or error})"
        suggestion = free_port_near(port.host, port.number, numbers)
        move = f"{port.variable}={suggestion} make run" if suggestion else f"{port.variable}=…"
        problems.append(
            f"make run: port {port.number} on {port.host} ({port.variable}, {port.what}) {why}: "
            f"stop what holds it, or move {port.what} with {move}"
        )
    return problems


def base_url(host: str, number: int) -> str:
    """The URL a browser on this machine uses for ``host:number``."""
    shown = "127.0.0.1" if host in WILDCARDS else host
    return f"http://[{shown}]:{number}" if ":" in shown else f"http://{shown}:{number}"


def banner(options: argparse.Namespace) -> str:
    """The lines printed once the server answers."""
    site = base_url(options.host, options.port)
    admin = os.environ.get("TM_ADMIN_PATH", "admin/").strip("/")
    python = sys.executable
    if Path(python).is_relative_to(ROOT):
        python = os.path.relpath(python, ROOT)
    workers = f"{options.workers} worker{'s' if options.workers != 1 else ''}"
    return "\n".join(
        [
            "",
            f"tmsite is serving ({options.server}, {workers}); Ctrl-C stops it.",
            f"  MCP endpoint  {site}/api/mcp",
            f"  site          {site}/",
            f"  explorer      {site}/explore",
            f"  admin         {site}/{admin}/",
            f"                (its first user: {python} manage.py createsuperuser)",
            f"  demo site     {base_url('127.0.0.1', options.demo_port)}/ (DEMO_PORT, read "
            "through the http mount)",
            "",
        ]
    )


def commands(options: argparse.Namespace) -> dict[str, list[str]]:
    """The two programs, by what they are."""
    python = sys.executable
    demo = [python, "-m", "tmsite.demo.static_site", DEMO_SITE, "--port", str(options.demo_port)]
    if options.server == "gunicorn":
        server = [
            str(Path(python).with_name("gunicorn")),
            "tmsite.wsgi",
            "--config",
            "deploy/gunicorn.conf.py",
            "--bind",
            f"{options.host}:{options.port}",
        ]
    else:
        server = [python, "-m", "tmsite.serve", "--host", options.host, "--port", str(options.port)]
    server += ["--workers", str(options.workers), "--threads", str(options.threads)]
    return {"the demo static site": demo, "the server": server}


def answers(url: str) -> bool:
    """Whether anything answers HTTP at ``url`` (any status)."""
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except urllib.error.HTTPError:
        return True
    except (OSError, ValueError):
        return False


class Box:
    """The running children, stopped together."""

    def __init__(self, options: argparse.Namespace) -> None:
        self.options = options
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self.stopping = False

    def start(self) -> None:
        """Start the demo site first (the server's http mount reads it), then the server."""
        env = {
            **os.environ,
            "TM_FRONT_DOOR": base_url(self.options.host, self.options.port),
            "TM_DEMO_FRONT_DOOR": base_url("127.0.0.1", self.options.demo_port),
        }
        for what, argv in commands(self.options).items():
            # A process group of its own: a Ctrl-C reaches this launcher only, which stops each
            # child with one SIGTERM (what the server drains on), not a second signal on top.
            self.children[what] = subprocess.Popen(argv, cwd=ROOT, env=env, process_group=0)

    def ended(self) -> tuple[str, int] | None:
        """The first child that has stopped, with its exit status; None while both run."""
        for what, child in self.children.items():
            code = child.poll()
            if code is not None:
                return what, code
        return None

    def wait_ready(self) -> tuple[str, int] | None:
        """Wait until both answer; a child that stops first (or never answers) is returned."""
        waiting = [
            ("the demo static site", base_url("127.0.0.1", self.options.demo_port) + "/"),
            ("the server", base_url(self.options.host, self.options.port) + "/api/v1/health"),
        ]
        deadline = time.monotonic() + READY_SECONDS
        while waiting and time.monotonic() < deadline and not self.stopping:
            gone = self.ended()
            if gone is not None:
                return gone
            if answers(waiting[0][1]):
                waiting.pop(0)
                continue
            time.sleep(0.2)
        if waiting and not self.stopping:
            return waiting[0][0], NEVER_ANSWERED
        return None

    def stop(self) -> None:
        """Ask each child to stop (SIGTERM), wait for it to finish its requests, then kill."""
        self.stopping = True
        for child in self.children.values():
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        for child in self.children.values():
            try:
                child.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()


def run(options: argparse.Namespace) -> int:
    """Serve until stopped; the exit status is 0 for a stop asked for, else the child's."""
    box = Box(options)

    def asked_to_stop(signum: int, frame: FrameType | None) -> None:
        box.stopping = True

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, asked_to_stop)
    box.start()
    gone = box.wait_ready()
    if gone is None and not box.stopping:
        print(banner(options), flush=True)
        while not box.stopping:
            gone = box.ended()
            if gone is not None:
                break
            time.sleep(0.2)
    box.stop()
    if gone is None:
        print("make run: stopped.", flush=True)
        return 0
    what, code = gone
    if code == NEVER_ANSWERED:
        print(f"make run: {what} did not answer within {READY_SECONDS:.0f} s.", file=sys.stderr)
        return 1
    print(f"make run: {what} stopped (exit status {code}); stopped the rest.", file=sys.stderr)
    return code if code > 0 else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Check the ports; then, unless only asked to check, serve."""
    options = parse(argv)
    problems = port_problems(ports(options))
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 2
    if options.check_ports:
        return 0
    return run(options)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
