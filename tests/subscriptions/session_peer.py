"""A 2025-era MCP server of the official Python SDK 1.x, stateful Streamable HTTP, on loopback.

Run with the SDK 1.x venv's Python (``make sdk-clients``): ``session_peer.py DIR [PORT]``.
Binds 127.0.0.1 on ``PORT`` (default: a free one), prints ``PORT <n>`` and serves ``/mcp``
until killed, with sessions (``Mcp-Session-Id``) and an event store (events numbered, so a GET
stream can be resumed with ``Last-Event-ID``). It declares ``resources`` (``subscribe``,
``listChanged``) and ``tools`` (``listChanged``); ``resources/list`` answers ``note://a`` and
``note://b`` (read as ``the note <uri>``); ``tools/list`` the tools named in
``DIR/tools.json`` (default: ``first``).

Every HTTP request is appended to ``DIR/requests.jsonl`` as it arrives (``verb``, ``session``,
``accept``, ``version``, ``last_event_id``) and once answered (``status`` too), and every
``resources/subscribe`` / ``unsubscribe`` as ``{"verb": "subscribe" | "unsubscribe", "uri",
"session"}``. Every 50 ms it reads ``DIR/send.jsonl`` (then removes it): ``{"updated": URI}``
sends ``notifications/resources/updated`` to each session subscribed to ``URI``;
``{"tools_changed": true}`` sends ``notifications/tools/list_changed`` to every session;
``{"cut": true}`` closes every session's GET stream (its events stay in the store).
"""

from __future__ import annotations

import json
import socket
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from mcp import types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.session import ServerSession
from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from pydantic import AnyUrl

DIR = Path(sys.argv[1])
PORT = int(sys.argv[2]) if len(sys.argv) > 2 else 0
#: Each session the server met: what it subscribed to, and its GET stream's closer.
SESSIONS: dict[ServerSession, dict[str, Any]] = {}


def note(entry: dict[str, Any]) -> None:
    with (DIR / "requests.jsonl").open("a") as out:
        out.write(json.dumps({**entry, "at": time.time()}) + "\n")


class Events(EventStore):
    """Every event kept, in order; a replay sends those after the given id of its stream."""

    def __init__(self) -> None:
        self.events: list[tuple[str, StreamId, types.JSONRPCMessage | None]] = []

    async def store_event(
        self, stream_id: StreamId, message: types.JSONRPCMessage | None
    ) -> EventId:
        event_id = str(len(self.events) + 1)
        self.events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        found = [i for i, (eid, _, _) in enumerate(self.events) if eid == last_event_id]
        if not found:
            return None
        stream = self.events[found[0]][1]
        for eid, sid, message in self.events[found[0] + 1 :]:
            if sid == stream and message is not None:
                await send_callback(EventMessage(message, eid))
        return stream


class Peer(Server[Any, Any]):
    def get_capabilities(
        self, notification_options: NotificationOptions, experimental: dict[str, dict[str, Any]]
    ) -> types.ServerCapabilities:
        caps = super().get_capabilities(
            NotificationOptions(resources_changed=True, tools_changed=True), experimental
        )
        assert caps.resources is not None
        caps.resources.subscribe = True
        return caps

    async def _handle_message(
        self, message: Any, session: ServerSession, *args: Any, **kwargs: Any
    ) -> None:
        SESSIONS.setdefault(session, {"uris": set(), "cut": None})  # met at its first message
        await super()._handle_message(message, session, *args, **kwargs)


server = Peer("session-peer")


def known() -> dict[str, Any]:
    ctx = server.request_context
    entry = SESSIONS.setdefault(ctx.session, {"uris": set(), "cut": None})
    if ctx.close_standalone_sse_stream is not None:
        entry["cut"] = ctx.close_standalone_sse_stream
    return entry


def session_id() -> str | None:
    request = server.request_context.request
    return None if request is None else request.headers.get("mcp-session-id")


@server.list_resources()
async def list_resources() -> list[types.Resource]:
    known()
    return [types.Resource(uri=AnyUrl(f"note://{n}"), name=n) for n in ("a", "b")]


@server.read_resource()
async def read_resource(uri: AnyUrl) -> str:
    known()
    return f"the note {uri}"


@server.list_tools()
async def list_tools() -> list[types.Tool]:
    known()
    path = DIR / "tools.json"
    names = json.loads(path.read_text()) if path.exists() else ["first"]
    return [types.Tool(name=n, inputSchema={"type": "object"}) for n in names]


@server.subscribe_resource()
async def subscribe(uri: AnyUrl) -> None:
    known()["uris"].add(str(uri))
    note({"verb": "subscribe", "uri": str(uri), "session": session_id()})


@server.unsubscribe_resource()
async def unsubscribe(uri: AnyUrl) -> None:
    known()["uris"].discard(str(uri))
    note({"verb": "unsubscribe", "uri": str(uri), "session": session_id()})


async def sender() -> None:
    path = DIR / "send.jsonl"
    while True:
        await anyio.sleep(0.05)
        if not path.exists():
            continue
        lines = path.read_text().splitlines()
        path.unlink()
        for line in lines:
            order = json.loads(line)
            for session, entry in list(SESSIONS.items()):
                try:
                    if "updated" in order and order["updated"] in entry["uris"]:
                        await session.send_resource_updated(AnyUrl(order["updated"]))
                    elif order.get("tools_changed"):
                        await session.send_tool_list_changed()
                    elif order.get("cut") and entry["cut"] is not None:
                        await entry["cut"]()
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    SESSIONS.pop(session, None)  # a session that ended


manager = StreamableHTTPSessionManager(app=server, event_store=Events(), stateless=False)


async def app(scope: Any, receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        message = await receive()
        async with manager.run(), anyio.create_task_group() as tasks:
            tasks.start_soon(sender)
            await send({"type": "lifespan.startup.complete"})
            while message["type"] != "lifespan.shutdown":
                message = await receive()
            tasks.cancel_scope.cancel()
        await send({"type": "lifespan.shutdown.complete"})
        return
    headers = {k.decode(): v.decode() for k, v in scope["headers"]}
    entry = {
        "verb": scope["method"],
        "session": headers.get("mcp-session-id"),
        "accept": headers.get("accept"),
        "version": headers.get("mcp-protocol-version"),
        "last_event_id": headers.get("last-event-id"),
    }
    note(entry)

    async def answered(message: Any) -> None:
        if message["type"] == "http.response.start":
            note({**entry, "status": message["status"]})
        await send(message)

    await manager.handle_request(scope, receive, answered)


def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", PORT))
    sock.listen(128)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
