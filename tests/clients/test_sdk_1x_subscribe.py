"""2025-11-25 subscriptions as the 2025-era official SDK clients make them: the Python SDK 1.x
``ClientSession.subscribe_resource`` (its message handler fed by the session's GET stream) and
the TypeScript SDK 1.x ``client.subscribeResource`` (a ``ResourceUpdatedNotificationSchema``
handler), each a real subprocess, against the box served by ``tmsite.serve.app`` on loopback
over a checkout of the test's own, and over stdio against ``manage.py mcp_stdio`` serving that
checkout (the process is the session there: no session id, no GET stream).

The client subscribes to one file; the test edits another file (never told: it is not
subscribed to), then the subscribed one, again until the client is told; every notification the
client receives is ``notifications/resources/updated`` with the subscribed URI. The client then
unsubscribes.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.clients import sdk_clients
from tests.clients.sdk_clients import HOST
from tmsite.mcp.protocol import LATEST_INITIALIZE_VERSION
from tmsite.streams import sessionstream

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.spec("SUB2"), pytest.mark.slow]

FS = f"tm://{HOST}/fs"
TRANSPORTS = ["http", "stdio"]


def told_after_edits(running: sdk_clients.Running, box: Path) -> dict[str, Any]:
    """Edits the unsubscribed file, then the subscribed one, again until the client is told of
    a change (the watch is set up meanwhile): the first line the client prints."""
    deadline = time.monotonic() + 30
    attempt = 0
    while time.monotonic() < deadline:
        (box / "docs" / "guide" / "b.md").write_text(f"# b, changed {attempt}\n")
        (box / "docs" / "a.md").write_text(f"# a, changed {attempt}\n")
        attempt += 1
        line = running.poll_line(0.5)
        if line is not None:
            return line
    raise AssertionError("the client was told of nothing within 30 s")


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("client", sdk_clients.CLIENTS)
def test_the_client_is_told_of_the_file_it_subscribed_to(
    client: str, transport: str, mcp_endpoint: str, box: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a session whose stream ended is watched for the replay window, reading the database:
    # a short one ends that within the test (the TypeScript client sends no DELETE)
    monkeypatch.setenv("TM_SESSION_REPLAY", "0.5")
    uri = f"{FS}/docs/a.md"
    config = {
        "scenario": "subscribe",
        **sdk_clients.where(transport, mcp_endpoint, box),
        "uri": uri,
    }
    with sdk_clients.started(client, config) as running:
        subscribed = running.line()
        assert subscribed["event"] == "subscribed", subscribed
        assert subscribed["protocolVersion"] == LATEST_INITIALIZE_VERSION
        assert subscribed["capabilities"]["resources"]["subscribe"] is True
        # over HTTP, the session's id (the SDKs open the GET stream with it); stdio has none
        assert subscribed["session"] is (transport == "http")
        told = told_after_edits(running, box)
        assert told == {
            "event": "notification",
            "method": "notifications/resources/updated",
            "params": {"uri": uri},
        }
        line = running.line()
        while line["event"] == "notification":  # a later edit of the same file, told too
            assert line["params"] == {"uri": uri}
            line = running.line()
        assert line == {"event": "unsubscribed"}
    deadline = time.monotonic() + 10
    while sessionstream.watched():
        assert time.monotonic() < deadline, "the ended session is still watched"
        time.sleep(0.05)
