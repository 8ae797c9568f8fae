"""Both eras' subscriptions over stdio: a real ``manage.py mcp_stdio`` over a temporary checkout,
edited during each test — the official Python SDK 2.x ``Client.listen``, and raw JSON lines for
the 2026-07-28 listen (acknowledgement, cancel, two at once, graceful end, refusals) and the
2025-11-25 ``resources/subscribe``/``unsubscribe``."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.subscriptions import ResourceUpdated

from tests.subscriptions.stdio_helpers import (
    FS,
    HOST,
    ROOT,
    SUB_ID,
    Stdio,
    initialize,
    listen_request,
    make_checkout,
    request,
    server_env,
    told_after_edits,
)
from tests.transport.transport_helpers import MODERN_META

pytestmark = [pytest.mark.spec("SUB1", "SUB2"), pytest.mark.slow]

NOT_HERE_HOST = f"this server answers for tm://{HOST}/ only"


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    return make_checkout(tmp_path)


@pytest.fixture
def start(checkout: Path) -> Iterator[Any]:
    started: list[Stdio] = []

    def go(**env: str) -> Stdio:
        server = Stdio(server_env(checkout, **env))
        started.append(server)
        return server

    yield go
    for server in started:
        server.kill()


def _updated(rid: Any, uri: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "notifications/resources/updated",
        "params": {"uri": uri, "_meta": {SUB_ID: rid}},
    }


def test_the_sdk_client_listens_over_stdio(checkout: Path) -> None:
    wanted = [f"{FS}/docs/a.md", f"{FS}/docs/guide/"]
    server = StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "mcp_stdio"],
        cwd=ROOT,
        env=server_env(checkout),
    )

    async def scenario() -> dict[str, Any]:
        async with (
            Client(server) as client,
            client.listen(resource_subscriptions=wanted) as sub,
        ):
            honoured = sub.honored.model_dump(by_alias=True, exclude_none=True)
            first: Any = None
            for attempt in range(60):  # until the watch has had its first look
                (checkout / "docs" / "a.md").write_text(f"# a, changed {attempt}\n")
                with anyio.move_on_after(0.5):
                    first = await sub.__anext__()
                if first is not None:
                    break
            (checkout / "docs" / ".env").write_text("SECRET=2\n")  # denied: never told
            (checkout / "docs" / "guide" / "new.md").write_text("# new\n")
            later: list[Any] = []  # an edit may be told in two (truncated, then written)
            with anyio.fail_after(20):
                while not later or later[-1] == first:
                    later.append(await sub.__anext__())
            second = later[-1]
            read = await client.read_resource(f"{FS}/docs/guide/new.md")  # answered meanwhile
            return {
                "version": client.protocol_version,
                "caps": client.server_capabilities,
                "id": sub.subscription_id,
                "honoured": honoured,
                "events": [first, second],
                "read": read,
            }

    seen = anyio.run(scenario)
    assert seen["version"] == "2026-07-28"
    assert seen["caps"].resources is not None and seen["caps"].resources.subscribe is True
    assert isinstance(seen["id"], str) and seen["id"].startswith("listen-")
    assert seen["honoured"] == {"resourceSubscriptions": wanted}
    assert seen["events"] == [
        ResourceUpdated(f"{FS}/docs/a.md"),
        ResourceUpdated(f"{FS}/docs/guide/new.md"),
    ]
    assert seen["read"].contents[0].text == "# new\n"


def test_two_listens_each_told_with_its_id_and_a_cancel_ends_one(
    start: Any, checkout: Path
) -> None:
    server = start()
    server.send(
        listen_request(
            "a", resourceSubscriptions=[f"{FS}/docs/a.md", "tm://elsewhere/fs/x", "not a uri"]
        )
    )
    ack_a = server.next()
    server.send(listen_request(7, resourceSubscriptions=[f"{FS}/data/"]))
    ack_7 = server.next()
    assert ack_a == {
        "jsonrpc": "2.0",
        "method": "notifications/subscriptions/acknowledged",
        "params": {
            "notifications": {"resourceSubscriptions": [f"{FS}/docs/a.md"]},
            "_meta": {
                SUB_ID: "a",
                "tinymachines.ai/refused": [
                    {"uri": "tm://elsewhere/fs/x", "reason": "not-found", "message": NOT_HERE_HOST},
                    {
                        "uri": "not a uri",
                        "reason": "bad-uri",
                        "message": "a URI holds no spaces or control characters; "
                        "percent-encode them",
                    },
                ],
            },
        },
    }
    assert ack_7 == {
        "jsonrpc": "2.0",
        "method": "notifications/subscriptions/acknowledged",
        "params": {
            "notifications": {"resourceSubscriptions": [f"{FS}/data/"]},
            "_meta": {SUB_ID: 7},
        },
    }
    # a request is answered while both are open
    assert (
        server.ask(request(1, "resources/read", uri=f"{FS}/docs/a.md", _meta=MODERN_META))[
            "result"
        ]["contents"][0]["text"]
        == "# a\n"
    )
    seen = told_after_edits(server, checkout / "docs" / "a.md", lambda line: "method" in line)
    assert seen == [_updated("a", f"{FS}/docs/a.md")]
    (checkout / "data" / "d.csv").write_text("x\n")
    later = [server.next()]
    while later[-1]["params"]["_meta"] == {SUB_ID: "a"}:  # an edit may be told in two
        assert later[-1] == _updated("a", f"{FS}/docs/a.md")
        later.append(server.next())
    assert later[-1] == _updated(7, f"{FS}/data/d.csv")

    cancel = {"requestId": "a", "reason": "done"}
    server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
    (checkout / "docs" / "a.md").write_text("# a, after the cancel\n")
    told = server.quiet(1.5)  # the cancelled listen is told nothing, and is not answered
    (checkout / "data" / "e.csv").write_text("y\n")
    told += server.quiet(3)
    assert told == [_updated(7, f"{FS}/data/e.csv")]

    status, took = server.close_stdin()  # listen 7 ends with stdin, without a word
    assert status == 0
    assert took < 10  # the fs watch is stopped first (up to a second), then the process ends
    assert server.quiet(0.1) == []


def test_the_server_ends_an_idle_listen_gracefully(start: Any) -> None:
    server = start(TM_LISTEN_IDLE="1")
    server.send(listen_request("i", toolsListChanged=True))
    assert server.next()["params"] == {
        "notifications": {"toolsListChanged": True},
        "_meta": {SUB_ID: "i"},
    }
    assert server.next(timeout=10) == {
        "jsonrpc": "2.0",
        "id": "i",
        "result": {"resultType": "complete", "_meta": {SUB_ID: "i"}},
    }
    status, _ = server.close_stdin()
    assert status == 0

    # the listen's row is written at its end, as over HTTP: its whole duration and bytes
    def rows() -> list[dict[str, Any]]:
        lines = server.stderr.splitlines()
        found = [json.loads(line) for line in lines if '"event":"request"' in line]
        return [r for r in found if r["method"] == "subscriptions/listen"]

    deadline = time.monotonic() + 10  # the line is read from stderr by a thread of the test
    while not rows() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert rows(), server.stderr
    (row,) = rows()
    assert (row["surface"], row["kind"], row["outcome"]) == ("mcp-stdio", "listen", "idle")
    assert row["duration_ms"] >= 1000
    assert row["bytes"] > 200  # the acknowledgement's line and the end's


def test_refusals_of_a_listen_name_what_is_wrong(start: Any) -> None:
    server = start(TM_LISTEN_STREAMS_PER_CALLER="1", TM_LISTEN_URIS_PER_CALLER="2")
    server.send(listen_request("one", resourceSubscriptions=[f"{FS}/docs/"]))
    assert server.next()["params"]["_meta"] == {SUB_ID: "one"}
    again = server.ask(listen_request("one"))
    assert again == {
        "jsonrpc": "2.0",
        "id": "one",
        "error": {
            "code": -32600,
            "message": 'A listen with the id "one" is open; each listen needs its own id.',
        },
    }
    second = server.ask(listen_request("two", toolsListChanged=True))
    assert second == {
        "jsonrpc": "2.0",
        "id": "two",
        "error": {
            "code": -32000,
            "message": "This caller has 1 listen streams open, the most one may hold; close one "
            "to open another.",
            "data": {"reason": "too-many-streams", "cap": "streams-per-caller", "limit": 1},
        },
    }
    malformed = server.ask(
        {**listen_request("m"), "params": {"notifications": [], "_meta": MODERN_META}}
    )
    assert malformed["error"] == {
        "code": -32602,
        "message": "params.notifications must be an object.",
    }
    # the process is one caller: its 2025-11-25 subscriptions count among its listens' URIs
    assert server.ask(request(2, "resources/subscribe", uri=f"{FS}/data/"))["result"] == {}
    over = server.ask(request(3, "resources/subscribe", uri=f"{FS}/docs/a.md"))
    assert over["error"] == {
        "code": -32000,
        "message": "This listen would take this caller past 2 subscribed URIs across its "
        "streams; subscribe to a collection instead of its children, or close a stream.",
        "data": {"reason": "too-many-subscriptions", "cap": "uris-per-caller", "limit": 2},
    }
    status, _ = server.close_stdin()
    assert status == 0


def test_2025_subscribe_tells_of_a_change_until_unsubscribed(start: Any, checkout: Path) -> None:
    server = start()
    init = server.ask(initialize())["result"]
    assert init["capabilities"]["resources"] == {"subscribe": True, "listChanged": False}
    assert init["capabilities"]["tools"] == {"listChanged": False}
    assert server.ask(request(1, "resources/subscribe", uri=f"{FS}/docs/a.md")) == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {},
    }
    assert server.ask(request(2, "resources/subscribe", uri=f"{FS}/data/"))["result"] == {}
    elsewhere = server.ask(request(3, "resources/subscribe", uri="tm://elsewhere/fs/x"))
    assert elsewhere["error"] == {
        "code": -32002,
        "message": NOT_HERE_HOST,
        "data": {
            "reason": "not-found",
            "uri": "tm://elsewhere/fs/x",
            "nearest": [f"tm://{HOST}/"],
        },
    }
    no_mount = server.ask(request(4, "resources/subscribe", uri=f"tm://{HOST}/nope/x"))
    assert no_mount["error"]["code"] == -32002
    assert no_mount["error"]["data"]["reason"] == "not-found"
    assert no_mount["error"]["message"] == "no mount 'nope' is served here"
    bad = server.ask(request(5, "resources/subscribe", uri="not a uri"))
    assert bad["error"]["code"] == -32602
    assert bad["error"]["data"]["reason"] == "bad-uri"
    missing = server.ask(request(6, "resources/subscribe"))
    assert missing["error"] == {
        "code": -32602,
        "message": "resources/subscribe needs params.uri, a string.",
    }

    seen = told_after_edits(server, checkout / "docs" / "a.md", lambda line: "method" in line)
    assert seen == [
        {
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"uri": f"{FS}/docs/a.md"},
        }
    ]
    assert server.ask(request(7, "resources/unsubscribe", uri=f"{FS}/docs/a.md")) == {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {},
    }
    (checkout / "docs" / "a.md").write_text("# a, unsubscribed\n")
    told = server.quiet(1.5)
    (checkout / "data" / "new.csv").write_text("z\n")  # still subscribed: told, with the child
    told += server.quiet(3)
    assert told == [
        {
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"uri": f"{FS}/data/new.csv"},
        }
    ]
    status, took = server.close_stdin()
    assert status == 0
    assert took < 10  # the fs watch is stopped first (up to a second), then the process ends


def test_discover_over_stdio_advertises_what_it_delivers(start: Any) -> None:
    server = start()
    found = server.ask(
        {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": MODERN_META}}
    )
    assert found["result"]["capabilities"]["resources"] == {"subscribe": True, "listChanged": True}
    # the tools' and prompts' lists are tables in the code: never told, never advertised
    assert found["result"]["capabilities"]["tools"] == {"listChanged": False}
    assert found["result"]["capabilities"]["prompts"] == {"listChanged": False}
    status, _ = server.close_stdin()
    assert status == 0
