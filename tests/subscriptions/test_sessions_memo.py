"""The per-process memo of 2025-11-25 sessions checked: a session found live is trusted for
``TM_SESSION_MEMO`` seconds without the database, so a request carrying it costs no query and
may be answered in the event loop; one ended here is refused at once."""

from __future__ import annotations

import io
import json
import time
from typing import Any

import pytest
from django.db import connection
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext

from tmsite.serve import app
from tmsite.subscriptions import sessions

pytestmark = [pytest.mark.spec("SUB2")]

PING = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()


def _environ(token: str | None) -> dict[str, Any]:
    more = {"HTTP_MCP_SESSION_ID": token} if token is not None else {}
    request = RequestFactory().post(
        "/api/mcp",
        data=PING,
        content_type="application/json",
        HTTP_ACCEPT="application/json, text/event-stream",
        HTTP_MCP_PROTOCOL_VERSION="2025-11-25",
        **more,
    )
    environ = dict(request.environ)
    environ["wsgi.input"] = io.BytesIO(PING)  # as the ASGI server gives it: seekable
    return environ


def _ended_lookups(queries: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in queries.captured_queries if "tm_subscriptions_sessionend" in q["sql"]]


def test_a_session_checked_live_costs_no_query_within_the_window(
    db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TM_SESSION_MEMO", "0.5")
    token = sessions.issue()
    with CaptureQueriesContext(connection) as first:
        answered = app._run_endpoint(_environ(token))
    assert answered.status_code == 200 and b'"result":{}' in answered.content.replace(b" ", b"")
    assert len(_ended_lookups(first)) == 1
    with CaptureQueriesContext(connection) as again:
        answered = app._run_endpoint(_environ(token))
    assert answered.status_code == 200
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
        refused = app._run_endpoint(_environ(token))
    assert refused.status_code == 404
    assert json.loads(refused.content)["error"]["code"] == -32600
    assert _ended_lookups(queries) == []


def test_the_event_loop_takes_a_session_request_once_the_memo_says_live(db: None) -> None:
    token = sessions.issue()
    assert app._run_endpoint(_environ(None)).status_code == 200  # its answer prepared
    assert app.answerable_in_loop(_environ(None), PING)
    assert not app.answerable_in_loop(_environ(token), PING)  # not checked yet: the thread
    assert sessions.valid(token) is not None
    assert app.answerable_in_loop(_environ(token), PING)
    forged = token[:-1] + ("A" if token[-1] != "A" else "B")
    assert not app.answerable_in_loop(_environ(forged), PING)
