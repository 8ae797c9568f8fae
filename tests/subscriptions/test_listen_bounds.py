"""What one caller's listen or subscribe may cost: bounded before any work, refused as a read is.

A listen whose ``resourceSubscriptions`` names more URIs than a caller may hold is refused before
one is parsed (it used to cost quadratic time first: 100,000 URIs held a thread 50 s); what a
refusal list echoes is cut (830,000 refused URIs used to echo 62 MB); an address whose form its
mount's read refuses (a path leaving its root, a denied name) is refused by a listen and a
subscribe alike; and a 2025-11-25 session holds a bounded number of characters, one caller a
bounded number of sessions. Real loopback HTTP to ``tmsite.serve.app`` in this process.

Spec: SUB1, SUB2.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import httpx
import pytest
from django.conf import settings

from tests.subscriptions.helpers import Events, listen_body, listen_headers, nothing_held
from tests.subscriptions.sessions_helpers import headers, initialize, rpc
from tmsite.subscriptions.models import SessionSubscription

pytestmark = [pytest.mark.spec("SUB1", "SUB2"), pytest.mark.slow]

H = f"tm://{settings.TM_HOST}"
REFUSED = "tinymachines.ai/refused"


def _refusal(response: httpx.Response) -> dict[str, Any]:
    assert response.headers["content-type"].startswith("application/json"), response.text[:200]
    body = response.json()
    assert "result" not in body
    return dict(body["error"])


def test_a_listen_naming_more_uris_than_a_caller_may_hold_is_refused_before_any_is_parsed(
    listen_url: str, http_client: httpx.Client
) -> None:
    asked = [f"{H}/fs/docs/n{i}.md" for i in range(100_000)]  # 3.2 MB, every URI valid
    started = time.process_time()  # the server runs in this process: its CPU is counted
    response = http_client.post(
        listen_url, json=listen_body("big", resourceSubscriptions=asked), headers=listen_headers()
    )
    spent = time.process_time() - started
    assert _refusal(response) == {
        "code": -32000,
        "message": "A listen names at most 256 URIs in resourceSubscriptions; subscribe to a "
        "collection instead of its children.",
        "data": {"reason": "too-many-subscriptions", "cap": "uris-per-listen", "limit": 256},
    }
    assert spent < 2.0, f"refusing 100,000 URIs cost {spent:.2f} s of CPU"  # it cost 50 s
    assert nothing_held()


def test_the_list_is_counted_as_sent_and_the_cap_follows_its_setting(
    listen_url: str, http_client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TM_LISTEN_URIS_PER_CALLER", "3")
    same = [f"{H}/fs/docs/a.md"] * 4  # duplicates count: the length is judged before any work
    response = http_client.post(
        listen_url, json=listen_body(2, resourceSubscriptions=same), headers=listen_headers()
    )
    assert _refusal(response)["data"] == {
        "reason": "too-many-subscriptions",
        "cap": "uris-per-listen",
        "limit": 3,
    }
    with http_client.stream(
        "POST",
        listen_url,
        json=listen_body(3, resourceSubscriptions=same[:3]),
        headers=listen_headers(),
    ) as stream:
        ack = Events(stream).message()
        assert ack["params"]["notifications"]["resourceSubscriptions"] == [f"{H}/fs/docs/a.md"]


def test_a_refusal_list_echoes_bounded_text(listen_url: str, http_client: httpx.Client) -> None:
    junk = [f"x{i:04d}" + "y" * 4_000 for i in range(256)]  # 1 MB that is no URI at all
    with http_client.stream(
        "POST",
        listen_url,
        json=listen_body("echo", resourceSubscriptions=junk),
        headers=listen_headers(),
    ) as stream:
        ack = Events(stream).message()
    assert len(json.dumps(ack)) < 120_000  # each of 256 refusals echoes at most 200 characters
    refused = ack["params"]["_meta"][REFUSED]
    assert len(refused) == 256
    assert {r["reason"] for r in refused} == {"bad-uri"}
    assert all(len(r["uri"]) == 200 and r["uri"].endswith("…") for r in refused)
    assert refused[7]["uri"].startswith("x0007yyy")
    # a list of one short text repeated: refused at the cap, answered in a few hundred bytes
    flood = http_client.post(
        listen_url,
        json=listen_body("flood", resourceSubscriptions=["x"] * 830_000),
        headers=listen_headers(),
    )
    assert _refusal(flood)["data"]["cap"] == "uris-per-listen"
    assert len(flood.content) < 1_000  # it answered 62 MB


@pytest.mark.parametrize(
    ("uri", "reason"),
    [
        ("fs/../../etc/", "out-of-root"),
        ("fs/docs/../../etc/passwd", "out-of-root"),
        ("fs/%2e%2e/etc/", "out-of-root"),
        ("fs/docs/.env", "denied"),
        ("fs/nosuchroot/a.md", "out-of-root"),
        ("git/nosuchrepo/a.md", "not-found"),
        ("zzz/a", "not-found"),
    ],
)
def test_listen_and_subscribe_refuse_what_the_read_refuses_by_its_form(
    listen_url: str, http_client: httpx.Client, uri: str, reason: str
) -> None:
    text = f"{H}/{uri}"
    with http_client.stream(
        "POST",
        listen_url,
        json=listen_body("f", resourceSubscriptions=[text, f"{H}/fs/docs/later.md"]),
        headers=listen_headers(),
    ) as stream:
        ack = Events(stream).message()
    honoured = ack["params"]["notifications"]["resourceSubscriptions"]
    assert honoured == [f"{H}/fs/docs/later.md"]  # a file that does not exist yet is admitted
    [refused] = ack["params"]["_meta"][REFUSED]
    assert (refused["uri"], refused["reason"]) == (text, reason)
    session, _ = initialize(http_client, listen_url)
    error = rpc(http_client, listen_url, "resources/subscribe", 1, session=session, uri=text)
    got = _refusal(error)
    assert (got["code"], got["data"]["reason"]) == (-32002, reason)
    assert got["message"] == refused["message"]
    assert not SessionSubscription.objects.exists()


def test_a_session_holds_a_bounded_number_of_characters(
    listen_url: str, http_client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TM_SESSION_URI_BYTES", "100")
    session, _ = initialize(http_client, listen_url)
    first = f"{H}/fs/docs/{'a' * 40}.md"  # 62 characters
    kept = rpc(http_client, listen_url, "resources/subscribe", 1, session=session, uri=first)
    assert kept.json()["result"] == {}
    second = f"{H}/fs/docs/{'b' * 40}.md"
    over = _refusal(
        rpc(http_client, listen_url, "resources/subscribe", 2, session=session, uri=second)
    )
    assert over == {
        "code": -32000,
        "message": "This session's subscribed URIs would pass 100 characters in all; subscribe "
        "to a collection instead of its children, or unsubscribe from one.",
        "data": {"reason": "too-many-subscriptions", "cap": "uri-bytes-per-session", "limit": 100},
    }
    assert list(SessionSubscription.objects.values_list("uri", flat=True)) == [first]


def test_one_caller_holds_subscriptions_in_a_bounded_number_of_sessions(
    listen_url: str, http_client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TM_SESSIONS_PER_CALLER", "3")
    caller = {"X-Forwarded-For": "198.51.100.23"}  # from the trusted loopback proxy
    other = {"X-Forwarded-For": "198.51.100.24"}

    def subscribe(session: str, uri: str, sent: dict[str, str]) -> httpx.Response:
        body = {"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": {"uri": uri}}
        return http_client.post(listen_url, json=body, headers=headers(session, **sent))

    sessions = [initialize(http_client, listen_url)[0] for _ in range(5)]
    for session in sessions[:3]:
        assert subscribe(session, f"{H}/fs/docs/a.md", caller).json()["result"] == {}
    # a session that holds a subscription already may take more
    assert subscribe(sessions[0], f"{H}/fs/docs/b.md", caller).json()["result"] == {}
    refused = _refusal(subscribe(sessions[3], f"{H}/fs/docs/a.md", caller))
    assert refused == {
        "code": -32000,
        "message": "This caller holds subscriptions in 3 sessions, the most one may; end one "
        "(DELETE) or subscribe in one of them.",
        "data": {"reason": "too-many-sessions", "cap": "sessions-per-caller", "limit": 3},
    }
    assert subscribe(sessions[4], f"{H}/fs/docs/a.md", other).json()["result"] == {}  # another
    holders = set(SessionSubscription.objects.values_list("holder", flat=True))
    assert len(holders) == 2
    assert all(re.fullmatch(r"[0-9a-f]{32}", holder) for holder in holders)  # never the address
    # ending a session gives its share back
    ended = http_client.delete(listen_url, headers=headers(sessions[1]))
    assert ended.status_code == 204
    assert subscribe(sessions[3], f"{H}/fs/docs/a.md", caller).json()["result"] == {}
