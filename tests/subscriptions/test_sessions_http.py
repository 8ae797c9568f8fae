"""2025-11-25 sessions, ``resources/subscribe`` and the session's GET stream, served by
``tmsite.serve.app`` on real loopback HTTP in this process.

Most changes are published on the bus by the test, as a change source publishes them; one test
edits a real checkout through the fs watcher.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.conf import settings
from django.core import signing
from django.db import OperationalError

from tests.subscriptions.helpers import listen_body, listen_headers
from tests.subscriptions.sessions_helpers import (
    SseEvents,
    headers,
    initialize,
    rpc,
    stream_headers,
    until,
    updated,
)
from tests.transport.transport_helpers import modern_headers
from tmsite.bus import changes
from tmsite.mcp.protocol import METHOD_NOT_FOUND, CallContext, RpcError
from tmsite.mounts import registry
from tmsite.mounts.fs import watch as fswatch
from tmsite.oplog import recorder
from tmsite.oplog.models import RequestLog
from tmsite.streams import listen, sessionstream, subscribe
from tmsite.subscriptions import sessions
from tmsite.subscriptions.models import SessionEvent, SessionStream, SessionSubscription

pytestmark = [pytest.mark.spec("SUB2"), pytest.mark.slow]

H = f"tm://{settings.TM_HOST}"


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=httpx.Timeout(20, read=20)) as http:
        yield http


@pytest.fixture(autouse=True)
def _watches_end(listen_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """After each test the server watches no session (none lingers into the next test).

    In this process every subscribe wakes the poll at once; the timed poll is made rare, so
    that it seldom meets a test's own writes in the shared in-memory test database (which
    locks a table rather than wait).
    """
    monkeypatch.setenv("TM_SESSION_POLL", "5")
    yield
    for _ in range(50):
        try:
            SessionStream.objects.filter(session__in=list(sessionstream.watched())).delete()
            break
        except OperationalError:  # the table is locked a moment by the server's own thread
            time.sleep(0.1)
    sessionstream.wake()
    until(lambda: not sessionstream.watched())


def _watching(session: str, uris: set[str]) -> bool:
    found = sessions.read(session)
    assert found is not None
    return sessionstream.watched().get(found.key) == uris


def _kept(key: str) -> int:
    time.sleep(0.1)  # the server's thread writes the same table
    try:
        return SessionEvent.objects.filter(session=key).count()
    except OperationalError:  # locked a moment (the shared in-memory test database)
        return -1


def _forged(token: str) -> str:
    head, _, signature = token.rpartition(":")
    return f"{head}:{'A' if signature[0] != 'A' else 'B'}{signature[1:]}"


def test_initialize_issues_a_signed_expiring_session_and_offers_subscribe(
    listen_url: str, client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TM_SESSION_TTL", "120")
    session, result = initialize(client, listen_url)
    again, _ = initialize(client, listen_url)
    assert session != again
    assert all(0x21 <= ord(c) <= 0x7E for c in session)
    payload = signing.loads(session, salt=sessions.SALT)
    assert set(payload) == {"s", "e"} and len(payload["s"]) >= 24
    assert 110 <= payload["e"] - time.time() <= 121
    with pytest.raises(signing.BadSignature):
        signing.loads(session)  # signed under its own salt, no other
    assert result["capabilities"]["resources"] == {"subscribe": True, "listChanged": False}
    # everything else stays stateless: no session is asked for or given
    plain = rpc(client, listen_url, "ping", 5)
    assert plain.status_code == 200 and plain.json() == {"jsonrpc": "2.0", "id": 5, "result": {}}
    assert "mcp-session-id" not in plain.headers
    with_it = rpc(client, listen_url, "ping", 6, session=session)
    assert with_it.json() == {"jsonrpc": "2.0", "id": 6, "result": {}}


def test_forged_expired_and_ended_sessions_are_answered_404(
    listen_url: str, client: httpx.Client
) -> None:
    session, _ = initialize(client, listen_url)
    expired = signing.dumps({"s": "x" * 24, "e": int(time.time()) - 1}, salt=sessions.SALT)
    other_salt = signing.dumps({"s": "x" * 24, "e": int(time.time()) + 99}, salt="elsewhere")
    gone = {
        "jsonrpc": "2.0",
        "id": 3,
        "error": {"code": -32600, "message": sessions.GONE_SENTENCE},
    }
    for bad in (_forged(session), expired, other_salt, "not-a-session"):
        reply = rpc(client, listen_url, "ping", 3, session=bad)
        assert reply.status_code == 404, bad
        assert reply.json() == gone
        got = client.get(listen_url, headers=stream_headers(bad))
        assert got.status_code == 404
        assert got.json() == {"jsonrpc": "2.0", "error": gone["error"]}  # no request, no id
    # DELETE ends it for good; without a session DELETE and GET are not offered
    assert client.delete(listen_url).status_code == 405
    assert client.get(listen_url, headers={"Accept": "text/event-stream"}).status_code == 405
    ended = client.delete(listen_url, headers={"Mcp-Session-Id": session})
    assert ended.status_code == 204 and ended.content == b""
    after = rpc(client, listen_url, "ping", 3, session=session)
    assert after.status_code == 404 and after.json() == gone
    assert client.delete(listen_url, headers={"Mcp-Session-Id": session}).status_code == 404
    assert client.get(listen_url, headers=stream_headers(session)).status_code == 404


def test_subscribe_and_unsubscribe_refusals(
    listen_url: str, client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TM_LISTEN_URIS_PER_CALLER", "2")
    alone = rpc(client, listen_url, "resources/subscribe", 1, uri=f"{H}/fs/docs/a.md")
    assert alone.status_code == 200
    assert alone.json()["error"] == {
        "code": -32600,
        "message": subscribe.NO_SESSION.format(method="resources/subscribe"),
        "data": {"reason": "no-session"},
    }
    nothing = rpc(client, listen_url, "resources/unsubscribe", 1, uri=f"{H}/fs/docs/a.md")
    assert nothing.json()["error"]["data"] == {"reason": "no-session"}
    session, _ = initialize(client, listen_url)

    def sub(uri: Any, rid: int = 2) -> dict[str, Any]:
        reply = rpc(client, listen_url, "resources/subscribe", rid, session=session, uri=uri)
        assert reply.status_code == 200
        body: dict[str, Any] = reply.json()
        assert body["id"] == rid
        return body

    bad = sub("https://example.org/x")["error"]
    assert (bad["code"], bad["data"]["reason"]) == (-32602, "bad-uri")
    missing = sub(f"{H}/nosuchmount/x")["error"]
    assert missing["code"] == -32002
    assert missing["data"]["reason"] == "not-found"
    assert missing["message"] == listen.check_uri(f"{H}/nosuchmount/x").message  # type: ignore[union-attr]
    assert sub(7)["error"]["data"]["reason"] == "bad-uri"
    assert sub(f"{H}/fs/docs/a.md") == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert sub(f"{H}/fs/docs/a.md")["result"] == {}  # idempotent
    assert sub(f"{H}/fs/docs/b.md")["result"] == {}
    over = sub(f"{H}/fs/docs/c.md", 9)["error"]
    assert over == {
        "code": -32000,
        "message": "This session is subscribed to 2 URIs, the most one may be; subscribe to a "
        "collection instead of its children, or unsubscribe from one.",
        "data": {"reason": "too-many-subscriptions", "cap": "uris-per-session", "limit": 2},
    }
    key = sessions.read(session).key  # type: ignore[union-attr]
    rows = set(SessionSubscription.objects.filter(session=key).values_list("uri", flat=True))
    assert rows == {f"{H}/fs/docs/a.md", f"{H}/fs/docs/b.md"}
    never = f"{H}/fs/docs/x.md"
    un = rpc(client, listen_url, "resources/unsubscribe", 4, session=session, uri=never)
    assert un.json() == {"jsonrpc": "2.0", "id": 4, "result": {}}  # never subscribed: fine
    rpc(client, listen_url, "resources/unsubscribe", 5, session=session, uri=f"{H}/fs/docs/a.md")
    assert sub(f"{H}/fs/docs/c.md")["result"] == {}  # room again
    # the 2026 era has no such methods
    assert not any(k.startswith("caller") for k in SessionSubscription._meta.fields_map)


def test_the_get_stream_wants_an_event_stream(listen_url: str, client: httpx.Client) -> None:
    session, _ = initialize(client, listen_url)
    refused = client.get(
        listen_url, headers={**stream_headers(session), "Accept": "application/json"}
    )
    assert refused.status_code == 406
    assert refused.json()["error"]["code"] == -32600
    assert "text/event-stream" in refused.json()["error"]["message"]


def test_a_change_reaches_the_stream_until_unsubscribed(
    listen_url: str, client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TM_LISTEN_IDLE", "2")
    monkeypatch.setenv("TM_LISTEN_KEEPALIVE", "0.3")
    session, _ = initialize(client, listen_url)
    a, sub = f"{H}/fs/docs/a.md", f"{H}/fs/docs/sub/"
    for uri in (a, sub):
        rpc(client, listen_url, "resources/subscribe", 1, session=session, uri=uri)
    with client.stream("GET", listen_url, headers=stream_headers(session)) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream"
        assert response.headers["x-accel-buffering"] == "no"
        assert response.headers["cache-control"] == "no-store"
        events = SseEvents(response)
        until(lambda: _watching(session, {a, sub}))
        assert changes.interests(a) == {a: 1}
        changes.publish(f"{H}/fs/docs/other.md")  # not subscribed: never sent
        changes.publish(a)
        changes.publish(f"{H}/fs/docs/sub/deeper/b.md")
        assert events.message() == ("1", updated(a))
        assert events.message() == ("2", updated(f"{H}/fs/docs/sub/deeper/b.md"))
        rpc(client, listen_url, "resources/unsubscribe", 2, session=session, uri=a)
        until(lambda: _watching(session, {sub}))
        assert not changes.interests(a)
        changes.publish(a)  # unsubscribed: never sent
        rest = events.rest()  # keep-alives, then the idle end
    assert rest and all(event_id is None and value == "keep-alive" for event_id, value in rest)
    until(lambda: listen.SLOTS.status()["streams"] == 0)


def test_a_reconnect_with_last_event_id_is_replayed_what_it_missed(
    listen_url: str, client: httpx.Client
) -> None:
    session, _ = initialize(client, listen_url)
    a = f"{H}/fs/docs/a.md"
    rpc(client, listen_url, "resources/subscribe", 1, session=session, uri=a)
    with client.stream("GET", listen_url, headers=stream_headers(session)) as response:
        events = SseEvents(response)
        until(lambda: _watching(session, {a}))
        changes.publish(a)
        changes.publish(f"{a}?lines=1-2")  # a view of the same file: told as subscribed
        assert events.message() == ("1", updated(a))
        assert events.message() == ("2", updated(a))
    until(lambda: listen.SLOTS.status()["streams"] == 0)
    # cut: the session's URIs are still watched and its events kept
    assert _watching(session, {a})
    changes.publish(a)
    key = sessions.read(session).key  # type: ignore[union-attr]
    until(lambda: _kept(key) == 3)
    with client.stream("GET", listen_url, headers=stream_headers(session, last="1")) as response:
        events = SseEvents(response)
        assert events.message() == ("2", updated(a))
        assert events.message() == ("3", updated(a))
        changes.publish(a)
        assert events.message() == ("4", updated(a))


def test_the_stream_starts_with_a_priming_event_a_reconnect_may_name(
    listen_url: str, client: httpx.Client
) -> None:
    session, _ = initialize(client, listen_url)
    a = f"{H}/fs/docs/a.md"
    key = sessions.read(session).key  # type: ignore[union-attr]
    rpc(client, listen_url, "resources/subscribe", 1, session=session, uri=a)
    with client.stream("GET", listen_url, headers=stream_headers(session)) as response:
        events = SseEvents(response)
        assert events.primed() == "0"  # before any event: the session's start
        until(lambda: _watching(session, {a}))
        changes.publish(a)
        assert events.message() == ("1", updated(a))
    until(lambda: listen.SLOTS.status()["streams"] == 0)
    changes.publish(a)
    until(lambda: _kept(key) == 2)
    with client.stream("GET", listen_url, headers=stream_headers(session, last="0")) as response:
        events = SseEvents(response)
        assert events.primed() == "0"  # where it resumes, then what came after it
        assert events.message() == ("1", updated(a))
        assert events.message() == ("2", updated(a))
    until(lambda: listen.SLOTS.status()["streams"] == 0)
    with client.stream("GET", listen_url, headers=stream_headers(session)) as response:
        primed = SseEvents(response).primed()
    assert primed == "2"  # the last event's number: nothing is replayed after it
    until(lambda: listen.SLOTS.status()["streams"] == 0)
    changes.publish(a)
    until(lambda: _kept(key) == 3)
    with client.stream("GET", listen_url, headers=stream_headers(session, last=primed)) as response:
        events = SseEvents(response)
        assert events.primed() == "2"
        assert events.message() == ("3", updated(a))


def _left(response: httpx.Response) -> int:
    return int(response.headers["RateLimit"].split("r=")[1].split(";")[0])


def _session_rows() -> list[RequestLog]:
    recorder.flush()
    return list(RequestLog.objects.filter(method="session-stream").order_by("id"))


def test_the_stream_costs_a_listens_budget_and_is_refused_as_a_listen_is(
    listen_url: str, client: httpx.Client, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TM_LISTEN_IDLE", "0.6")
    settings.TM_RATE_BURST, settings.TM_RATE_REFILL = 7, 0.001  # no refill during the test
    caller = {"X-Forwarded-For": "192.0.2.77"}
    session, _ = initialize(client, listen_url)
    ping = client.post(
        listen_url,
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        headers=headers(session, **caller),
    )
    before = _left(ping)
    started = time.monotonic()
    with client.stream(
        "GET", listen_url, headers={**stream_headers(session), **caller}
    ) as response:
        assert response.status_code == 200
        assert before - _left(response) == 4  # a listen's price
        SseEvents(response).rest()  # the priming event, then the idle end
    took = time.monotonic() - started
    until(lambda: len(_session_rows()) == 1)
    (row,) = _session_rows()
    assert (row.surface, row.kind, row.outcome, row.status) == ("mcp-http", "listen", "idle", 200)
    assert row.protocol == "2025-11-25" and row.target == ""
    assert 0.5 <= row.duration_us / 1e6 <= took + 0.5  # the whole stream, written at its end
    assert row.bytes > 0
    # what is left is less than a listen's price: both are refused, the same refusal
    refused = client.get(listen_url, headers={**stream_headers(session), **caller})
    listened = client.post(
        listen_url,
        json=listen_body(5),
        headers={**listen_headers(), **modern_headers("subscriptions/listen"), **caller},
    )
    assert listened.status_code == 200 and refused.status_code == 429
    error = listened.json()["error"]
    assert error["code"] == -32000 and error["data"]["reason"] == "rate-limited"
    assert refused.json() == {"jsonrpc": "2.0", "error": error}  # a GET has no request id
    assert refused.headers["retry-after"] == str(error["data"]["retryAfter"])
    assert _left(refused) == 2  # nothing spent by either
    until(lambda: len(_session_rows()) == 2)
    last = _session_rows()[-1]
    assert (last.kind, last.outcome, last.status) == ("listen", "rate-limited", 429)
    assert listen.SLOTS.status()["streams"] == 0


def test_a_newer_stream_takes_over(
    listen_url: str, client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TM_LISTEN_IDLE", "8")  # a stream not taken over ends idle, later
    session, _ = initialize(client, listen_url)
    a = f"{H}/fs/docs/a.md"
    rpc(client, listen_url, "resources/subscribe", 1, session=session, uri=a)
    with (
        httpx.Client(timeout=20) as other,
        client.stream("GET", listen_url, headers=stream_headers(session)) as first,
    ):
        older = SseEvents(first)
        until(lambda: _watching(session, {a}))
        with other.stream("GET", listen_url, headers=stream_headers(session)) as second:
            newer = SseEvents(second)
            started = time.monotonic()
            assert [v for _, v in older.rest() if isinstance(v, dict)] == []  # it ended
            assert time.monotonic() - started < 4  # at once, not idle
            changes.publish(a)
            assert newer.message() == ("1", updated(a))
            assert listen.SLOTS.status()["streams"] == 1


def test_what_changes_between_a_takeovers_claim_and_its_attach_reaches_the_new_stream(
    listen_url: str, client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TM_LISTEN_IDLE", "8")
    session, _ = initialize(client, listen_url)
    a, b = f"{H}/fs/docs/a.md", f"{H}/fs/docs/b.md"
    key = sessions.read(session).key  # type: ignore[union-attr]
    rpc(client, listen_url, "resources/subscribe", 1, session=session, uri=a)
    claim = sessionstream._claim
    claimed: list[str] = []

    def claim_then_change(*args: Any) -> Any:
        found = claim(*args)
        if len(claimed) == 1:  # the takeover's claim is made; its attach is still to come
            # published on the hub's own thread: heard before the claim's answer reaches the
            # loop, so the hub has these two before it attaches the new stream
            changes.publish(a)
            changes.publish(f"{a}?lines=1-2")
        claimed.append(args[1])
        return found

    monkeypatch.setattr(sessionstream, "_claim", claim_then_change)
    with (
        httpx.Client(timeout=20) as other,
        client.stream("GET", listen_url, headers=stream_headers(session)) as first,
    ):
        older = SseEvents(first)
        assert older.primed() == "0"
        until(lambda: _watching(session, {a}))
        changes.publish(a)
        assert older.message() == ("1", updated(a))
        with other.stream("GET", listen_url, headers=stream_headers(session)) as second:
            newer = SseEvents(second)
            assert newer.primed() == "1"
            assert newer.message() == ("2", updated(a))
            assert newer.message() == ("3", updated(a))
            changes.publish(b)  # not subscribed; then one that is, numbered after those
            changes.publish(a)
            assert newer.message() == ("4", updated(a))
            assert [v for _, v in older.rest() if isinstance(v, dict)] == []  # told none
    assert len(claimed) == 2
    until(lambda: _kept(key) == 4)  # kept for a reconnect, under the new stream's id
    with client.stream("GET", listen_url, headers=stream_headers(session, last="1")) as again:
        events = SseEvents(again)
        assert events.primed() == "1"
        assert [events.message() for _ in range(3)] == [
            ("2", updated(a)),
            ("3", updated(a)),
            ("4", updated(a)),
        ]


@pytest.fixture
def checkout(tmp_path: Path, settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("TM_FS_WATCH", "native")
    root = tmp_path / "box"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.md").write_text("# a\n")
    settings.TM_CHECKOUT = root
    settings.TM_FS_ROOTS = ["docs"]
    registry.reset()
    yield root
    fswatch.SOURCE.stop()
    registry.reset()


def test_an_edited_file_reaches_the_get_stream(
    listen_url: str, client: httpx.Client, checkout: Path
) -> None:
    session, _ = initialize(client, listen_url)
    a = f"{H}/fs/docs/a.md"
    rpc(client, listen_url, "resources/subscribe", 1, session=session, uri=a)
    with client.stream("GET", listen_url, headers=stream_headers(session)) as response:
        events = SseEvents(response)
        until(lambda: _watching(session, {a}))
        until(lambda: fswatch.SOURCE.watching == {"docs"})
        time.sleep(0.3)
        (checkout / "docs" / "other.md").write_text("not subscribed\n")
        (checkout / "docs" / "a.md").write_text("# a, changed\n")
        event_id, message = events.message()
    assert message == updated(a)
    assert event_id == "1"
    assert headers()["MCP-Protocol-Version"] == "2025-11-25"


def test_the_curls_of_the_mcp_guide_subscribe_and_are_told(
    listen_url: str, client: httpx.Client
) -> None:
    """docs/mcp.md's 2025-11-25 curls, sent as written (``$SID`` the session they got)."""
    from urllib.parse import urlsplit

    from tests.clients.test_client_recipes import ROOT, curls

    found = [c for c in curls(ROOT / "docs" / "mcp.md") if "2025-11-25 era" in c.heading]
    [init, sub, get] = found
    assert init.shows_status and init.body["method"] == "initialize"
    assert sub.body["method"] == "resources/subscribe" and get.raw is None
    url = listen_url.removesuffix(urlsplit(listen_url).path) + urlsplit(init.url).path
    answered = client.post(url, content=(init.raw or "").encode(), headers=init.headers)
    session = answered.headers["mcp-session-id"]

    def sent(curl: Any) -> dict[str, str]:
        return {k: v.replace("$SID", session) for k, v in curl.headers.items()}

    done = client.post(url, content=(sub.raw or "").encode(), headers=sent(sub))
    assert done.json() == {"jsonrpc": "2.0", "id": 2, "result": {}}
    with client.stream("GET", url, headers=sent(get)) as response:
        events = SseEvents(response)
        uri = sub.body["params"]["uri"]
        until(lambda: _watching(session, {uri}))
        changes.publish(f"{uri}guide.md")
        assert events.message() == ("1", updated(f"{uri}guide.md"))


class _Held:
    def __init__(self) -> None:
        self.told: list[tuple[str, str]] = []

    def subscribe(self, uri: str) -> None:
        self.told.append(("subscribe", uri))

    def unsubscribe(self, uri: str) -> None:
        self.told.append(("unsubscribe", uri))


def test_the_session_a_request_is_handed_holds_its_subscriptions() -> None:
    uri = f"tm://{settings.TM_HOST}/"
    held = _Held()
    ctx = CallContext(transport="stdio", subscriber=held)
    assert subscribe.subscribe({"uri": uri}, ctx) == {}
    assert subscribe.unsubscribe({"uri": uri}, ctx) == {}
    assert held.told == [("subscribe", uri), ("unsubscribe", uri)]
    with pytest.raises(RpcError) as refused:  # no session handed, none kept here
        subscribe.subscribe({"uri": uri}, CallContext(transport="stdio"))
    assert refused.value.code == METHOD_NOT_FOUND
    assert refused.value.message == subscribe.NOT_HERE.format(method=subscribe.SUBSCRIBE)
