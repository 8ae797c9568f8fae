"""Listen requests and the events of their streams, read over real loopback HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx

from tests.transport.transport_helpers import MODERN_META, STATELESS

SUB_ID = "io.modelcontextprotocol/subscriptionId"


def listen_body(rid: Any = "s-1", **notifications: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "subscriptions/listen",
        "params": {"notifications": notifications, "_meta": MODERN_META},
    }


def listen_headers(**more: str) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": STATELESS,
        "Mcp-Method": "subscriptions/listen",
        **more,
    }


class Events:
    """The events of an open SSE answer, one at a time: ``("message", json)`` or a comment."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._lines: Iterator[str] = response.iter_lines()

    def next(self) -> tuple[str, Any]:
        data: list[str] = []
        for line in self._lines:
            if line.startswith(":"):
                if not data:
                    return "comment", line[1:].strip()
                continue
            if not line:
                if data:
                    return "message", json.loads("\n".join(data))
                continue
            name, _, value = line.partition(":")
            if name == "data":
                data.append(value.removeprefix(" "))
        raise EOFError("the stream ended")

    def message(self) -> Any:
        """The next message, past any keep-alive comments."""
        while True:
            kind, value = self.next()
            if kind == "message":
                return value

    def rest(self) -> list[tuple[str, Any]]:
        """Every event until the stream ends."""
        out: list[tuple[str, Any]] = []
        while True:
            try:
                out.append(self.next())
            except EOFError:
                return out
