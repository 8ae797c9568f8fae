"""2025-11-25 sessions over real loopback HTTP: initialize, subscribe, the GET stream's events."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx

from tests.waiting import wait_until

VERSION = "2025-11-25"


def headers(session: str | None = None, **more: str) -> dict[str, str]:
    sent = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": VERSION,
        **more,
    }
    if session is not None:
        sent["Mcp-Session-Id"] = session
    return sent


def rpc(
    client: httpx.Client,
    url: str,
    method: str,
    rid: Any = 1,
    session: str | None = None,
    **params: Any,
) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    return client.post(url, json=body, headers=headers(session))


def initialize(client: httpx.Client, url: str) -> tuple[str, dict[str, Any]]:
    """A new session's id and the initialize result."""
    reply = client.post(
        url,
        json={
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": VERSION,
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        headers={k: v for k, v in headers().items() if k != "MCP-Protocol-Version"},
    )
    assert reply.status_code == 200, reply.text
    return reply.headers["mcp-session-id"], reply.json()["result"]


def stream_headers(session: str, last: str | None = None) -> dict[str, str]:
    sent = {
        "Accept": "text/event-stream",
        "Mcp-Session-Id": session,
        "MCP-Protocol-Version": VERSION,
    }
    if last is not None:
        sent["Last-Event-ID"] = last
    return sent


class SseEvents:
    """The events of a GET stream: ``(id, message)``, ``(None, comment)`` for a comment, or
    ``(id, "")`` for an event with empty data (the priming event)."""

    def __init__(self, response: httpx.Response) -> None:
        self._lines: Iterator[str] = response.iter_lines()

    def next(self) -> tuple[str | None, Any]:
        import json

        data: list[str] = []
        event_id: str | None = None
        for line in self._lines:
            if line.startswith(":"):
                if not data:
                    return None, line[1:].strip()
                continue
            if not line:
                if data == [""]:
                    return event_id, ""
                if data:
                    return event_id, json.loads("\n".join(data))
                continue
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "data":
                data.append(value)
            elif name == "id":
                event_id = value
        raise EOFError("the stream ended")

    def primed(self) -> str:
        """The id of the stream's first event, which must be the priming one (empty data)."""
        event_id, value = self.next()
        assert value == "" and event_id is not None, (event_id, value)
        return event_id

    def message(self) -> tuple[str | None, Any]:
        while True:
            event_id, value = self.next()
            if isinstance(value, dict):
                return event_id, value

    def rest(self) -> list[tuple[str | None, Any]]:
        out: list[tuple[str | None, Any]] = []
        while True:
            try:
                out.append(self.next())
            except EOFError:
                return out


def until(predicate: Any, seconds: float = 10.0) -> None:
    wait_until(predicate, seconds)


def updated(uri: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}}
