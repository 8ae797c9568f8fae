"""The tmsite-vs-SDK benchmark runs end to end with tiny counts, without errors or leftovers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spec("T1")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "mcp_vs_sdk.py"


@pytest.mark.slow
def test_benchmark_runs_and_every_answer_is_a_result() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--seconds",
            "0.5",
            "--warmup",
            "0.2",
            "--connections",
            "2",
            "--workers",
            "1",
            "--rounds",
            "1",
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["errors"] == 0
    assert report["sdk_uvicorn"] == "httptools + uvloop"
    assert report["sdk_tools"] == "same"
    listed = next(row for row in report["scenarios"] if row["scenario"] == "tools/list")
    # the SDK lists tmsite's own tools: the same answer, byte for byte in length
    assert listed["sdk"]["response_bytes"] == listed["tmsite"]["response_bytes"] > 10_000
    assert {(row["workers"], row["connections"]) for row in report["scenarios"]} == {(1, 2)}
    assert [row["scenario"] for row in report["scenarios"]] == [
        "ping",
        "tools/list",
        "resources/read",
        "nearest",  # a miss in a directory of 5,000 names: every answer a refusal
    ]
    for row in report["scenarios"]:
        for server in ("tmsite", "sdk"):
            measured = row[server]
            assert measured["requests"] > 0, (row["scenario"], server, measured)
            assert measured["errors"] == 0, (row["scenario"], server, measured)
            assert measured["p50_ms"] <= measured["p99_ms"]
        assert row["rps_ratio"] > 0
        if sys.platform.startswith("linux"):
            assert row["cpu_us_per_answer"]["tmsite"] > 0
            assert row["cpu_us_per_answer"]["sdk"] > 0


def test_loadgen_refuses_non_loopback_targets() -> None:
    sys.path.insert(0, str(ROOT))
    from bench import loadgen

    with pytest.raises(ValueError):
        loadgen.Target("http://example.com:80/api/mcp")
    with pytest.raises(ValueError):
        loadgen.Target("https://127.0.0.1:8443/api/mcp")


def test_check_answer_accepts_results_only() -> None:
    sys.path.insert(0, str(ROOT))
    from bench import loadgen

    loadgen.check_answer(200, b'{"jsonrpc":"2.0","id":3,"result":{}}', 3)
    bad = [
        (200, b'{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no"}}', 3),
        (200, b'{"jsonrpc":"2.0","id":4,"result":{}}', 3),
        (200, b"not json", 3),
        (400, b'{"jsonrpc":"2.0","id":3,"result":{}}', 3),
    ]
    for status, body, request_id in bad:
        with pytest.raises(loadgen.BadAnswer):
            loadgen.check_answer(status, body, request_id)


def test_check_answer_with_refusal_accepts_errors_only() -> None:
    sys.path.insert(0, str(ROOT))
    from bench import loadgen

    loadgen.check_answer(
        200, b'{"jsonrpc":"2.0","id":3,"error":{"code":-32002,"message":"no"}}', 3, refusal=True
    )
    bad = [
        (200, b'{"jsonrpc":"2.0","id":3,"result":{}}', 3),
        (200, b'{"jsonrpc":"2.0","id":4,"error":{"code":-32002,"message":"no"}}', 3),
        (200, b'{"jsonrpc":"2.0","id":3,"error":{"message":"no code"}}', 3),
        (500, b'{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"no"}}', 3),
    ]
    for status, body, request_id in bad:
        with pytest.raises(loadgen.BadAnswer):
            loadgen.check_answer(status, body, request_id, refusal=True)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_stream_capacity_counts_streams_held_per_serving_model() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "stream_capacity.py"), "--streams", "12",
         "--threads", "2"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    served: dict[str, int] = {}
    for line in done.stdout.splitlines()[1:]:
        name, _, rest = line.strip().partition("  ")
        served[name] = int(rest.split()[0])
    # A WSGI server holds as many streams as it has threads; an ASGI server holds them all.
    assert served == {
        "gunicorn gthread (WSGI)": 2,
        "granian (WSGI)": 2,
        "granian (ASGI)": 12,
        "uvicorn httptools + uvloop (ASGI)": 12,
    }, done.stdout


@pytest.mark.slow
def test_a_server_whose_port_was_taken_meanwhile_starts_again_on_another(
    tmp_path: Path,
) -> None:
    """The port chosen for a server is bound by someone else before the server binds it."""
    import socket

    sys.path.insert(0, str(ROOT))
    from bench import mcp_vs_sdk

    launch = mcp_vs_sdk.Launch(
        "sdk",
        lambda port: mcp_vs_sdk.uvicorn("bench.sdk_file_server:create_app", port, 1, factory=True),
        {
            **mcp_vs_sdk.base_env(),
            "BENCH_CHECKOUT": str(ROOT),
            "BENCH_FILE": "docs/README.md",
        },
        "/mcp",
    )
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        started: list[mcp_vs_sdk.Server] = []
        try:
            mcp_vs_sdk.launch_all([launch], tmp_path, started, first=[port])
            assert len(started) == 1
            assert started[0].url != launch.url(port)
            assert started[0].process.poll() is None
        finally:
            for server in started:
                server.stop()


def test_ports_chosen_together_are_all_different() -> None:
    sys.path.insert(0, str(ROOT))
    from bench import mcp_vs_sdk

    for _ in range(20):
        ports = mcp_vs_sdk.free_ports(2)
        assert len(set(ports)) == 2
        again = mcp_vs_sdk.free_ports(1, avoid=frozenset(ports))
        assert again[0] not in ports
