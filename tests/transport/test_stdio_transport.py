"""``python manage.py mcp_stdio`` as a real subprocess: framing, eras, refusals, exit status."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests import wire_schema
from tests.transport.transport_helpers import MODERN_META, STATELESS

pytestmark = pytest.mark.spec("T11", "T2", "T5", "T7", "T10")

ROOT = Path(__file__).resolve().parents[2]


def run(
    lines: list[bytes | str | dict[str, Any]], timeout: float = 60
) -> subprocess.CompletedProcess[bytes]:
    """Feed the lines to a fresh server, close stdin, and wait for it to exit.

    Its stdout is checked against the protocol schema (:func:`tests.wire_schema.check_stdio`).
    """
    sent = [
        line
        if isinstance(line, bytes)
        else (line if isinstance(line, str) else json.dumps(line)).encode()
        for line in lines
    ]
    done = subprocess.run(
        [sys.executable, "manage.py", "mcp_stdio"],
        input=b"".join(line + b"\n" for line in sent),
        capture_output=True,
        cwd=ROOT,
        timeout=timeout,
        check=False,
    )
    wire_schema.check_stdio(sent, done.stdout)
    return done


def replies(done: subprocess.CompletedProcess[bytes]) -> list[Any]:
    """stdout parsed line by line: every line must be one JSON-RPC message."""
    out = done.stdout.decode()
    assert out == "" or out.endswith("\n")
    parsed = [json.loads(line) for line in out.splitlines()]
    for message in parsed:
        items = message if isinstance(message, list) else [message]
        assert all(m["jsonrpc"] == "2.0" for m in items)
    return parsed


def initialize(version: str = "2025-11-25", rid: int = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "stdio-tests", "version": "1"},
        },
    }


def test_framing_of_seed_000() -> None:
    done = run(
        [
            "",
            "   ",
            initialize("2025-06-18"),
            "{not json",
            b"\xff\xfe",
            '{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":NaN}}',
            '{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":"\\ud800"}}',
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 99, "result": {}},
            {"jsonrpc": "2.0", "id": 4, "method": "ping"},
        ]
    )
    assert done.returncode == 0, done.stderr.decode()
    answers = replies(done)
    assert [a["id"] for a in answers] == [1, 4]
    assert answers[0]["result"]["protocolVersion"] == "2025-06-18"
    assert answers[1]["result"] == {}
    assert b"dropped an unparsable line" in done.stderr


def test_exit_status_is_0_at_end_of_input_with_nothing_sent() -> None:
    done = run([])
    assert (done.returncode, done.stdout) == (0, b"")


def test_invalid_messages_get_an_id_less_32600() -> None:
    done = run(
        [
            "7",
            {"jsonrpc": "1.0", "id": 5, "method": "ping"},
            {"jsonrpc": "2.0", "id": None, "method": "ping"},
            {"jsonrpc": "2.0", "id": 1.5, "method": "ping"},
        ]
    )
    assert done.returncode == 0
    assert replies(done) == [
        {
            "jsonrpc": "2.0",
            "error": {"code": -32600, "message": "A JSON-RPC message must be a JSON object."},
        },
        {
            "jsonrpc": "2.0",
            "id": 5,
            "error": {"code": -32600, "message": 'The "jsonrpc" member must be "2.0".'},
        },
        {
            "jsonrpc": "2.0",
            "error": {"code": -32600, "message": 'The "id" member must be a string or an integer.'},
        },
        {
            "jsonrpc": "2.0",
            "error": {"code": -32600, "message": 'The "id" member must be a string or an integer.'},
        },
    ]


def test_unknown_methods_are_32601() -> None:
    done = run(
        [{"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "info"}}]
    )
    (answer,) = replies(done)
    assert answer["id"] == 1 and answer["error"]["code"] == -32601


def test_batches_follow_the_negotiated_version() -> None:
    batch = [{"jsonrpc": "2.0", "id": "a", "method": "ping"}, {"jsonrpc": "2.0", "method": "x"}]
    done = run([initialize("2025-03-26"), batch])
    first, second = replies(done)
    assert first["result"]["protocolVersion"] == "2025-03-26"
    assert second == [{"jsonrpc": "2.0", "id": "a", "result": {}}]

    done = run([initialize("2025-11-25"), batch])
    _, refused = replies(done)
    assert refused == {
        "jsonrpc": "2.0",
        "error": {
            "code": -32600,
            "message": "JSON-RPC batches are not accepted under protocol 2025-11-25.",
        },
    }


def test_a_request_with_the_modern_envelope_is_served_statelessly() -> None:
    discover = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "server/discover",
        "params": {"_meta": MODERN_META},
    }
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"_meta": MODERN_META}}
    done = run([discover, ping, initialize(rid=3), {"jsonrpc": "2.0", "id": 4, "method": "ping"}])
    found, no_ping, init, legacy_ping = replies(done)
    assert found["result"]["resultType"] == "complete"
    assert found["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "tinymachines"
    assert no_ping["error"]["code"] == -32601
    assert init["result"]["protocolVersion"] == "2025-11-25"
    assert legacy_ping == {"jsonrpc": "2.0", "id": 4, "result": {}}


def test_the_modern_envelope_is_checked_without_headers() -> None:
    no_caps = {"io.modelcontextprotocol/protocolVersion": STATELESS}
    other = {**MODERN_META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}
    done = run(
        [
            {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": no_caps}},
            {"jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": {"_meta": other}},
        ]
    )
    missing, unsupported = replies(done)
    assert missing == {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {
            "code": -32602,
            "message": "params._meta is missing io.modelcontextprotocol/clientCapabilities.",
        },
    }
    assert unsupported["id"] == 2
    assert unsupported["error"]["code"] == -32022
    assert unsupported["error"]["data"] == {
        "supported": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"],
        "requested": "2099-01-01",
    }


def test_stray_prints_and_logs_stay_off_stdout(tmp_path: Path) -> None:
    """A handler that prints: the print lands on stderr, stdout stays pure JSON-RPC."""
    script = tmp_path / "printing_server.py"
    script.write_text(
        "import os, sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'tmsite.settings')\n"
        "import django\n"
        "django.setup()\n"
        "from tmsite.mcp import lifecycle, methods\n"
        "def noisy(params, ctx):\n"
        "    print('stray output from a handler')\n"
        "    return lifecycle.ping(params, ctx)\n"
        "methods.METHODS['ping'] = methods.Method(noisy, frozenset({'2025'}))\n"
        "from tmsite.mcp.stdio import serve\n"
        "sys.exit(serve(sys.stdin.buffer, sys.stdout.buffer))\n"
    )
    ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    done = subprocess.run(
        [sys.executable, str(script)],
        input=ping + b"\n",
        capture_output=True,
        timeout=60,
        check=False,
    )
    wire_schema.check_stdio([ping], done.stdout)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b'{"jsonrpc":"2.0","id":1,"result":{}}\n'
    assert b"stray output from a handler" in done.stderr
