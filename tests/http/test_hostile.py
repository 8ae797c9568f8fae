"""Hostile reads: the mount is never a proxy, never follows, never reads past its caps, and
answers every one with the right reason, fetching from the front door only. A cap that did not
fire would be cut off by the deadline and answer ``timeout`` instead; the deadline itself is
proved against a drip that would end, and read whole, long after it."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from tests.audit import recorded_connections
from tests.http.conftest import HOST, SECRET, SITE, configure, uri
from tests.http.faults import (
    AUX_HUGE,
    AUX_REDIRECT,
    FAULT,
    _Server,
    fault_server,
)
from tmsite.core.errors import Refusal
from tmsite.mounts import registry
from tmsite.mounts.http.mount import STAT_CAP
from tmsite.mounts.namespace import Namespace

pytestmark = [pytest.mark.slow, pytest.mark.spec("HTTP", "RJ1")]
DEADLINE = 1.5


class Hostile(NamedTuple):
    """The namespace, the fault sites' front door, and this project's own site's."""

    ns: Namespace
    door: tuple[str, int]
    own: tuple[str, int]


@pytest.fixture
def faults() -> Iterator[_Server]:
    with fault_server() as server:
        yield server


@pytest.fixture
def hostile(live_server: Any, settings: Any, checkout: Path, faults: _Server) -> Iterator[Hostile]:
    port = faults.server_address[1]
    door = f"http://127.0.0.1:{port}"
    configure(settings, live_server.url, None, checkout, deadline=DEADLINE)
    settings.TM_SITES = {
        **settings.TM_SITES,
        FAULT: {"kind": "static", "front_door": door},
        AUX_REDIRECT: {"kind": "static", "front_door": door},
        AUX_HUGE: {"kind": "static", "front_door": door},
    }
    registry.reset()
    host, port_of_own = live_server.thread.httpd.server_address[:2]  # where it listens
    yield Hostile(registry.namespace(), ("127.0.0.1", port), (host, port_of_own))
    registry.reset()


def refused(ns: Namespace, target: str) -> Refusal:
    with pytest.raises(Refusal) as caught:
        ns.read(target)
    assert SECRET not in json.dumps(caught.value.data)
    return caught.value


SPELLINGS = [
    "2130706433",
    "0x7f000001",
    "0177.0.0.1",
    "127.0.0.1",
    "127.1",
    "%5B::ffff:127.0.0.1%5D",
    "[::1]",
    "localhost",
    "localhost.",
    "tinymachines.ai.",
    "TINYMACHINES.AI",
    "a@tinymachines.ai",
    "tinymachines.ai@127.0.0.1",
    "tinymachines.ai%3A8000",
    "tinymachines.ai%5C@evil.example",
    "t%C4%B1nymachines.ai",
    "%2e%2e",
    "evil.example",
]


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_no_site_but_the_configured_ones(hostile: Hostile, spelling: str) -> None:
    ns = hostile.ns
    with recorded_connections() as connected:
        refusal = refused(ns, f"tm://{HOST}/http/{spelling}/docs")
    assert refusal.reason in {"not-found", "bad-uri"}
    if refusal.reason == "not-found":
        assert uri(SITE, collection=True) in refusal.data["nearest"]
    assert connected == []


@pytest.mark.parametrize(
    "path",
    [
        "//evil.example/x",
        "/%2F%2Fevil.example/x",
        "/http:%2f%2fevil.example",
        "/..%2f..%2fsecret.txt",
        "/%2e%2e/secret.txt",
        "/docs/%00",
        "/docs%5C..%5Csecret.txt",
        "/docs/%FF",
    ],
)
def test_paths_never_become_other_urls(hostile: Hostile, path: str) -> None:
    ns = hostile.ns
    with recorded_connections() as connected:
        refusal = refused(ns, f"tm://{HOST}/http/{SITE}{path}")
    assert refusal.reason == "bad-uri", (path, refusal)
    assert connected == []


def test_an_absolute_looking_segment_is_a_path_on_the_front_door(
    hostile: Hostile,
) -> None:
    ns, _, own = hostile
    with recorded_connections() as connected:
        refusal = refused(ns, f"tm://{HOST}/http/{SITE}/http:evil.example")
    assert refusal.reason == "not-found"
    assert connected and set(connected) == {own}


EXPECTED = {
    "redirect-away": "redirect",
    "gzip-bomb": "too-large",
    "endless": "too-large",
    "slow": "timeout",
    "liar": "unreachable",
    "error": "unreachable",
    "big": "too-large",
}


@pytest.mark.parametrize("page", sorted(EXPECTED))
def test_what_a_broken_front_door_sends_is_refused(
    hostile: Hostile, faults: _Server, page: str
) -> None:
    ns, door, _ = hostile
    with recorded_connections() as connected:
        started = time.monotonic()
        refusal = refused(ns, uri(FAULT, page))
        elapsed = time.monotonic() - started
    assert refusal.reason == EXPECTED[page], refusal
    assert connected and set(connected) == {door}
    data = refusal.data
    if page == "redirect-away":
        assert data["status"] == 302 and data["target"] == "http://evil.example/steal"
        assert "targetUri" not in data
    elif page == "error":
        assert data["status"] == 503
    elif page == "liar":
        assert "short of the length it announced" in data["failed"]
    elif page == "slow":
        assert data["seconds"] == DEADLINE
        # No earlier than the deadline, and while the drip (about 10 s) still had bytes to send.
        assert elapsed >= DEADLINE
        assert not faults.slow_finished.is_set(), "the reader waited for the whole drip"
    else:
        assert data["size"] > 256 * 1024 and data["stat"].endswith("?as=stat")


def test_a_stat_reads_only_the_head_of_a_huge_body(hostile: Hostile, faults: _Server) -> None:
    ns = hostile.ns
    stat = ns.read(uri(FAULT, "endless", **{"as": "stat"})).body
    assert stat["status"] == 200 and "size" not in stat  # unknown, so not stated
    # The server counts what it sent before the reader went away: a head (64 KiB) and what this
    # machine's socket buffers hold, not the stream a reader would take until the deadline.
    end = time.monotonic() + 30
    while not faults.endless_sent and time.monotonic() < end:
        time.sleep(0.01)
    [sent] = faults.endless_sent
    assert sent < STAT_CAP + _socket_buffers() + 1024 * 1024, sent
    assert ns.read(uri(FAULT, "big", **{"as": "stat"})).body["size"] == 5 * 1024 * 1024 + 13


def _socket_buffers() -> int:
    """The most a TCP connection's send and receive buffers may hold here (Linux's limits, else
    a generous 32 MiB)."""
    try:
        return sum(
            int(Path(f"/proc/sys/net/ipv4/tcp_{kind}").read_text().split()[2])
            for kind in ("rmem", "wmem")
        )
    except (OSError, IndexError, ValueError):
        return 32 * 1024 * 1024


def test_auxiliary_files_that_redirect_or_are_huge_fence_the_site(
    hostile: Hostile,
) -> None:
    ns, door, _ = hostile
    with recorded_connections() as connected:
        redirected = refused(ns, uri(AUX_REDIRECT, "fine"))
        listed = refused(ns, uri(AUX_REDIRECT, collection=True))
        huge = refused(ns, uri(AUX_HUGE, "p1"))
    assert redirected.reason == listed.reason == "unreachable"
    assert redirected.data["failed"] == "/robots.txt: redirect 301"
    assert huge.reason == "unreachable" and huge.data["failed"].startswith("/sitemap.xml")
    assert connected and set(connected) == {door}


def test_the_fault_sites_fine_page_reads(hostile: Hostile) -> None:
    ns = hostile.ns
    assert ns.read(uri(FAULT, "fine")).body == "fine\n"
