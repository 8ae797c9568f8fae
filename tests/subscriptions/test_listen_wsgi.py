"""Under a WSGI server (Django's live server, as gunicorn) there is no stream to hold: a listen
is refused saying where streams are served, and nothing advertises what is not delivered."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.subscriptions.helpers import listen_body, listen_headers
from tests.transport.transport_helpers import modern_headers, modern_request
from tmsite.mcp.protocol import (
    STATELESS_VERSION,
    CallContext,
    RpcError,
    StreamOffer,
    StreamResult,
)
from tmsite.streams import listen

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


def test_a_listen_is_held_only_where_its_context_offers_a_stream() -> None:
    """What a listen may be answered with is in the context it is handed, not around it."""
    asked = {"notifications": {"toolsListChanged": True}}
    with pytest.raises(RpcError) as refused:
        listen.listen(asked, CallContext(version=STATELESS_VERSION))
    assert (refused.value.code, refused.value.message) == (-32601, listen.NOT_HERE)
    with pytest.raises(RpcError) as plain:
        listen.listen(
            asked,
            CallContext(version=STATELESS_VERSION, stream=StreamOffer("p-1", "application/json")),
        )
    assert (plain.value.code, plain.value.status) == (-32600, 406)
    plan = listen.listen(asked, CallContext(version=STATELESS_VERSION, stream=StreamOffer("p-1")))
    try:
        assert isinstance(plan, StreamResult)
        assert plan.rid == "p-1" and plan.honoured == {"toolsListChanged": True}
        assert listen.SLOTS.status()["streams"] == 1
    finally:
        plan.slot.free()
    assert listen.SLOTS.status()["streams"] == 0
