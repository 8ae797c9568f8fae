"""Real servers for the operating tests on loopback: the default server (``python -m
tmsite.serve``, granian), gunicorn with the deploy config, nginx in front of either."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests import wire_schema
from tests.services import missing

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def refusing_port() -> Iterator[int]:
    """A loopback port that refuses every connection while the block runs: bound, never
    listening, and without SO_REUSEADDR, so no server started meanwhile (by a test run in
    parallel) can take it, as one could take a port that was merely free."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def server_env(var_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a server under test: its own var/, no inherited TM_ settings."""
    var_dir.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TM_")}
    env.update({"TM_VAR_DIR": str(var_dir), "TM_SECRET_KEY": "operating-tests", **extra})
    env.pop("DJANGO_SETTINGS_MODULE", None)
    return env


def migrate(env: Mapping[str, str]) -> None:
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT,
        env=dict(env),
        check=True,
        timeout=180,
    )


def wait_for(url: str, deadline: float = 40.0) -> None:
    end = time.monotonic() + deadline
    while True:
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > end:
            raise TimeoutError(f"{url} did not answer within {deadline} s")
        time.sleep(0.1)


@contextmanager
def gunicorn(
    env: Mapping[str, str],
    workers: int,
    log: Path,
    port: int | None = None,
    threads: int | None = 1,
) -> Iterator[str]:
    """gunicorn serving ``tmsite.wsgi`` on loopback with the deploy config; yields its base URL.

    ``threads=None`` leaves the thread count to the config (``GUNICORN_THREADS``, default 4).
    """
    port = port or free_port()
    command = [
        str(BIN / "gunicorn"),
        "tmsite.wsgi",
        "--config",
        str(ROOT / "deploy" / "gunicorn.conf.py"),
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        *(["--threads", str(threads)] if threads is not None else []),
    ]
    with log.open("ab") as sink:
        process = subprocess.Popen(command, cwd=ROOT, env=dict(env), stderr=sink, stdout=sink)
    try:
        wait_for(f"http://127.0.0.1:{port}/api/v1/health")
        yield f"http://127.0.0.1:{port}"
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass
class Machine:
    """One ``python -m tmsite.serve`` process: its base URL and the launcher process."""

    url: str
    process: subprocess.Popen[bytes]

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def workers(self) -> list[int]:
        """The pids of the launcher's worker processes (its children, from ``/proc``)."""
        pid = self.process.pid
        try:
            text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
        except OSError:
            return []
        return [int(part) for part in text.split()]


@contextmanager
def serving(
    env: Mapping[str, str],
    workers: int,
    log: Path,
    port: int | None = None,
    threads: int | None = None,
    *extra: str,
) -> Iterator[Machine]:
    """``python -m tmsite.serve`` (the default server) on loopback; SIGTERM when the block ends.

    ``threads=None`` leaves the thread count to the launcher (``TM_SERVE_THREADS``, 8). The
    block ends once the launcher has exited, its workers with it.
    """
    port = port or free_port()
    command = [
        sys.executable,
        "-m",
        "tmsite.serve",
        "--port",
        str(port),
        "--workers",
        str(workers),
        *(["--threads", str(threads)] if threads is not None else []),
        *extra,
    ]
    with log.open("ab") as sink:
        process = subprocess.Popen(command, cwd=ROOT, env=dict(env), stderr=sink, stdout=sink)
    machine = Machine(f"http://127.0.0.1:{port}", process)
    try:
        try:
            wait_for(f"{machine.url}/api/v1/health", deadline=90)
        except TimeoutError as exc:
            tail = log.read_text(errors="replace")[-3000:]
            raise TimeoutError(f"{exc}; the server's log ends:\n{tail}") from None
        yield machine
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=40)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def serve(
    env: Mapping[str, str],
    workers: int,
    log: Path,
    port: int | None = None,
    threads: int | None = None,
) -> Iterator[str]:
    """:func:`serving`, yielding only the base URL (as :func:`gunicorn` does)."""
    with serving(env, workers, log, port, threads) as machine:
        yield machine.url


NGINX_SITE = """
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 2048; }}
http {{
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    access_log off;
    include {dir}/upstream.conf;
    include {site};
}}
"""


@contextmanager
def nginx(
    upstreams: list[str], work: Path, port: int | None = None, include: Path | None = None
) -> Iterator[str]:
    """nginx on loopback with ``deploy/nginx/tmsite.conf`` in front of ``upstreams``.

    The upstream block is ``deploy/nginx/upstream.conf`` with ``upstreams`` for its server
    lines; the logs the site names under ``/var/log/nginx/`` are written in ``work``;
    ``include`` is a file included in the site's server block, before its locations.
    """
    binary = os.environ.get("TM_NGINX") or shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(binary).is_file():
        missing(f"nginx is not installed at {binary}", "apt-get install nginx")
    port = port or free_port()
    work.mkdir(parents=True, exist_ok=True)
    site = (ROOT / "deploy" / "nginx" / "tmsite.conf").read_text()
    site = site.replace("listen 80;", f"listen 127.0.0.1:{port};")
    site = site.replace("listen [::]:80;", "")
    site = site.replace("/var/log/nginx/", f"{work}/")
    if include is not None:
        marker = "    location /api/ {"
        assert marker in site
        site = site.replace(marker, f"    include {include};\n\n{marker}", 1)
    (work / "site.conf").write_text(site)
    servers = "\n".join(f"    server {u.removeprefix('http://')};" for u in upstreams)
    upstream = (ROOT / "deploy" / "nginx" / "upstream.conf").read_text()
    upstream = upstream.replace("    server 127.0.0.1:8000;", servers)
    (work / "upstream.conf").write_text(upstream)
    conf = NGINX_SITE.format(dir=work, site=work / "site.conf")
    (work / "nginx.conf").write_text(conf)
    process = subprocess.Popen(
        [binary, "-c", str(work / "nginx.conf"), "-g", "daemon off;", "-p", str(work)],
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(f"http://127.0.0.1:{port}/api/v1/health")
        yield f"http://127.0.0.1:{port}"
    finally:
        process.send_signal(signal.SIGQUIT)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def json_lines(log: Path) -> list[dict[str, Any]]:
    """The JSON request lines a server wrote to its log."""
    out = []
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("{") and '"logger":"tmsite.requests"' in line:
            out.append(json.loads(line))
    return out


def read(base: str, uri: str, rid: int = 1, headers: Mapping[str, str] | None = None) -> Any:
    """A ``resources/read`` over HTTP; the answer is checked against the protocol schema."""
    reply = httpx.post(
        f"{base}/api/mcp",
        json={"jsonrpc": "2.0", "id": rid, "method": "resources/read", "params": {"uri": uri}},
        headers=dict(headers or {}),
        timeout=30,
    )
    wire_schema.check_http(
        reply.request.headers,
        reply.request.content,
        reply.headers.get("content-type", ""),
        reply.content,
    )
    return reply


@contextmanager
def redis_server(work: Path, port: int | None = None) -> Iterator[RedisProcess]:
    """A redis-server of the test's own on a loopback port (nothing written to disk), stopped
    at the end; the handle can stop, start, freeze and thaw it."""
    binary = os.environ.get("TM_REDIS_SERVER") or shutil.which("redis-server")
    binary = binary or "/usr/bin/redis-server"
    if not Path(binary).is_file():
        missing(f"redis-server is not installed at {binary}", "apt-get install redis-server")
    work.mkdir(parents=True, exist_ok=True)
    server = RedisProcess(binary, port or free_port(), work)
    server.start()
    try:
        yield server
    finally:
        server.stop()


class RedisProcess:
    """One redis-server process: ``url``, and the faults a test provokes on it."""

    def __init__(self, binary: str, port: int, work: Path) -> None:
        self.binary, self.port, self.work = binary, port, work
        self.url = f"redis://127.0.0.1:{port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start it (again, on the same port) and wait until it answers PING."""
        command = [self.binary, "--bind", "127.0.0.1", "--port", str(self.port)]
        command += ["--save", "", "--appendonly", "no", "--dir", str(self.work)]
        with (self.work / "redis.log").open("ab") as sink:
            self.process = subprocess.Popen(command, stdout=sink, stderr=sink)
        end = time.monotonic() + 20
        while not self.ping():
            if self.process.poll() is not None or time.monotonic() > end:
                raise RuntimeError(f"redis-server did not start on port {self.port}")
            time.sleep(0.05)

    def ping(self) -> bool:
        """Whether it answers ``PING`` within half a second."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def info(self) -> dict[str, str]:
        """``INFO stats``, as field and value."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as sock:
            sock.sendall(b"INFO stats\r\n")
            data = b""
            while b"\r\n" not in data:
                data += sock.recv(65536)
            header, _, rest = data.partition(b"\r\n")  # $<size>, then the text
            size = int(header[1:])
            while len(rest) < size + 2:
                rest += sock.recv(65536)
        lines = rest[:size].decode().splitlines()
        return dict(line.split(":", 1) for line in lines if ":" in line)

    def stop(self) -> None:
        """Terminate it (thawed first, so it can exit) and wait for it."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGCONT)
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def freeze(self) -> None:
        """SIGSTOP: connections are still accepted by the kernel, nothing is answered."""
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        """SIGCONT: it answers again, with what it held."""
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)
