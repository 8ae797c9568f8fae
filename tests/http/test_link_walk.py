"""The link invariant walk (LK5) over every registered mount, from ``tm://<host>/``.

Breadth first and bounded (``BUDGET`` reads), round-robin over the mounts so that no one mount's
tree eats the budget, over the served checkout (this repository) and its site served live, plus
the demo static site. The bound is not a sample: the walk must end with nothing left to read.
Listings page at ``PAGE_SIZE`` here, so that some take more than one page and the walk follows
their ``next`` (at the shipped 500 every listing of this checkout is one page). It proves, for
everything it reads:

* every href resolves (``too-large`` and ``denied`` are tolerated: they exist);
* every paired relation (``INVERSE``) has its inverse on the target, pointing back, at the same
  confidence (the target's links are read whole through ``?as=links&rel=``);
* no ``up`` names the URI it is on;
* a listed child's type equals its stat type;
* a cross-version ``alternate`` (another language, another site) is answered by one back;
* every trail's every step, read exactly as the trail names it, resolves (``http`` and ``mcp``
  steps too: the start-up check ``tm.W021`` leaves those to this walk).

The entity tables hold the shipped records (``data/autopsy.json``, ``data/lessons.json``), so
the walk reaches patterns, games, routines and lessons, their ``tm:data`` parts of the records
and the games' pages. The box is the shipped one, ``tinymachines``, the host the shipped trails
name. A game's routines past ``ROUTINES_PER_GAME`` are not walked themselves (the records name
hundreds, each some five reads), though every link to one is still checked from the other end.
A part of a thing (``pointer``, ``lines``, ``range``) is a thing of its own, with links of its
own (a record part's ``tm:read-by``, a trail step's ``tm:step-of``); the links it shares with
its whole may be answered on the whole.
"""

from __future__ import annotations

import re
import time
from collections import Counter, deque
from collections.abc import Iterator
from typing import Any

import pytest

from tests.http.conftest import SITE, configure
from tmsite.core.errors import Refusal
from tmsite.core.links import INVERSE
from tmsite.core.types import Content
from tmsite.core.uri import TmUri, parse
from tmsite.entities.loaders import fill, read_checkout
from tmsite.mounts import registry
from tmsite.mounts.http import pages
from tmsite.mounts.namespace import Namespace
from tmsite.trails import index

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.spec("LK5", "LK2", "TRAILS"),
]
#: Reads the walk may take. Measured: the whole namespace takes 1,449 (757 addresses).
BUDGET = 3000
#: Children a listing page holds in the walk (several listings of the checkout are longer).
PAGE_SIZE = 40
TOLERATED = {"too-large", "denied"}
#: The box the shipped trails name.
HOST = "tinymachines"
#: Routines walked per game (``entity/game/<key>/routine/<key>``).
ROUTINES_PER_GAME = 8
#: Mounts whose leaves are read whole, not as a stat (a trail's is read both ways).
WHOLE = {"entity", "mcp"}
#: Parameters that name a thing: its revision and its part.
IDENTITY = ("at", "pointer", "lines", "range")
_ENTITY = rf"tm://{HOST}/entity/"
#: A thing of each entity kind, and the record part each reads from.
ENTITY = {
    "pattern": _ENTITY + r"pattern/[a-z0-9-]+",
    "game": _ENTITY + r"game/[0-9a-f]{12}",
    "routine": _ENTITY + r"game/[0-9a-f]{12}/routine/b[0-9]+-[0-9A-F]{4}",
    "lesson": _ENTITY + r"lesson/[a-z0-9-]+",
}
_DATA = rf"tm://{HOST}/fs/data/"
ENTITY_DATA = {
    "pattern": _DATA + r"autopsy\.json\?pointer=/patterns/[a-z0-9-]+",
    "game": _DATA + r"autopsy\.json\?pointer=/games/[0-9]+",
    "routine": _DATA + r"autopsy\.json\?pointer=/games/[0-9]+/routine_list/[0-9]+",
    "lesson": _DATA + r"lessons\.json\?pointer=/lessons/[0-9]+",
}


def identity(href: str) -> str:
    uri = parse(href)
    return str(uri.keeping(*IDENTITY))


@pytest.fixture
def walked_ns(live_server: Any, settings: Any, demo_door: str) -> Iterator[Namespace]:
    configure(settings, live_server.url, demo_door, pages.checkout(), mounts=None, TM_HOST=HOST)
    del settings.TM_MOUNTS  # every registered mount
    fill(read_checkout(pages.checkout()))
    registry.reset()
    ns = registry.namespace()
    for mount in ns.mounts.values():
        mount.page_size = PAGE_SIZE
    yield ns
    registry.reset()


class Walk:
    def __init__(self, ns: Namespace) -> None:
        self.ns = ns
        self.reads = 0
        self.failures: list[str] = []
        self.links_cache: dict[tuple[str, str], set[tuple[str, str | None]]] = {}
        self.steps: set[str] = set()

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
        # A part (``?pointer=`` …) is in its whole: a link back to the whole is back to it.
        whole_of_part = str(parse(source).keeping("at"))
        for link in content.links:
            if link.rel == "up" and identity(link.href) == source:
                self.failures.append(f"{source}: up names itself")
            if link.rel == "tm:links":
                continue
            hrefs.append(link.href)
            if link.rel == "tm:step":
                self.step(source, link.href)
            inverse = INVERSE.get(link.rel)
            if inverse is not None:
                back = self.links_of(identity(link.href), inverse)
                if not {(source, link.confidence), (whole_of_part, link.confidence)} & back:
                    self.failures.append(
                        f"{source} {link.rel} {link.href} ({link.confidence}): "
                        f"no {inverse} back at that confidence"
                    )
            if link.rel == "alternate" and (link.title or "").startswith("the same page"):
                back_alt = self.links_of(identity(link.href), "alternate")
                if not {(source, None), (whole_of_part, None)} & back_alt:
                    self.failures.append(f"{source} alternate {link.href}: none back")
        return hrefs

    def step(self, trail: str, href: str) -> None:
        """A trail's step, read exactly as the trail names it (facets and all), resolves."""
        if href in self.steps:
            return
        self.steps.add(href)
        answer = self.read(href)
        if isinstance(answer, Refusal) and answer.reason not in TOLERATED:
            self.failures.append(
                f"{trail} tm:step {href}: refused {answer.reason} {answer.message}"
            )


def test_every_link_resolves_and_every_pair_has_its_inverse(walked_ns: Namespace) -> None:
    started = time.monotonic()
    walk = Walk(walked_ns)
    queues: dict[str, deque[str]] = {}
    seen: set[str] = set()
    listed_types: dict[str, str] = {}
    trails_read: set[str] = set()
    routines: Counter[str] = Counter()
    next_pages: list[str] = []  # a listing's further pages, walked as they come

    def enqueue(href: str) -> None:
        uri = parse(href)
        key = identity(href)
        if key in seen or uri.is_hosts:
            return
        if uri.mount == "entity" and len(uri.path) == 4 and not uri.collection:
            if routines[uri.path[1]] >= ROUTINES_PER_GAME:
                return
            routines[uri.path[1]] += 1
        seen.add(key)
        queues.setdefault(uri.mount or "", deque()).append(key)

    enqueue(f"tm://{HOST}/")
    while walk.reads < BUDGET and any(queues.values()):
        for mount in sorted(queues):
            if not queues[mount] or walk.reads >= BUDGET:
                continue
            uri = queues[mount].popleft()
            parsed: TmUri = parse(uri)
            part = any(parsed.param(name) is not None for name in IDENTITY[1:])
            if parsed.collection or parsed.is_root or part or parsed.mount in WHOLE:
                target = uri  # a part has no stat
            else:
                target = str(parsed.with_params({"as": "stat"}))
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
            if parsed.mount == "trail" and not parsed.collection:  # its steps are in the read
                trail = walk.read(uri)
                if isinstance(trail, Refusal):
                    walk.failures.append(f"{uri}: refused {trail.reason} {trail.message}")
                    continue
                trails_read.add(uri)
                for href in walk.check(uri, trail):
                    enqueue(href)
            if isinstance(answer.body, dict) and parsed.collection:
                for child in answer.body.get("children", []):
                    if child.get("redacted"):
                        continue
                    if not child.get("isCollection") and child.get("mimeType"):
                        listed_types[identity(child["uri"])] = child["mimeType"]
                    enqueue(child["uri"])
                if answer.body.get("next"):  # the next page, cursor and all
                    next_pages.append(answer.body["next"])
                    queues[parsed.mount or ""].append(answer.body["next"])
    elapsed = time.monotonic() - started
    mounts = sorted({parse(k).mount or "" for k in seen})
    left = {mount: len(queue) for mount, queue in queues.items() if queue}
    print(
        f"walk: {walk.reads} reads, {len(seen)} addresses, {len(walk.links_cache)} inverse "
        f"lookups, {len(next_pages)} next pages, mounts {mounts}, {elapsed:.1f} s, left {left}"
    )
    # A bound, not a sample: the walk ends because nothing is left, inside the budget.
    assert left == {}, f"the budget of {BUDGET} reads ran out with addresses left: {left}"
    assert walk.failures == [], "\n".join(walk.failures[:40])
    assert walk.reads > 100, walk.reads
    assert next_pages, "no listing took more than one page: the walk followed no next"
    assert any(key.startswith(f"tm://{HOST}/http/") for key in seen)
    checked = set(walk.links_cache)
    assert (f"tm://{HOST}/fs/data/pieces.json", "tm:read-by") in checked
    assert any(t.startswith(f"tm://{HOST}/fs/docs/") and r == "tm:renders-as" for t, r in checked)
    if "git" in walked_ns.mounts:
        views = f"tm://{HOST}/git/{walked_ns.mounts['http'].repo}/tmsite/site/views.py"  # type: ignore[attr-defined]
        assert (views, "tm:renders-as") in checked
    # The shipped records: a thing of every kind, read, its record part, and a game's page.
    things = {kind: sorted(k for k in seen if re.fullmatch(rx, k)) for kind, rx in ENTITY.items()}
    assert all(things.values()), things
    page = f"tm://{HOST}/http/{SITE}/autopsy/games/" + parse(things["game"][0]).path[1]
    assert page in seen
    assert (page, "tm:source") in checked
    assert (things["game"][0], "tm:renders-as") in checked
    for kind, thing in ENTITY_DATA.items():
        assert any(re.fullmatch(thing, t) and r == "tm:read-by" for t, r in checked), kind
    # Every trail, read whole, and its every step, read as the trail names it.
    trails, problems = index.read_all(pages.checkout())
    assert problems == {}, problems
    assert trails_read == {f"tm://{HOST}/trail/{t.name}" for t in trails}
    assert {step.uri for t in trails for step in t.steps} <= walk.steps
    assert any(parse(step).mount == "http" for step in walk.steps)
