"""Under a WSGI server (Django's live server, as gunicorn) there is no stream to hold: a listen
is refused saying where streams are served, and nothing advertises what is not delivered."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.subscriptions.helpers import listen_body, listen_headers
from tests.transport.transport_helpers import modern_headers, modern_request
from tmsite.subscriptions import listen

pytestmark = [pytest.mark.spec("SUB1"), pytest.mark.django_db(transaction=True)]


def test_a_listen_is_refused_clearly_and_nothing_is_advertised(live_server: Any) -> None:
    url = f"{live_server.url}/api/mcp"
    with httpx.Client(timeout=30) as client:
        refused = client.post(url, json=listen_body("w-1"), headers=listen_headers())
        discover = client.post(
            url,
            json=modern_request("server/discover", 2),
            headers={**listen_headers(), **modern_headers("server/discover")},
        ).json()["result"]
    assert refused.status_code == 404  # -32601 in 2026-07-28, as any method not offered
    assert refused.headers["content-type"] == "application/json"
    assert refused.json()["id"] == "w-1"
    assert refused.json()["error"] == {"code": -32601, "message": listen.NOT_HERE}
    assert discover["capabilities"]["tools"] == {"listChanged": False}
    assert discover["capabilities"]["resources"] == {"subscribe": False, "listChanged": False}
    assert discover["capabilities"]["prompts"] == {"listChanged": False}
    assert listen.SLOTS.status()["streams"] == 0
