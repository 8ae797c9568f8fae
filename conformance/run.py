"""Run the official MCP conformance suite against tmsite's endpoint.

Usage (from the repository root)::

    .venv/bin/python conformance/run.py                 # start a server, run both revisions
    .venv/bin/python conformance/run.py --url URL       # test a server that is already running
    .venv/bin/python conformance/run.py --requirements 2026-07-28

Without ``--url`` it applies migrations to a database of its own (in a fresh temporary
``TM_VAR_DIR``, or in ``--var-dir``; never the checkout's ``var/`` that ``make run`` serves),
starts the default server (``python -m tmsite.serve``, two workers: the one that holds
subscription streams) over it on a free loopback port, waits until ``POST /api/mcp`` answers, runs
``conformance server --requirements <revision> --expected-failures conformance/baseline.yml``
for each revision, and stops the server. The suite (pinned in ``conformance/package.json``) is
installed into ``conformance/node_modules`` with ``npm ci`` when missing. On Node older than
22, ``node20-globsync.mjs`` supplies the ``fs.globSync`` the suite imports at load time. Exit
status: 0 when every revision's failures are exactly the baselined ones.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SUITE = HERE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
REVISIONS = ("2025-11-25", "2026-07-28")


def ensure_suite() -> None:
    if SUITE.exists():
        return
    npm = shutil.which("npm")
    if npm is None:
        sys.exit("npm is needed to install the conformance suite (conformance/package.json)")
    subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=HERE, check=True)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_ready(url: str, deadline: float) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    while time.monotonic() < deadline:
        request = urllib.request.Request(
            url, data=body, headers={"Content-Type": "application/json"}, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    sys.exit(f"the server at {url} did not answer in time")


def start_server(var_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Migrate a database in ``var_dir`` and serve it; the signing key is made there too."""
    python = sys.executable
    var_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "TM_VAR_DIR": str(var_dir)}
    env.pop("TM_DATABASE_URL", None)
    env.pop("TM_RATE_FILE", None)
    subprocess.run(
        [python, "manage.py", "migrate", "--noinput", "--verbosity", "0"],
        cwd=ROOT,
        env=env,
        check=True,
    )
    port = free_port()
    process = subprocess.Popen(
        [
            python,
            "-m",
            "tmsite.serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "2",
        ],
        cwd=ROOT,
        env=env,
    )
    url = f"http://127.0.0.1:{port}/api/mcp"
    try:
        wait_ready(url, time.monotonic() + 30)
    except SystemExit:
        process.terminate()
        raise
    return process, url


def node_command() -> list[str]:
    node = shutil.which("node")
    if node is None:
        sys.exit("node is needed to run the conformance suite")
    return [node, "--import", str(HERE / "node20-globsync.mjs"), str(SUITE)]


def run_revision(url: str, revision: str, output: Path) -> int:
    print(f"\n### conformance server --requirements {revision} --url {url}", flush=True)
    command = [
        *node_command(),
        "server",
        "--url",
        url,
        "--requirements",
        revision,
        "--expected-failures",
        str(HERE / "baseline.yml"),
        "--output-dir",
        str(output / revision),
    ]
    return subprocess.run(command, cwd=HERE, check=False).returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="test this running endpoint instead of starting one")
    parser.add_argument(
        "--requirements",
        choices=REVISIONS,
        action="append",
        help="revision(s) to run (default: both)",
    )
    parser.add_argument(
        "--output-dir",
        type=Path,
        default=ROOT / "test-artifacts" / "conformance",
        help="where the suite writes checks.json per scenario",
    )
    parser.add_argument(
        "--var-dir",
        type=Path,
        help="the started server's TM_VAR_DIR (default: a temporary directory, removed after)",
    )
    args = parser.parse_args()
    ensure_suite()
    process: subprocess.Popen[bytes] | None = None
    url = args.url
    scratch: tempfile.TemporaryDirectory[str] | None = None
    try:
        if url is None:
            var_dir = args.var_dir
            if var_dir is None:
                scratch = tempfile.TemporaryDirectory(prefix="tmsite-conformance-var-")
                var_dir = Path(scratch.name)
            process, url = start_server(var_dir)
        statuses = {
            r: run_revision(url, r, args.output_dir) for r in args.requirements or REVISIONS
        }
    finally:
        if process is not None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if scratch is not None:
            scratch.cleanup()
    print()
    for revision, status in statuses.items():
        print(f"{revision}: {'baseline holds' if status == 0 else f'exit status {status}'}")
    return 0 if all(status == 0 for status in statuses.values()) else 1


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tmsite.settings")
    sys.exit(main())
