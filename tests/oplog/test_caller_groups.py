"""Callers grouped as the rate limit keys them: an IPv6 /64 is one caller, and a trusted
proxy's ``X-Forwarded-For`` that names no address is refused, not a caller of its own.

The grouping function unit by unit (IPv4, IPv6 prefixes, IPv4-mapped, loopback, a port, text
that is not an address), then over real loopback HTTP from the live server and the default
server (``python -m tmsite.serve``), every request forwarded by the loopback proxy
(``X-Forwarded-For``, as nginx sends it): addresses of one /64 spend one bucket and are
refused ``rate-limited`` together, another /64 is not held back; ``unknown`` and garbage
forwarded are refused ``bad-argument`` naming the header, on MCP (the default server's in-loop
answer of ``ping`` too, and a 2025-11-25 session's GET stream, answered 400 where a short
bucket is 429) and on REST, and spend no bucket.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.oplog.servers import migrate, server_env, serving
from tests.subscriptions.sessions_helpers import initialize, stream_headers
from tmsite.callers import buckets, caller
from tmsite.serve import guard

pytestmark = pytest.mark.spec("OP1")

NET = "2001:db8:1:2"


@pytest.mark.parametrize(
    ("address", "caller_is"),
    [
        ("203.0.113.5", "203.0.113.5"),
        (f"{NET}::5", f"{NET}::/64"),
        (f"{NET}:ffff:ffff:ffff:ffff", f"{NET}::/64"),
        ("2001:db8:1:3::5", "2001:db8:1:3::/64"),
        ("::ffff:203.0.113.5", "203.0.113.5"),
        ("::1", "::1"),
        ("127.0.0.1", "127.0.0.1"),
        ("unix:/run/tm.sock", "unix:/run/tm.sock"),
    ],
)
def test_an_address_stands_for_its_caller(address: str, caller_is: str) -> None:
    assert caller.group(address) == caller_is


def meta(forwarded: str | None, peer: str = "127.0.0.1") -> dict[str, str]:
    found = {"REMOTE_ADDR": peer}
    if forwarded is not None:
        found["HTTP_X_FORWARDED_FOR"] = forwarded
    return found


def test_a_forwarded_caller_is_grouped_and_one_that_is_no_address_is_unreadable() -> None:
    assert caller.address_in(meta(f"198.51.100.1, {NET}::7")) == f"{NET}::/64"
    assert caller.address_in(meta(f"[{NET}::7]:443")) == f"{NET}::/64"
    assert caller.address_in(meta("203.0.113.5:4711")) == "203.0.113.5"
    for forwarded in ("unknown", "garbage-1", "garbage-2", "_hidden", "203.0.113.5, junk"):
        assert caller.address_in(meta(forwarded)) == caller.UNREADABLE
    # Only the hop the trusted proxy appended counts: what the client wrote before it is not.
    assert caller.address_in(meta("junk, 203.0.113.5")) == "203.0.113.5"
    # An untrusted peer's header is not read at all.
    assert caller.address_in(meta("unknown", peer=f"{NET}::9")) == f"{NET}::/64"
    refusal = caller.unreadable(caller.UNREADABLE)
    assert refusal is not None
    assert refusal.data == {"reason": "bad-argument", "field": "X-Forwarded-For"}
    assert caller.unreadable(f"{NET}::/64") is None


def test_loopback_stays_the_exempt_box_itself(settings: Any) -> None:
    settings.TM_RATE_LIMIT = True
    assert caller.limited_in(meta(None, peer="::1")) is None
    assert caller.limited_in(meta(None, peer="127.0.0.1")) is None
    assert caller.limited_in(meta(f"{NET}::1", peer="::1")) == f"{NET}::/64"


def test_an_exempt_ipv6_address_exempts_its_caller(settings: Any) -> None:
    settings.TM_RATE_LIMIT = True
    settings.TM_RATE_EXEMPT = ["127.0.0.1", "::1", f"{NET}::10"]
    assert caller.limited_in(meta(None, peer=f"{NET}::11")) is None
    assert caller.limited_in(meta(None, peer="2001:db8:1:3::10")) == "2001:db8:1:3::/64"


def test_the_in_flight_cap_keys_a_64_as_one_caller() -> None:
    def scope(forwarded: str) -> dict[str, Any]:
        return {
            "client": ("127.0.0.1", 5000),
            "headers": [(b"x-forwarded-for", forwarded.encode())],
        }

    assert guard.caller_key(scope(f"{NET}::1")) == guard.caller_key(scope(f"{NET}::2"))
    assert guard.caller_key(scope(f"{NET}::1")) != guard.caller_key(scope("2001:db8:1:3::1"))
    assert guard.caller_key(scope("garbage-1")) == guard.caller_key(scope("garbage-2"))


# --- over real HTTP -------------------------------------------------------------------------


@pytest.fixture
def limited(settings: Any, tmp_path: Any) -> Iterator[None]:
    """Burst 10, a token back every 1,000 s (none during the test), this process's memory."""
    settings.TM_RATE_LIMIT = True
    settings.TM_RATE_STORE = "memory"
    settings.TM_RATE_BURST = 10
    settings.TM_RATE_REFILL = 0.001
    buckets._stores.clear()
    yield
    buckets._stores.clear()


def ping(url: str, forwarded: str) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"X-Forwarded-For": forwarded, "MCP-Protocol-Version": "2025-06-18"}
    return httpx.post(f"{url}/api/mcp", json=body, headers=headers, timeout=30)


@pytest.mark.django_db(transaction=True)
def test_the_addresses_of_one_64_spend_one_bucket(live_server: Any, limited: None) -> None:
    replies = [ping(live_server.url, f"{NET}::{n:x}") for n in range(1, 12)]
    assert ["result" in reply.json() for reply in replies] == [True] * 10 + [False]
    refused = replies[-1].json()["error"]
    assert (refused["code"], refused["data"]["reason"]) == (-32000, "rate-limited")
    assert refused["data"]["retryAfter"] >= 1
    assert "result" in ping(live_server.url, "2001:db8:1:3::1").json()  # another /64


def assert_unreadable_refused(reply: httpx.Response) -> None:
    error = reply.json()["error"]
    assert error["code"] == -32602
    assert error["data"] == {"reason": "bad-argument", "field": "X-Forwarded-For"}
    assert "X-Forwarded-For" in error["message"]
    assert "RateLimit" not in reply.headers  # no bucket was spent


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("forwarded", ["unknown", "garbage-1", "203.0.113.5, junk"])
def test_a_forwarded_caller_that_is_no_address_is_refused(
    live_server: Any, limited: None, forwarded: str
) -> None:
    reply = ping(live_server.url, forwarded)
    assert reply.status_code == 200
    assert_unreadable_refused(reply)
    rest = httpx.get(
        f"{live_server.url}/api/v1/licensing", headers={"X-Forwarded-For": forwarded}, timeout=30
    )
    assert rest.status_code == 400
    body = rest.json()
    assert (body["reason"], body["field"]) == ("bad-argument", "X-Forwarded-For")
    assert "RateLimit" not in rest.headers


def test_the_default_servers_in_loop_answer_refuses_it_too(tmp_path: Path) -> None:
    """``python -m tmsite.serve`` answers ``ping`` in its event loop: refused there too."""
    env = server_env(tmp_path / "var", TM_RATE_BURST="10", TM_RATE_REFILL="0.001")
    migrate(env)
    with serving(env, workers=1, log=tmp_path / "serve.log", threads=2) as running:
        for forwarded in ("unknown", "garbage-2"):
            reply = ping(running.url, forwarded)
            assert reply.status_code == 200
            assert_unreadable_refused(reply)
        url = f"{running.url}/api/mcp"
        with httpx.Client(timeout=30) as client:  # a 2025-11-25 session's GET stream
            session, _ = initialize(client, url)
            forwarded = {**stream_headers(session), "X-Forwarded-For": "unknown"}
            stream = client.get(url, headers=forwarded)
        assert stream.status_code == 400  # not a short bucket's 429
        assert "retry-after" not in stream.headers
        assert_unreadable_refused(stream)
        answered = [ping(running.url, f"{NET}::{n}") for n in range(1, 12)]
    assert ["result" in reply.json() for reply in answered] == [True] * 10 + [False]
