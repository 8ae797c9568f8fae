"""No worker outlives its launcher: when ``python -m tmsite.serve`` itself is killed (SIGKILL,
which it cannot pass on), its worker stops by itself — as on an ordinary stop, writing the
request-log rows it held — instead of serving the port on, unwatched."""

from __future__ import annotations

import signal
import sqlite3
import time
from pathlib import Path

import httpx
import pytest

from tests.oplog.servers import migrate, server_env, serving

pytestmark = [pytest.mark.spec("OP5", "OP2"), pytest.mark.slow]


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for a parent to reap it has stopped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_a_killed_launchers_worker_stops_and_writes_its_rows(tmp_path: Path) -> None:
    env = server_env(tmp_path / "var", TM_LOG_FLUSH_ROWS="100000", TM_LOG_FLUSH_SECONDS="3600")
    migrate(env)
    with serving(env, workers=1, log=tmp_path / "serve.log", threads=2) as machine:
        [worker] = machine.workers()
        with httpx.Client(timeout=10) as client:
            for rid in range(12):
                reply = client.post(
                    f"{machine.url}/api/mcp", json={"jsonrpc": "2.0", "id": rid, "method": "ping"}
                )
                assert reply.json() == {"jsonrpc": "2.0", "id": rid, "result": {}}
        machine.process.send_signal(signal.SIGKILL)
        machine.process.wait(timeout=10)
        deadline = time.monotonic() + 15
        while _alive(worker):
            assert time.monotonic() < deadline, "the worker went on without its launcher"
            time.sleep(0.1)
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{machine.url}/api/v1/health", timeout=2)
    with sqlite3.connect(tmp_path / "var" / "tmsite.sqlite3") as db:
        rows = db.execute("SELECT method, outcome FROM tm_oplog_requestlog").fetchall()
    assert rows == [("ping", "ok")] * 12
