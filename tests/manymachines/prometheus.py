"""A real Prometheus server (Debian's ``prometheus`` package) scraping the test's machines.

It runs as a subprocess with a generated configuration: one job whose targets are the app
machines' own ports (as ``docs/operating.md`` says to point it: each machine answers for its
workers, nginx's address is not a target), a scrape every second, its storage in the test's
directory, its HTTP API on a free loopback port. What it scraped is read back through that API
(``/api/v1/query``), as an operator's dashboard would.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.oplog.servers import free_port, wait_for
from tests.services import missing

CONFIG = """\
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: tmsite
    metrics_path: /metrics
    static_configs:
      - targets: [{targets}]
"""


@dataclass
class Prometheus:
    """A running Prometheus: its base URL."""

    url: str

    def query(self, promql: str) -> list[dict[str, Any]]:
        """The instant vector ``promql`` evaluates to now (``/api/v1/query``'s ``result``)."""
        answer = httpx.get(f"{self.url}/api/v1/query", params={"query": promql}, timeout=10)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["status"] == "success", body
        assert body["data"]["resultType"] == "vector", body
        return list(body["data"]["result"])

    def value(self, promql: str) -> float | None:
        """The one value ``promql`` evaluates to, or ``None`` while it has none."""
        result = self.query(promql)
        if not result:
            return None
        assert len(result) == 1, result
        return float(result[0]["value"][1])

    def settle(self, promql: str, expected: float, deadline: float = 30.0) -> float | None:
        """``promql``'s value once it is ``expected`` (or the last one seen at the deadline)."""
        end = time.monotonic() + deadline
        seen = self.value(promql)
        while seen != expected and time.monotonic() < end:
            time.sleep(0.25)
            seen = self.value(promql)
        return seen


def binary() -> str:
    """Where ``prometheus`` is (``TM_PROMETHEUS`` wins); the test skips by name without it."""
    found = os.environ.get("TM_PROMETHEUS") or shutil.which("prometheus") or "/usr/bin/prometheus"
    if not Path(found).is_file():
        missing(f"Prometheus is not installed at {found}", "apt-get install prometheus")
    return found


@contextmanager
def prometheus(targets: list[str], work: Path) -> Iterator[Prometheus]:
    """Prometheus scraping ``targets`` (base URLs of app machines) until the block ends."""
    executable = binary()
    work.mkdir(parents=True, exist_ok=True)
    hosts = ", ".join(f'"{target.removeprefix("http://")}"' for target in targets)
    (work / "prometheus.yml").write_text(CONFIG.format(targets=hosts), encoding="utf-8")
    port = free_port()
    with (work / "prometheus.log").open("ab") as sink:
        process = subprocess.Popen(
            [
                executable,
                f"--config.file={work / 'prometheus.yml'}",
                f"--storage.tsdb.path={work / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            cwd=work,
            stdout=sink,
            stderr=sink,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_for(f"{url}/-/ready", deadline=60)
        except TimeoutError as exc:
            tail = (work / "prometheus.log").read_text(errors="replace")[-3000:]
            raise TimeoutError(f"{exc}; Prometheus's log ends:\n{tail}") from None
        yield Prometheus(url)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
