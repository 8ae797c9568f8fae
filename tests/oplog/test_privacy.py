"""The log holds no personal data: a full client session over a live server, then every
column of every row written (and every JSON line logged) is searched for the caller.

The rate limit runs in the store the default (``auto``) picks on one machine, the locked file,
in a file of the test's own.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tmsite.callers import buckets
from tmsite.oplog import recorder
from tmsite.oplog.logs import JsonFormatter
from tmsite.oplog.models import RequestLog

pytestmark = pytest.mark.spec("OP2")

AGENT = "Zephyrine-Crawler/7.31 (privacy-probe; +mailto:probe@example.org)"
FORWARDED = "198.51.100.77"
TOKEN = "tm-secret-token-5f2e9a"
COOKIE = "sessionid=c00kie-4a8b1d"
SECRETS = [
    "127.0.0.1",
    FORWARDED,
    "Zephyrine",
    "privacy-probe",
    "probe@example.org",
    TOKEN,
    "c00kie-4a8b1d",
    "session-id-77",
    "probe-client",
]


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []
        self.setFormatter(JsonFormatter())

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture
def json_lines() -> Iterator[list[str]]:
    handler = _Lines()
    logger = logging.getLogger("tmsite.requests")
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    yield handler.lines
    logger.removeHandler(handler)
    logger.setLevel(level)


def _session(base: str, client: httpx.Client) -> int:
    """A client's whole session over both surfaces; returns how many requests it sent."""
    url = f"{base}/api/mcp"
    messages: list[dict[str, Any]] = [
        {
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "probe-client", "version": "1"},
            },
        },
        {"method": "notifications/initialized"},
        {"id": 2, "method": "tools/list"},
        {"id": 3, "method": "resources/list"},
        {"id": 4, "method": "resources/templates/list"},
        {"id": 5, "method": "resources/read", "params": {"uri": "tm://tinymachines/"}},
        {"id": 6, "method": "resources/read", "params": {"uri": "tm://tinymachines/fs/docs/"}},
        {
            "id": 7,
            "method": "resources/read",
            "params": {"uri": "tm://tinymachines/fs/docs/index.md?lines=1-3"},
        },
        {"id": 8, "method": "resources/read", "params": {"uri": "tm://tinymachines/fs/nope"}},
        {"id": 9, "method": "tools/call", "params": {"name": "licensing", "arguments": {}}},
        {
            "id": 10,
            "method": "tools/call",
            "params": {"name": "resolve", "arguments": {"uri": "tm://tinymachines/fs/docs/"}},
        },
        {
            "id": 11,
            "method": "completion/complete",
            "params": {
                "ref": {"type": "ref/resource", "uri": "tm://tinymachines/fs/{+path}"},
                "argument": {"name": "path", "value": "do"},
            },
        },
        {"id": 12, "method": "ping"},
    ]
    headers = {"MCP-Protocol-Version": "2025-06-18", "Mcp-Session-Id": "session-id-77"}
    for message in messages:
        reply = client.post(url, json={"jsonrpc": "2.0", **message}, headers=headers)
        assert reply.status_code in (200, 202)
    for path, params in [
        ("templates", {}),
        ("licensing", {}),
        ("resolve", {"uri": "tm://tinymachines/fs/docs/index.md"}),
        ("resources", {}),
    ]:
        assert client.get(f"{base}/api/v1/{path}", params=params).status_code == 200
    return len(messages) + 4


@pytest.fixture
def own_bucket_file(settings: Any, tmp_path: Path) -> Iterator[Path]:
    """The store ``auto`` picks without Redis, the file, in this test's directory."""
    settings.TM_RATE_STORE = "file"
    settings.TM_RATE_FILE = tmp_path / "ratelimit.buckets"
    buckets._stores.clear()
    yield settings.TM_RATE_FILE
    buckets._stores.clear()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("forwarded", [False, True], ids=["direct", "through-a-proxy"])
def test_no_row_and_no_line_names_the_caller(
    live_server: Any, json_lines: list[str], own_bucket_file: Path, forwarded: bool
) -> None:
    headers = {
        "User-Agent": AGENT,
        "Authorization": f"Bearer {TOKEN}",
        "Cookie": COOKIE,
    }
    if forwarded:
        headers["X-Forwarded-For"] = FORWARDED
    with httpx.Client(headers=headers, timeout=30) as client:
        sent = _session(live_server.url, client)
    # a proxied caller is limited, so its bucket is in the file; a direct one from loopback is not
    assert own_bucket_file.exists() is forwarded
    if forwarded:
        assert FORWARDED.encode() not in own_bucket_file.read_bytes()
    recorder.flush()
    rows = list(RequestLog.objects.order_by("id").values())
    assert len(rows) == sent  # one row per request
    assert {row["surface"] for row in rows} == {"mcp-http", "rest"}
    for row in rows:
        for column, value in row.items():
            text = str(value)
            for secret in SECRETS:
                assert secret not in text, (column, text)
    assert len(json_lines) == sent
    for line in json_lines:
        for secret in SECRETS:
            assert secret not in line
