"""The link invariant walk (LK5) over every registered mount, from ``tm://<host>/``.

Breadth first and bounded (``BUDGET`` reads), round-robin over the mounts so that no one mount's
tree eats the budget, over the served checkout (this repository) and its site served live, plus
the demo static site. It proves, for everything it reads:

* every href resolves (``too-large`` and ``denied`` are tolerated: they exist);
* every paired relation (``INVERSE``) has its inverse on the target, pointing back, at the same
  confidence (the target's links are read whole through ``?as=links&rel=``);
* no ``up`` names the URI it is on;
* a listed child's type equals its stat type;
* a cross-version ``alternate`` (another language, another site) is answered by one back.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from typing import Any

import pytest

from tests.http.conftest import HOST, configure
from tmsite.mounts import registry
from tmsite.mounts.errors import Refusal
from tmsite.mounts.links import INVERSE
from tmsite.mounts.namespace import Namespace
from tmsite.mounts.types import Content
from tmsite.mounts.uri import TmUri, parse
from tmsite.site import pages

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
BUDGET = 1500
TOLERATED = {"too-large", "denied"}


def identity(href: str) -> str:
    uri = parse(href)
    return str(uri.keeping("at"))


@pytest.fixture
def walked_ns(live_server: Any, settings: Any, demo_door: str) -> Iterator[Namespace]:
    configure(settings, live_server.url, demo_door, pages.checkout(), mounts=None)
    del settings.TM_MOUNTS  # every registered mount
    registry.reset()
    yield registry.namespace()
    registry.reset()


class Walk:
    def __init__(self, ns: Namespace) -> None:
        self.ns = ns
        self.reads = 0
        self.failures: list[str] = []
        self.links_cache: dict[tuple[str, str], set[tuple[str, str | None]]] = {}

    def read(self, uri: str) -> Content | Refusal:
        self.reads += 1
        try:
            return self.ns.read(uri)
        except Refusal as refusal:
            return refusal

    def links_of(self, target: str, rel: str) -> set[tuple[str, str | None]]:
        key = (target, rel)
        if key not in self.links_cache:
            found: set[tuple[str, str | None]] = set()
            page: str | None = str(parse(target).with_params({"as": "links", "rel": rel}))
            while page is not None:
                answer = self.read(page)
                if isinstance(answer, Refusal):
                    self.failures.append(f"{target}: ?as=links refused {answer.reason}")
                    break
                found |= {
                    (identity(link["href"]), link.get("confidence"))
                    for link in answer.body["links"]
                }
                page = answer.body.get("next")
            self.links_cache[key] = found
        return self.links_cache[key]

    def check(self, source: str, content: Content) -> list[str]:
        """Check one read's links; the hrefs to visit next."""
        hrefs = []
        for link in content.links:
            if link.rel == "up" and identity(link.href) == source:
                self.failures.append(f"{source}: up names itself")
            if link.rel == "tm:links":
                continue
            hrefs.append(link.href)
            inverse = INVERSE.get(link.rel)
            if inverse is not None:
                back = self.links_of(identity(link.href), inverse)
                if (source, link.confidence) not in back:
                    self.failures.append(
                        f"{source} {link.rel} {link.href} ({link.confidence}): "
                        f"no {inverse} back at that confidence"
                    )
            if link.rel == "alternate" and (link.title or "").startswith("the same page"):
                back_alt = self.links_of(identity(link.href), "alternate")
                if (source, None) not in back_alt:
                    self.failures.append(f"{source} alternate {link.href}: none back")
        return hrefs


def test_every_link_resolves_and_every_pair_has_its_inverse(walked_ns: Namespace) -> None:
    started = time.monotonic()
    walk = Walk(walked_ns)
    queues: dict[str, deque[str]] = {}
    seen: set[str] = set()
    listed_types: dict[str, str] = {}

    def enqueue(href: str) -> None:
        uri = parse(href)
        key = identity(href) if uri.collection else str(uri.keeping("at"))
        if key in seen or uri.is_hosts:
            return
        seen.add(key)
        queues.setdefault(uri.mount or "", deque()).append(key)

    enqueue(f"tm://{HOST}/")
    while walk.reads < BUDGET and any(queues.values()):
        for mount in sorted(queues):
            if not queues[mount] or walk.reads >= BUDGET:
                continue
            uri = queues[mount].popleft()
            parsed: TmUri = parse(uri)
            target = uri if parsed.collection or parsed.is_root else uri + "?as=stat"
            if parsed.mount == "entity" or parsed.mount == "mcp":
                target = uri
            answer = walk.read(target)
            if isinstance(answer, Refusal) and answer.reason == "bad-facet":
                target, answer = uri, walk.read(uri)
            if isinstance(answer, Refusal):
                if answer.reason not in TOLERATED:
                    walk.failures.append(f"{target}: refused {answer.reason} {answer.message}")
                continue
            if target.endswith("?as=stat") and isinstance(answer.body, dict):
                stat_type = answer.body.get("mimeType")
                if uri in listed_types and stat_type != listed_types[uri]:
                    walk.failures.append(f"{uri}: listed {listed_types[uri]}, stat {stat_type}")
            for href in walk.check(uri, answer):
                enqueue(href)
            if isinstance(answer.body, dict) and parsed.collection:
                for child in answer.body.get("children", []):
                    if child.get("redacted"):
                        continue
                    if not child.get("isCollection") and child.get("mimeType"):
                        listed_types[identity(child["uri"])] = child["mimeType"]
                    enqueue(child["uri"])
                if answer.body.get("next"):
                    enqueue(answer.body["next"])
    elapsed = time.monotonic() - started
    mounts = sorted({parse(k).mount or "" for k in seen})
    print(
        f"walk: {walk.reads} reads, {len(seen)} addresses, {len(walk.links_cache)} inverse "
        f"lookups, mounts {mounts}, {elapsed:.1f} s"
    )
    assert walk.failures == [], "\n".join(walk.failures[:40])
    assert walk.reads > 100, walk.reads
    assert any(key.startswith(f"tm://{HOST}/http/") for key in seen)
    assert elapsed < 60, elapsed
    checked = set(walk.links_cache)
    assert (f"tm://{HOST}/fs/data/pieces.json", "tm:read-by") in checked
    assert any(t.startswith(f"tm://{HOST}/fs/docs/") and r == "tm:renders-as" for t, r in checked)
    if "git" in walked_ns.mounts:
        views = f"tm://{HOST}/git/{walked_ns.mounts['http'].repo}/tmsite/site/views.py"  # type: ignore[attr-defined]
        assert (views, "tm:renders-as") in checked
