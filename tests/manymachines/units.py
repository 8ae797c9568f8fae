"""The systemd units of ``deploy/systemd/``, run as systemd would run them, without systemd.

The stack test starts its machines from ``tmsite.service`` itself — its ``ExecStart`` in a
process group of its own, then its ``ExecStartPost`` (the unit is up once that exits 0), its
``KillSignal`` to the whole group (``KillMode=control-group``) within ``TimeoutStopSec`` to
stop — and runs the other units' commands the same way. The only changes made to a command
are the install paths: ``/srv/tmsite`` is this checkout and its venv's python this one.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from tests.oplog.servers import ROOT, Machine

UNITS = ROOT / "deploy" / "systemd"
INSTALL = "/srv/tmsite"


def unit(name: str) -> dict[str, list[str]]:
    """A unit file as ``Section.Key`` → its values in order (a key may be given twice)."""
    found: dict[str, list[str]] = {}
    section = ""
    for raw in (UNITS / name).read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        key, _, value = line.partition("=")
        found.setdefault(f"{section}.{key.strip()}", []).append(value.strip())
    return found


def command(line: str) -> list[str]:
    """A unit's command line with the install paths made this checkout's."""
    argv = shlex.split(line)
    python = f"{INSTALL}/.venv/bin/python"
    return [sys.executable if arg == python else arg.replace(INSTALL, str(ROOT)) for arg in argv]


def run(
    name: str, key: str, env: Mapping[str, str], timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """Run each command of a unit's ``key`` (``ExecStart`` …) in its working directory."""
    found = unit(name)
    cwd = found.get("Service.WorkingDirectory", [INSTALL])[0].replace(INSTALL, str(ROOT))
    done = subprocess.CompletedProcess[str]([], 0, "", "")
    for line in found[f"Service.{key}"]:
        done = subprocess.run(
            command(line), cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=timeout
        )
        if done.returncode != 0:
            return done
    return done


@contextmanager
def machine(env: Mapping[str, str], log: Path) -> Iterator[Machine]:
    """One machine as ``tmsite.service`` starts and stops it; ``env`` is its EnvironmentFile."""
    service = unit("tmsite.service")
    start = command(service["Service.ExecStart"][0])
    with log.open("ab") as sink:
        process = subprocess.Popen(
            start, cwd=ROOT, env=dict(env), stdout=sink, stderr=sink, start_new_session=True
        )
    url = f"http://{env['TM_SERVE_HOST']}:{env['TM_SERVE_PORT']}"
    try:
        started = run("tmsite.service", "ExecStartPost", env)
        if started.returncode != 0:
            tail = log.read_text(errors="replace")[-3000:]
            raise TimeoutError(f"ExecStartPost failed: {started.stderr}; the log ends:\n{tail}")
        yield Machine(url, process)
    finally:
        stop = getattr(signal, service["Service.KillSignal"][0])
        if process.poll() is None:
            os.killpg(process.pid, stop)
        try:
            process.wait(timeout=float(service["Service.TimeoutStopSec"][0]))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
