"""The demo server (official SDK) over Streamable HTTP, as a real uvicorn process on loopback.

``sdk_http_peer.py [--stateless] [--json] [--token-env NAME]``: binds 127.0.0.1 on a free port,
prints ``PORT <n>`` on stdout, and serves ``/mcp`` until killed. ``--stateless`` runs without
sessions; otherwise the server issues ``Mcp-Session-Id``. ``--json`` answers with
``application/json`` instead of event streams. ``--token-env NAME`` demands
``Authorization: Bearer <value of NAME>`` on every request (401 otherwise, with a
``WWW-Authenticate`` challenge; 403 for a wrong token).
"""

from __future__ import annotations

import os
import socket
import sys
from typing import Any

import uvicorn

from tmsite.demo.mcp_server.server import build_server


class RequireToken:
    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope["headers"]).get(b"authorization")
            if given != self.expected:
                status = 401 if given is None else 403
                await send(
                    {
                        "type": "http.response.start",
                        "status": status,
                        "headers": [
                            (b"content-type", b"text/plain"),
                            (b"www-authenticate", b'Bearer realm="elements"'),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": b"token required\n"})
                return
        await self.app(scope, receive, send)


def main() -> None:
    server = build_server()
    app: Any = server.streamable_http_app(
        stateless_http="--stateless" in sys.argv,
        json_response="--json" in sys.argv,
    )
    if "--token-env" in sys.argv:
        app = RequireToken(app, os.environ[sys.argv[sys.argv.index("--token-env") + 1]])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
