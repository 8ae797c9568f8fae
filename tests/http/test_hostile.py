"""Hostile reads: the mount is never a proxy, never follows, never reads past its caps, and
answers every one in bounded time with the right reason, fetching from the front door only."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.http.conftest import HOST, SECRET, SITE, configure, uri
from tests.http.faults import AUX_HUGE, AUX_REDIRECT, FAULT, fault_server, recorded_connections
from tmsite.mounts import registry
from tmsite.mounts.errors import Refusal
from tmsite.mounts.namespace import Namespace

pytestmark = pytest.mark.slow
DEADLINE = 1.5


@pytest.fixture
def hostile(
    live_server: Any, settings: Any, checkout: Path
) -> Iterator[tuple[Namespace, set[tuple[str, int]]]]:
    with fault_server() as faults:
        port = faults.server_address[1]
        door = f"http://127.0.0.1:{port}"
        configure(settings, live_server.url, None, checkout, deadline=DEADLINE)
        settings.TM_SITES = {
            **settings.TM_SITES,
            FAULT: {"kind": "static", "front_door": door},
            AUX_REDIRECT: {"kind": "static", "front_door": door},
            AUX_HUGE: {"kind": "static", "front_door": door},
        }
        live = urlsplit(live_server.url)
        registry.reset()
        yield registry.namespace(), {("127.0.0.1", port), (live.hostname or "", live.port or 0)}
        registry.reset()


def refused(ns: Namespace, target: str) -> Refusal:
    started = time.monotonic()
    with pytest.raises(Refusal) as caught:
        ns.read(target)
    assert time.monotonic() - started < DEADLINE * 2 + 1, target
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
def test_no_site_but_the_configured_ones(
    hostile: tuple[Namespace, set[tuple[str, int]]], spelling: str
) -> None:
    ns, _ = hostile
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
def test_paths_never_become_other_urls(
    hostile: tuple[Namespace, set[tuple[str, int]]], path: str
) -> None:
    ns, _ = hostile
    with recorded_connections() as connected:
        refusal = refused(ns, f"tm://{HOST}/http/{SITE}{path}")
    assert refusal.reason == "bad-uri", (path, refusal)
    assert connected == []


def test_an_absolute_looking_segment_is_a_path_on_the_front_door(
    hostile: tuple[Namespace, set[tuple[str, int]]],
) -> None:
    ns, doors = hostile
    with recorded_connections() as connected:
        refusal = refused(ns, f"tm://{HOST}/http/{SITE}/http:evil.example")
    assert refusal.reason == "not-found"
    assert set(connected) <= doors


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
    hostile: tuple[Namespace, set[tuple[str, int]]], page: str
) -> None:
    ns, doors = hostile
    with recorded_connections() as connected:
        refusal = refused(ns, uri(FAULT, page))
    assert refusal.reason == EXPECTED[page], refusal
    assert set(connected) <= doors
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
    else:
        assert data["size"] > 256 * 1024 and data["stat"].endswith("?as=stat")


def test_a_stat_reads_only_the_head_of_a_huge_body(
    hostile: tuple[Namespace, set[tuple[str, int]]],
) -> None:
    ns, _ = hostile
    started = time.monotonic()
    stat = ns.read(uri(FAULT, "endless", **{"as": "stat"})).body
    assert stat["status"] == 200 and "size" not in stat  # unknown, so not stated
    assert time.monotonic() - started < DEADLINE
    assert ns.read(uri(FAULT, "big", **{"as": "stat"})).body["size"] == 5 * 1024 * 1024 + 13


def test_auxiliary_files_that_redirect_or_are_huge_fence_the_site(
    hostile: tuple[Namespace, set[tuple[str, int]]],
) -> None:
    ns, doors = hostile
    with recorded_connections() as connected:
        redirected = refused(ns, uri(AUX_REDIRECT, "fine"))
        listed = refused(ns, uri(AUX_REDIRECT, collection=True))
        huge = refused(ns, uri(AUX_HUGE, "p1"))
    assert redirected.reason == listed.reason == "unreachable"
    assert redirected.data["failed"] == "/robots.txt: redirect 301"
    assert huge.reason == "unreachable" and huge.data["failed"].startswith("/sitemap.xml")
    assert set(connected) <= doors
    assert ("evil.example", 80) not in connected


def test_the_fault_sites_fine_page_reads(hostile: tuple[Namespace, set[tuple[str, int]]]) -> None:
    ns, _ = hostile
    assert ns.read(uri(FAULT, "fine")).body == "fine\n"
