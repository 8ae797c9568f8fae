"""The explorer page names the MCP endpoint to listen on only when its own origin may call it:
a browser sends that origin with the listen's POST, and the endpoint refuses (403) any other
than loopback and ``TM_ALLOWED_ORIGINS``. Without the endpoint's address the page asks nothing."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

pytestmark = [pytest.mark.django_db, pytest.mark.spec("SUB3")]

MCP = re.compile(r'data-mcp="([^"]*)"')


def _named(client: Client, host: str, secure: bool = False) -> str:
    page = client.get("/explore?uri=tm%3A%2F%2Ftinymachines%2F", HTTP_HOST=host, secure=secure)
    assert page.status_code == 200
    found = MCP.findall(page.content.decode())
    assert len(found) == 1
    return found[0]


def test_a_loopback_page_names_the_endpoint(client: Client, settings: Any) -> None:
    settings.TM_HOST = "tinymachines"
    assert _named(client, "127.0.0.1:8000") == "/api/mcp"
    assert _named(client, "localhost") == "/api/mcp"


def test_a_site_origin_names_it_only_when_allowed(client: Client, settings: Any) -> None:
    settings.TM_HOST = "tinymachines"
    settings.TM_ALLOWED_ORIGINS = []
    assert _named(client, "tinymachines.ai", secure=True) == ""
    settings.TM_ALLOWED_ORIGINS = ["http://tinymachines.ai"]
    assert _named(client, "tinymachines.ai", secure=True) == "", "the scheme is the origin's"
    settings.TM_ALLOWED_ORIGINS = ["https://tinymachines.ai"]
    assert _named(client, "tinymachines.ai", secure=True) == "/api/mcp"
    # and the endpoint answers that origin's POST (it would refuse the page's listen otherwise)
    answer = client.post(
        "/api/mcp",
        data='{"jsonrpc":"2.0","id":1,"method":"ping"}',
        content_type="application/json",
        HTTP_HOST="tinymachines.ai",
        HTTP_ORIGIN="https://tinymachines.ai",
        HTTP_ACCEPT="application/json, text/event-stream",
        secure=True,
    )
    assert answer.status_code == 200, answer.content
