"""Helpers for the transport tests: raw POSTs and the 2026-07-28 request envelope."""

from __future__ import annotations

import http.client
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

STATELESS = "2026-07-28"
MODERN_META: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": STATELESS,
    "io.modelcontextprotocol/clientInfo": {"name": "transport-tests", "version": "1.0.0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


@dataclass
class Reply:
    status: int
    headers: httpx.Headers
    content: bytes

    def json(self) -> Any:
        return json.loads(self.content)


def post(
    client: httpx.Client,
    url: str,
    body: Any = None,
    *,
    raw: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    content_type: str | None = "application/json",
) -> Reply:
    """POST one body: ``raw`` bytes as they are, else ``body`` as compact JSON."""
    sent: dict[str, str] = {}
    if content_type is not None:
        sent["Content-Type"] = content_type
    sent["Accept"] = "application/json, text/event-stream"
    sent.update(headers or {})
    data = raw if raw is not None else json.dumps(body).encode()
    response = client.post(url, content=data, headers=sent)
    return Reply(response.status_code, response.headers, response.content)


def modern_headers(method: str, name: str | None = None) -> dict[str, str]:
    headers = {"MCP-Protocol-Version": STATELESS, "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    return headers


def modern_request(method: str, rid: int | str = 1, **params: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": method,
        "params": {**params, "_meta": MODERN_META},
    }


def post_verbatim(url: str, body: Any, headers: Mapping[str, str]) -> Reply:
    """POST with header values sent exactly as given (httpx refuses surrounding whitespace)."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    try:
        data = json.dumps(body).encode()
        connection.putrequest("POST", parts.path)
        sent = {"Content-Type": "application/json", "Content-Length": str(len(data)), **headers}
        for name, value in sent.items():
            connection.putheader(name, value)
        connection.endheaders(data)
        response = connection.getresponse()
        return Reply(response.status, httpx.Headers(response.getheaders()), response.read())
    finally:
        connection.close()
