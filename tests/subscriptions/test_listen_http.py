"""``subscriptions/listen`` over Streamable HTTP, served by ``tmsite.serve.app`` (2026-07-28).

A real loopback server in this process; changes are published on the bus by the test, as a
change source publishes them (the fs watcher's own tests edit files).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import pytest
from django.conf import settings

from tests.subscriptions.helpers import (
    SUB_ID,
    Events,
    complete,
    listen_body,
    listen_headers,
    listening,
    nothing_held,
)
from tests.transport.transport_helpers import modern_headers, modern_request
from tests.waiting import wait_until
from tmsite.bus import changes
from tmsite.oplog import recorder
from tmsite.oplog.models import RequestLog
from tmsite.streams import listen, stream

pytestmark = [pytest.mark.spec("SUB1"), pytest.mark.slow]

H = f"tm://{settings.TM_HOST}"


def test_ack_then_only_what_was_asked_for_then_a_graceful_end(
    listen_url: str, http_client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TM_LISTEN_IDLE", "1.5")
    body = listen_body(
        "s-1",
        toolsListChanged=True,
        promptsListChanged=False,
        resourceSubscriptions=[
            f"{H}/fs/docs/a.md",
            f"{H}/fs/docs/sub/",
            "https://example.org/x",
            f"{H}/nosuchmount/x",
            "tm://elsewhere/fs/docs/a.md",
            f"{H}/fs/docs/a.md",
        ],
    )
    with http_client.stream("POST", listen_url, json=body, headers=listen_headers()) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream"
        assert response.headers["x-accel-buffering"] == "no"
        assert response.headers["cache-control"] == "no-store"
        events = Events(response)
        ack = events.message()
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert "id" not in ack
        assert ack["params"]["notifications"] == {
            "toolsListChanged": True,
            "resourceSubscriptions": [f"{H}/fs/docs/a.md", f"{H}/fs/docs/sub/"],
        }
        meta = ack["params"]["_meta"]
        assert meta[SUB_ID] == "s-1"
        assert [(r["uri"], r["reason"]) for r in meta["tinymachines.ai/refused"]] == [
            ("https://example.org/x", "bad-uri"),
            (f"{H}/nosuchmount/x", "not-found"),
            ("tm://elsewhere/fs/docs/a.md", "not-found"),
        ]
        wait_until(lambda: listening(f"{H}/fs/docs/sub/"))
        changes.publish_list_changed("prompts")  # not asked for: never sent
        changes.publish(f"{H}/fs/docs/other.md")  # nobody's: never sent
        changes.publish(f"{H}/fs/docs/a.md")
        changes.publish(f"{H}/fs/docs/sub/deeper/b.md")
        changes.publish_list_changed("tools")
        changes.publish_list_changed("resources")  # not asked for
        assert events.message() == {
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"uri": f"{H}/fs/docs/a.md", "_meta": {SUB_ID: "s-1"}},
        }
        assert events.message()["params"] == {
            "uri": f"{H}/fs/docs/sub/deeper/b.md",
            "_meta": {SUB_ID: "s-1"},
        }
        assert events.message() == {
            "jsonrpc": "2.0",
            "method": "notifications/tools/list_changed",
            "params": {"_meta": {SUB_ID: "s-1"}},
        }
        # nothing more comes: the idle stream is ended with the listen's own response
        rest = [event for event in events.rest() if event[0] == "message"]
        assert rest == [("message", complete("s-1"))]
    wait_until(lambda: listen.SLOTS.status()["streams"] == 0)
    assert not listening(f"{H}/fs/docs/sub/")


def test_keep_alive_comments_and_the_log_row_of_the_whole_stream(
    listen_url: str, http_client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TM_LISTEN_KEEPALIVE", "0.2")
    monkeypatch.setenv("TM_LISTEN_IDLE", "1.2")
    started = time.monotonic()
    with http_client.stream(
        "POST", listen_url, json=listen_body(7), headers=listen_headers()
    ) as response:
        events = Events(response)
        assert events.message()["params"]["_meta"][SUB_ID] == 7
        seen = events.rest()
    took = time.monotonic() - started
    comments = [value for kind, value in seen if kind == "comment"]
    assert len(comments) >= 4 and set(comments) == {"keep-alive"}
    assert seen[-1][1]["result"]["resultType"] == "complete"
    row = _row()
    assert row.kind == "listen" and row.outcome == "idle" and row.status == 200
    assert 1.1 <= row.duration_us / 1e6 <= took + 0.5
    assert row.bytes > 100
    names = {f.name for f in RequestLog._meta.get_fields()}
    assert not names & {"caller", "address", "ip", "who"}


def test_a_listen_is_held_whatever_its_id_reads(
    listen_url: str, http_client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stream is started from the listen's answer itself, never guessed from its bytes."""
    monkeypatch.setenv("TM_LISTEN_IDLE", "0.5")
    with http_client.stream(
        "POST", listen_url, json=listen_body("error"), headers=listen_headers()
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream"
        events = Events(response)
        ack = events.message()
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"]["_meta"][SUB_ID] == "error"
        assert listen.SLOTS.status()["streams"] == 1
        assert events.rest()[-1][1] == complete("error")
    wait_until(nothing_held)
    assert _row().outcome == "idle"


def test_a_client_that_goes_away_frees_its_slot(listen_url: str, http_client: httpx.Client) -> None:
    uri = f"{H}/fs/docs/gone.md"
    with http_client.stream(
        "POST",
        listen_url,
        json=listen_body(1, resourceSubscriptions=[uri]),
        headers=listen_headers(),
    ) as response:
        held = Events(response)  # kept: a generator closed by the collector closes the stream
        held.message()
        wait_until(lambda: listening(uri))
        assert listen.SLOTS.status()["streams"] == 1
    wait_until(nothing_held)
    assert not listening(uri)
    assert _row().outcome == "gone"


def test_caps_per_caller_are_refused_naming_the_cap(
    listen_url: str, http_client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TM_LISTEN_STREAMS_PER_CALLER", "2")
    monkeypatch.setenv("TM_LISTEN_URIS_PER_CALLER", "2")
    many = [f"{H}/fs/docs/{n}.md" for n in range(3)]
    with http_client.stream(
        "POST",
        listen_url,
        json=listen_body(3, resourceSubscriptions=many[:2]),
        headers=listen_headers(),
    ) as response:
        held = Events(response)  # kept: a generator closed by the collector closes the stream
        held.message()
        over = http_client.post(
            listen_url,
            json=listen_body(2, resourceSubscriptions=many[2:]),
            headers=listen_headers(),
        )
        assert over.status_code == 200
        error = over.json()["error"]
        assert error["code"] == -32000
        assert error["data"] == {
            "reason": "too-many-subscriptions",
            "cap": "uris-per-caller",
            "limit": 2,
        }
        assert "2 subscribed URIs" in error["message"]
        with http_client.stream(
            "POST", listen_url, json=listen_body(5), headers=listen_headers()
        ) as other:
            also = Events(other)
            also.message()
            third = http_client.post(listen_url, json=listen_body(4), headers=listen_headers())
            error = third.json()["error"]
            assert third.json()["id"] == 4
            assert error["data"] == {
                "reason": "too-many-streams",
                "cap": "streams-per-caller",
                "limit": 2,
            }
    wait_until(lambda: listen.SLOTS.status()["streams"] == 0)


def test_the_servers_cap_says_when_to_retry(
    listen_url: str, http_client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TM_LISTEN_STREAMS", "1")
    with http_client.stream(
        "POST", listen_url, json=listen_body(1), headers=listen_headers()
    ) as response:
        held = Events(response)  # kept: a generator closed by the collector closes the stream
        held.message()
        other = http_client.post(
            listen_url,
            json=listen_body(2),
            headers=listen_headers(**{"X-Forwarded-For": "192.0.2.7"}),
        )
        assert other.json()["error"]["data"] == {
            "reason": "too-many-streams",
            "cap": "streams",
            "limit": 1,
            "retryAfter": 30,
        }


def test_a_listen_costs_rate_limit_budget(
    listen_url: str, http_client: httpx.Client, settings: Any
) -> None:
    settings.TM_RATE_REFILL = 0.01  # no whole token comes back while a loaded machine listens
    caller = {"X-Forwarded-For": "192.0.2.9"}
    ping = http_client.post(
        listen_url,
        json=modern_request("tools/list", 1),
        headers={**listen_headers(), **modern_headers("tools/list"), **caller},
    )
    before = int(ping.headers["RateLimit"].split("r=")[1].split(";")[0])
    with http_client.stream(
        "POST", listen_url, json=listen_body(5), headers=listen_headers(**caller)
    ) as response:
        after = int(response.headers["RateLimit"].split("r=")[1].split(";")[0])
    assert before - after == 4  # the price of a listen


def test_a_stream_that_falls_behind_is_ended_gracefully(
    listen_url: str, http_client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # keep-alives hold the read open: a stream that is never ended behind ends idle instead
    monkeypatch.setenv("TM_LISTEN_IDLE", "5")
    uri = f"{H}/fs/docs/"
    body = listen_body("b", resourceSubscriptions=[uri])
    with http_client.stream("POST", listen_url, json=body, headers=listen_headers()) as response:
        events = Events(response)
        events.message()
        wait_until(lambda: listening(uri))

        def burst() -> None:  # in the server's loop: the stream cannot drain meanwhile
            for n in range(1_100):
                changes.publish(f"{uri}burst/{n}")

        for loop in _running_loops():
            loop.call_soon_threadsafe(burst)
        got = [value for kind, value in events.rest() if kind == "message"]
    assert got[-1] == complete("b")
    # the 1,024 it fell behind by are sent before the end; the 76 past them are not
    assert len(got) - 1 == 1_024
    assert got[0]["params"]["uri"] == f"{uri}burst/0"
    assert _row().outcome == "behind"


def test_refusals_before_the_stream(listen_url: str, http_client: httpx.Client) -> None:
    bad = http_client.post(
        listen_url, json=listen_body(1, toolsListChanged="yes"), headers=listen_headers()
    )
    assert bad.json()["error"]["code"] == -32602
    assert "toolsListChanged must be a boolean" in bad.json()["error"]["message"]
    plain = http_client.post(
        listen_url, json=listen_body(2), headers=listen_headers(Accept="application/json")
    )
    assert plain.status_code == 406
    assert plain.headers["content-type"].startswith("application/json")
    assert plain.json() == {
        "jsonrpc": "2.0",
        "id": 2,
        "error": {
            "code": -32600,
            "message": "subscriptions/listen answers with an event stream: Accept must list "
            "text/event-stream.",
        },
    }
    foreign = http_client.post(
        listen_url, json=listen_body(3), headers=listen_headers(Origin="https://evil.example")
    )
    assert foreign.status_code == 403
    no_meta = http_client.post(
        listen_url,
        content=json.dumps({"jsonrpc": "2.0", "id": 4, "method": "subscriptions/listen"}),
        headers=listen_headers(),
    )
    assert no_meta.status_code == 400
    assert listen.SLOTS.status()["streams"] == 0


def test_discover_advertises_what_the_streams_deliver(
    listen_url: str, http_client: httpx.Client
) -> None:
    answer = http_client.post(
        listen_url,
        json=modern_request("server/discover", 1),
        headers={**listen_headers(), **modern_headers("server/discover")},
    ).json()
    caps = answer["result"]["capabilities"]
    assert caps["tools"] == {"listChanged": False}  # fixed tables: nothing would tell
    assert caps["prompts"] == {"listChanged": False}
    assert caps["resources"] == {"subscribe": True, "listChanged": True}


def test_worker_shutdown_ends_streams_gracefully(
    listen_url: str, http_client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # keep-alives hold the read open: a stream the shutdown does not end ends idle instead
    monkeypatch.setenv("TM_LISTEN_IDLE", "5")
    with http_client.stream(
        "POST", listen_url, json=listen_body("z"), headers=listen_headers()
    ) as response:
        events = Events(response)
        events.message()
        assert stream.open_streams() == 1
        for loop in _running_loops():  # as the lifespan's shutdown calls it, in the loop
            loop.call_soon_threadsafe(stream.close_all)
        got = [value for kind, value in events.rest() if kind == "message"]
    assert got == [complete("z")]
    assert _row().outcome == "closed"


def _running_loops() -> set[asyncio.AbstractEventLoop]:
    """The in-thread server's event loop, which holds the open stream."""
    found = stream.loops()
    assert len(found) == 1
    return found


def _row() -> RequestLog:
    """The latest listen's row, once the stream's end has written it."""

    def written() -> bool:
        recorder.flush()
        return RequestLog.objects.filter(method="subscriptions/listen").exists()

    wait_until(written)
    return RequestLog.objects.filter(method="subscriptions/listen").latest("id")


def test_the_row_of_a_stream_that_ends_is_written_by_the_logs_thread_not_the_loop(
    listen_url: str,
    http_client: httpx.Client,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A stream's held row is written as it ends, in the event loop: a batch it makes due is
    the request log's own thread's to write (it used to be written in the loop, where Django
    refuses the database: ``SynchronousOnlyOperation``, and the row waited)."""
    import threading

    settings.TM_LOG_FLUSH_ROWS = 1
    settings.TM_LOG_FLUSH_SECONDS = 60.0  # only a wake-up writes before the test ends
    monkeypatch.setenv("TM_LISTEN_IDLE", "0.5")
    writers: list[str] = []
    insert = recorder._insert

    def noted(rows: list[recorder.Row]) -> None:  # the real write; who wrote it is noted
        writers.append(threading.current_thread().name)
        insert(rows)

    monkeypatch.setattr(recorder, "_insert", noted)
    with http_client.stream(
        "POST", listen_url, json=listen_body("w"), headers=listen_headers()
    ) as response:
        seen = Events(response).rest()
    assert seen[-1][1]["result"]["resultType"] == "complete"
    wait_until(lambda: RequestLog.objects.filter(kind="listen", outcome="idle").exists())
    assert writers, "the stream's row was never written"
    assert "tm-test-asgi" not in writers, writers  # the served event loop's thread
    assert recorder.status()["failedWrites"] == 0
