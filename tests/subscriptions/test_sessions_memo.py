"""The per-process memo of 2025-11-25 sessions checked: a session found live is trusted for
``TM_SESSION_MEMO`` seconds without the database, so a request carrying it costs no query and
may be answered in the event loop; one ended here is refused at once."""

from __future__ import annotations

import json
import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tmsite.mcp import endpoint
from tmsite.serve import app
from tmsite.subscriptions import sessions

pytestmark = [pytest.mark.spec("SUB2")]

PING = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()


def _asked(token: str | None) -> endpoint.Asked:
    """A ping as the ASGI server hands it to the endpoint, its body parsed once."""
    more = {"mcp-session-id": token} if token is not None else {}
    headers = {
        "host": "testserver",
        "content-type": "application/json",
        "content-length": str(len(PING)),
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
        **more,
    }
    asked = endpoint.Asked(  # as the ASGI server hands it over
        "POST", headers, PING, peer="127.0.0.1", server="testserver:80", delivers=True
    )
    app._parsed(asked)
    return asked


def _served(token: str | None) -> endpoint.Answered:
    return endpoint.serve(_asked(token))


def _ended_lookups(queries: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in queries.captured_queries if "tm_subscriptions_sessionend" in q["sql"]]


def test_a_session_checked_live_costs_no_query_within_the_window(
    db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TM_SESSION_MEMO", "0.5")
    token = sessions.issue()
    with CaptureQueriesContext(connection) as first:
        answered = _served(token)
    assert answered.status == 200 and b'"result":{}' in answered.body.replace(b" ", b"")
    assert len(_ended_lookups(first)) == 1
    with CaptureQueriesContext(connection) as again:
        answered = _served(token)
    assert answered.status == 200
    assert again.captured_queries == []  # the memo's: not one query for the whole ping
    time.sleep(0.6)  # past the window: looked up again
    with CaptureQueriesContext(connection) as later:
        assert sessions.valid(token) is not None
    assert len(_ended_lookups(later)) == 1


def test_a_session_ended_here_is_refused_at_once_without_a_query(db: None) -> None:
    token = sessions.issue()
    session = sessions.valid(token)
    assert session is not None and sessions.known_live(token)
    sessions.end(session)
    assert not sessions.known_live(token)
    with CaptureQueriesContext(connection) as queries:
        refused = _served(token)
    assert refused.status == 404
    assert json.loads(refused.body)["error"]["code"] == -32600
    assert _ended_lookups(queries) == []


def test_the_event_loop_takes_a_session_request_once_the_memo_says_live(db: None) -> None:
    token = sessions.issue()
    assert _served(None).status == 200  # its answer prepared
    assert app.answered_in_loop(_asked(None)) is not None
    assert app.answered_in_loop(_asked(token)) is None  # not checked yet: the thread
    assert sessions.valid(token) is not None
    assert app.answered_in_loop(_asked(token)) is not None
    forged = token[:-1] + ("A" if token[-1] != "A" else "B")
    assert app.answered_in_loop(_asked(forged)) is None
