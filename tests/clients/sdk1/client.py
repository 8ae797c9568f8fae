"""A client of the official Python SDK 1.x (``mcp`` 1.x, ``ClientSession``), run by the tests.

Run with the Python of ``.sdk-clients/sdk1`` (``make sdk-clients``), not the project's:
it imports the SDK 1.x only. Its one argument is a JSON object:

* ``url`` (Streamable HTTP, ``streamable_http_client``) or ``stdio``: ``{command, args, cwd,
  env}`` (``stdio_client``): where the server is;
* ``scenario``: ``basics`` (the handshake, ``tools/list``, ``resources/read`` of ``read``,
  ``resources/templates/list``, the refused read of ``refused``) or ``subscribe``
  (``resources/subscribe`` of ``uri``, then the notifications the session's message handler
  receives until a ``notifications/resources/updated``, then ``resources/unsubscribe``).

It prints one JSON object a line on stdout, flushed, and the tests assert on them. A line
``{"event": "subscribed", ...}`` tells the test it may change the subscribed file (``session``:
whether the HTTP transport holds a session id, without which the SDK opens no GET stream).
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp import ClientSession, McpError, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from pydantic import AnyUrl

WAIT = 60.0


def emit(**line: Any) -> None:
    print(json.dumps(line, sort_keys=True), flush=True)


#: The HTTP transport's session id, once the server gave one (``initialize``'s answer).
SESSION: dict[str, Any] = {}


@asynccontextmanager
async def connected(config: dict[str, Any], handler: Any = None) -> AsyncIterator[ClientSession]:
    if "url" in config:
        async with (
            streamable_http_client(config["url"]) as (read, write, session_id),
            ClientSession(read, write, message_handler=handler) as session,
        ):
            SESSION["id"] = session_id
            yield session
    else:
        server = StdioServerParameters(**config["stdio"])
        async with (
            stdio_client(server) as (read, write),
            ClientSession(read, write, message_handler=handler) as session,
        ):
            yield session


def handshake(init: types.InitializeResult) -> dict[str, Any]:
    return {
        "protocolVersion": init.protocolVersion,
        "serverInfo": init.serverInfo.model_dump(mode="json", exclude_none=True),
        "capabilities": init.capabilities.model_dump(mode="json", exclude_none=True),
    }


def refusal(error: McpError) -> dict[str, Any]:
    return {"code": error.error.code, "message": error.error.message, "data": error.error.data}


async def basics(config: dict[str, Any]) -> None:
    async with connected(config) as session:
        init = await session.initialize()
        tools = await session.list_tools()
        read = await session.read_resource(AnyUrl(config["read"]))
        templates = await session.list_resource_templates()
        try:
            await session.read_resource(AnyUrl(config["refused"]))
            refused: dict[str, Any] | None = None
        except McpError as error:
            refused = refusal(error)
        emit(
            event="basics",
            **handshake(init),
            tools=[tool.name for tool in tools.tools],
            read=[content.model_dump(mode="json", exclude_none=True) for content in read.contents],
            templates=[t.uriTemplate for t in templates.resourceTemplates],
            refused=refused,
        )


async def subscribe(config: dict[str, Any]) -> None:
    updated = anyio.Event()

    async def handler(message: Any) -> None:
        if isinstance(message, types.ServerNotification):
            notification = message.root
            emit(
                event="notification",
                method=notification.method,
                params=notification.model_dump(mode="json", exclude_none=True).get("params"),
            )
            if isinstance(notification, types.ResourceUpdatedNotification):
                updated.set()
        elif isinstance(message, Exception):
            emit(event="error", error=repr(message))

    async with connected(config, handler) as session:
        init = await session.initialize()
        try:
            await session.subscribe_resource(AnyUrl(config["uri"]))
        except McpError as error:
            emit(event="refused", **handshake(init), refused=refusal(error))
            return
        session_id = SESSION["id"]() if "id" in SESSION else None
        emit(event="subscribed", **handshake(init), session=session_id is not None)
        with anyio.move_on_after(WAIT) as waited:
            await updated.wait()
        if waited.cancelled_caught:
            emit(event="timeout", seconds=WAIT)
            return
        await session.unsubscribe_resource(AnyUrl(config["uri"]))
        emit(event="unsubscribed")


async def search(config: dict[str, Any]) -> None:
    """tools/list, then tools/call of search: the session checks structuredContent against the
    tool's outputSchema (it raises when they disagree)."""
    async with connected(config) as session:
        init = await session.initialize()
        await session.list_tools()
        result = await session.call_tool("search", {"query": config["query"]})
        emit(
            event="search",
            **handshake(init),
            isError=result.isError,
            structured=result.structuredContent,
        )


def main() -> None:
    config = json.loads(sys.argv[1])
    scenario = {"basics": basics, "subscribe": subscribe, "search": search}[config["scenario"]]
    anyio.run(scenario, config)


if __name__ == "__main__":
    main()
