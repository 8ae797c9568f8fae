"""Under a WSGI server (Django's live server, as gunicorn) there are no sessions: initialize
issues none, subscribe is refused saying where streams are served, GET stays 405."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.subscriptions.sessions_helpers import rpc, stream_headers
from tmsite.streams import subscribe
from tmsite.subscriptions import sessions

pytestmark = [pytest.mark.spec("SUB2"), pytest.mark.django_db(transaction=True)]


def test_no_session_is_issued_and_subscribe_is_refused(live_server: Any) -> None:
    url = f"{live_server.url}/api/mcp"
    signed = sessions.issue()  # signed by this box: still nothing a WSGI server keeps
    with httpx.Client(timeout=30) as client:
        init = rpc(client, url, "initialize", 0, protocolVersion="2025-11-25", capabilities={})
        refused = rpc(client, url, "resources/subscribe", 1, uri="tm://tinymachines/fs/docs/")
        with_one = rpc(client, url, "resources/unsubscribe", 2, session=signed, uri="tm://x/")
        got = client.get(url, headers=stream_headers(signed))
        ended = client.delete(url, headers={"Mcp-Session-Id": signed})
    assert init.status_code == 200 and "mcp-session-id" not in init.headers
    assert init.json()["result"]["capabilities"]["resources"] == {
        "subscribe": False,
        "listChanged": False,
    }
    assert refused.status_code == 200
    assert refused.json() == {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {
            "code": -32601,
            "message": subscribe.NOT_HERE.format(method="resources/subscribe"),
        },
    }
    assert "python -m tmsite.serve" in refused.json()["error"]["message"]
    assert with_one.json()["error"] == {
        "code": -32601,
        "message": subscribe.NOT_HERE.format(method="resources/unsubscribe"),
    }
    assert (got.status_code, got.headers["allow"]) == (405, "POST")
    assert ended.status_code == 405
