"""``/metrics`` across granian's real workers: every request made is counted once, summed.

One ``python -m tmsite.serve`` with two workers on a migrated temporary database; each request
goes on a connection of its own, so granian hands them to both workers (the test checks both
wrote their files). The counts read back are exactly those of the requests made, by method,
tool, outcome and status; nothing a caller sent shows in any sample; open streams are counted
while they are open; and only loopback and ``TM_METRICS_ALLOWED`` may read. A worker killed and
replaced keeps its counts and loses its open streams.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.oplog.servers import Machine, migrate, server_env, serving
from tests.subscriptions.helpers import Events, listen_body, listen_headers
from tests.subscriptions.sessions_helpers import initialize, stream_headers

pytestmark = [pytest.mark.spec("OBS1"), pytest.mark.slow]

HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-11-25",
}
README = "tm://tinymachines/fs/docs/README.md"
#: What a recognisable caller sends: none of it may be in any sample.
CALLER = {"address": "198.51.100.77", "agent": "agent-zq7xk", "token": "tok-zq7xk-secret"}


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Machine]:
    where = tmp_path_factory.mktemp("metrics") / "var"
    env = server_env(
        where,
        TM_METRICS_ALLOWED="192.0.2.0/24",
        TM_RATE_BURST="3",
        TM_RATE_REFILL="0.001",
        TM_LISTEN_IDLE="600",
        TM_LISTEN_KEEPALIVE="600",
    )
    migrate(env)
    with serving(env, 2, where / "serve.log", threads=4) as running:
        yield running


def post(url: str, body: Any, **headers: str) -> httpx.Response:
    """One request on a connection of its own (the next may go to the other worker)."""
    with httpx.Client(timeout=30) as client:
        return client.post(
            f"{url}/api/mcp", content=json.dumps(body), headers={**HEADERS, **headers}
        )


def scrape(url: str, **headers: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of ``/metrics``, by name and labels."""
    answer = httpx.get(f"{url}/metrics", headers=headers, timeout=30)
    assert answer.status_code == 200, answer.text
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def count(samples: dict[Any, float], name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def operations(
    samples: dict[Any, float], method: str, tool: str = "", outcome: str = "ok"
) -> float:
    return count(
        samples,
        "mcp_server_operation_duration_seconds_count",
        mcp_method_name=method,
        gen_ai_tool_name=tool,
        outcome=outcome,
    )


def test_requests_are_counted_exactly_across_workers(machine: Machine) -> None:
    before = scrape(machine.url)
    for rid in range(30):
        assert post(machine.url, {"jsonrpc": "2.0", "id": rid, "method": "ping"}).status_code == 200
    for rid in range(8):
        params = {"uri": README}
        body = {"jsonrpc": "2.0", "id": rid, "method": "resources/read", "params": params}
        assert "result" in post(machine.url, body).json()
    for rid in range(5):
        params = {"name": "licensing", "arguments": {}}
        body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}
        assert post(machine.url, body).status_code == 200
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "zq7xk-tool"}}
    post(machine.url, body)
    for _ in range(4):
        with httpx.Client(timeout=30) as client:
            assert client.get(f"{machine.url}/api/v1/licensing").status_code == 200
    after = scrape(machine.url)

    def more(name: str, **labels: str) -> float:
        return count(after, name, **labels) - count(before, name, **labels)

    duration = "mcp_server_operation_duration_seconds_count"
    assert more(duration, mcp_method_name="ping", gen_ai_tool_name="", outcome="ok") == 30
    assert more(duration, mcp_method_name="resources/read", gen_ai_tool_name="", outcome="ok") == 8
    licensing = {"mcp_method_name": "tools/call", "gen_ai_tool_name": "licensing"}
    assert more(duration, **licensing, outcome="ok") == 5
    unknown = {"mcp_method_name": "tools/call", "gen_ai_tool_name": "other"}
    assert more(duration, **unknown, outcome="rpc-32602") == 1, [
        k for k in after if k[0] == duration and ("gen_ai_tool_name", "other") in k[1]
    ]
    assert more("tmsite_http_requests_total", surface="mcp-http", status="200") == 44
    assert more("tmsite_http_requests_total", surface="rest", status="200") == 4
    counted = {pid.name.rpartition("_")[2] for pid in _files(machine, "histogram_*.db")}
    assert {str(pid) + ".db" for pid in machine.workers()} <= counted, "one worker did all"


def _files(machine: Machine, pattern: str) -> list[Path]:
    directory = Path(_env_of(machine)["PROMETHEUS_MULTIPROC_DIR"])
    return sorted(directory.glob(pattern))


def _env_of(machine: Machine) -> dict[str, str]:
    pid = machine.workers()[0]
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().partition("=")[::2] for item in raw if b"=" in item)


def test_rate_limited_refusals_are_counted(machine: Machine) -> None:
    before = scrape(machine.url)
    forwarded = {"X-Forwarded-For": "203.0.113.44"}  # a caller behind the trusted proxy
    statuses = [
        post(machine.url, {"jsonrpc": "2.0", "id": rid, "method": "ping"}, **forwarded)
        .json()
        .get("error", {})
        .get("data", {})
        .get("reason", "ok")
        for rid in range(6)
    ]
    assert statuses == ["ok"] * 3 + ["rate-limited"] * 3
    after = scrape(machine.url)
    limited = ("tmsite_rate_limited_total", (("surface", "mcp-http"),))
    assert after.get(limited, 0) - before.get(limited, 0) == 3
    assert (
        operations(after, "ping", outcome="rate-limited")
        - operations(before, "ping", outcome="rate-limited")
        == 3
    )


def test_nothing_about_a_caller_is_in_any_sample(machine: Machine) -> None:
    with httpx.Client(timeout=30) as client:
        session, _ = initialize(client, f"{machine.url}/api/mcp")
    sent = {
        "X-Forwarded-For": CALLER["address"],
        "User-Agent": CALLER["agent"],
        "Authorization": f"Bearer {CALLER['token']}",
        "Mcp-Session-Id": session,
    }
    uri = f"tm://tinymachines/fs/docs/{CALLER['agent']}.md"
    body = {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": uri}}
    post(machine.url, body, **sent)
    post(machine.url, {"jsonrpc": "2.0", "id": 2, "method": CALLER["agent"]}, **sent)
    with httpx.Client(timeout=30) as client:
        client.get(f"{machine.url}/api/v1/resolve", params={"uri": uri}, headers=sent)
    text = httpx.get(f"{machine.url}/metrics", timeout=30).text
    for secret in (*CALLER.values(), session, "zq7xk"):
        assert secret not in text
    assert "198.51.100" not in text and "127.0.0.1" not in text


class _Held(threading.Thread):
    """A stream (listen, or a session's GET) held open on a thread until ``done`` is set."""

    def __init__(self, url: str, kind: str) -> None:
        super().__init__(daemon=True)
        self.url, self.kind = url, kind
        self.opened, self.done = threading.Event(), threading.Event()

    def run(self) -> None:
        with httpx.Client(timeout=httpx.Timeout(10, read=60)) as client:
            if self.kind == "listen":
                request = client.build_request(
                    "POST",
                    f"{self.url}/api/mcp",
                    json=listen_body("held", resourcesListChanged=True),
                    headers=listen_headers(),
                )
            else:
                session, _ = initialize(client, f"{self.url}/api/mcp")
                request = client.build_request(
                    "GET", f"{self.url}/api/mcp", headers=stream_headers(session)
                )
            response = client.send(request, stream=True)
            try:
                assert response.status_code == 200
                events = Events(response)  # kept: its reader dropped would close the stream
                if self.kind == "listen":
                    events.message()
                self.opened.set()
                self.done.wait(30)
            finally:
                response.close()


def test_open_streams_are_counted_while_open(machine: Machine) -> None:
    held = [_Held(machine.url, "listen"), _Held(machine.url, "listen"), _Held(machine.url, "s")]
    for stream in held:
        stream.start()
    for stream in held:
        assert stream.opened.wait(20)
    during = scrape(machine.url)
    assert count(during, "tmsite_listen_streams") == 2, [k for k in during if "stream" in k[0]]
    assert count(during, "tmsite_session_streams") == 1
    for stream in held:
        stream.done.set()
        stream.join(10)
    deadline = 50
    while deadline:
        after = scrape(machine.url)
        if count(after, "tmsite_listen_streams") == count(after, "tmsite_session_streams") == 0:
            break
        deadline -= 1
        threading.Event().wait(0.1)
    assert deadline, after


def test_only_loopback_and_the_allowed_networks_read_metrics(machine: Machine) -> None:
    assert httpx.get(f"{machine.url}/metrics", timeout=30).status_code == 200
    allowed = {"X-Forwarded-For": "192.0.2.9"}
    assert httpx.get(f"{machine.url}/metrics", headers=allowed, timeout=30).status_code == 200
    for refused in ("203.0.113.5", "2001:db8::5", "unknown"):
        answer = httpx.get(
            f"{machine.url}/metrics", headers={"X-Forwarded-For": refused}, timeout=30
        )
        assert answer.status_code == 404, refused
        assert "mcp_server" not in answer.text


def test_a_replaced_worker_s_counts_stay_and_its_streams_go(tmp_path: Path) -> None:
    """granian replaces a killed worker: what it counted stays, its open streams no longer do."""
    env = server_env(tmp_path / "var", TM_LISTEN_IDLE="600", TM_LISTEN_KEEPALIVE="600")
    migrate(env)
    with serving(env, 1, tmp_path / "serve.log", threads=4) as running:
        [first] = running.workers()
        for rid in range(5):
            post(running.url, {"jsonrpc": "2.0", "id": rid, "method": "ping"})
        held = _Held(running.url, "listen")
        held.start()
        assert held.opened.wait(20)
        assert count(scrape(running.url), "tmsite_listen_streams") == 1
        os.kill(first, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            now = running.workers()
            if now and now != [first]:
                try:
                    after = scrape(running.url)
                    break
                except (httpx.HTTPError, AssertionError):
                    pass
            time.sleep(0.2)
        else:
            raise AssertionError("no worker replaced the killed one")
        held.done.set()
    assert operations(after, "ping") == 5
    assert count(after, "tmsite_listen_streams") == 0
