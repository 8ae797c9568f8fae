"""Links: the asserting constructor, the one order, the cap, and ``?as=links`` paging."""

from __future__ import annotations

import builtins
import random
from collections.abc import Mapping

import pytest

from tests.namespace.world import HOST, body_of
from tmsite.core.errors import BadArgument, BadCursor, BadFacet, NotFound
from tmsite.core.links import LINK_CAP, Link, order
from tmsite.core.types import Content, Entry, Listing, Request, vnd
from tmsite.mounts.base import Mount
from tmsite.mounts.namespace import Namespace

pytestmark = pytest.mark.spec("LK1", "LK3", "LK4")

HREF = f"tm://{HOST}/many/x"


@pytest.mark.parametrize(
    "make",
    [
        lambda: Link("tm:source", HREF),
        lambda: Link("tm:source", HREF, "certain"),  # type: ignore[arg-type]
        lambda: Link("up", HREF, "exact"),
        lambda: Link("help", HREF, "low"),
        lambda: Link("tm:nonsense", HREF, "exact"),
        lambda: Link("related", HREF),
        lambda: Link("up", "https://example.org/"),
        lambda: Link("tm:data", "/fs/docs/a.md", "inferred"),
        lambda: Link("tm:data", "tm:/x", "inferred"),
    ],
)
def test_constructor_refuses_malformed_links(make: object) -> None:
    with pytest.raises(AssertionError):
        make()  # type: ignore[operator]


def test_constructor_accepts_well_formed_links() -> None:
    Link("up", HREF)
    Link("tm:found-in", HREF, "inferred", title="t", count=3, type="application/json")
    assert Link("tm:pins", HREF, "exact").to_json() == {
        "rel": "tm:pins",
        "href": HREF,
        "confidence": "exact",
    }
    full = Link("tm:data", HREF, "low", "T", 2, "text/plain")
    assert Link.from_json(full.to_json()) == full


def test_one_order_iana_then_exact_inferred_low_by_rel_then_href() -> None:
    expected = [
        Link("collection", f"{HREF}/b"),
        Link("help", f"{HREF}/a"),
        Link("up", f"{HREF}/a"),
        Link("up", f"{HREF}/b"),
        Link("tm:data", f"{HREF}/z", "exact"),
        Link("tm:source", f"{HREF}/a", "exact"),
        Link("tm:data", f"{HREF}/a", "inferred"),
        Link("tm:data", f"{HREF}/b", "inferred"),
        Link("tm:read-by", f"{HREF}/a", "inferred"),
        Link("tm:found-in", f"{HREF}/a", "low"),
    ]
    shuffled = list(expected)
    random.Random(7).shuffle(shuffled)
    duplicate = Link("tm:data", f"{HREF}/a", "low", title="a second claim")
    assert order([*shuffled, duplicate]) == expected
    first = Link("up", f"{HREF}/a", title="first")
    ordered = order([first, Link("up", f"{HREF}/a", title="second")])
    assert ordered == [first]


class ManyLinks(Mount):
    """A mount whose leaves carry as many links as their name says."""

    name = "many"
    title = "Many links"
    what = "Leaves with many links."
    RELS = ("tm:found-in", "tm:data", "tm:step", "tm:exhibits")
    CONFIDENCES = ("exact", "inferred", "low")

    def list(self, req: Request) -> Listing:
        if req.uri.path:
            raise NotFound(req.text, "no such collection")
        return Listing([Entry(str(self.uri("250")), "250", False, vnd("thing"))])

    def read(self, req: Request) -> Content:
        req.facets.require(req.text, ("as",), "a thing")
        if len(req.uri.path) != 1 or not req.uri.path[0].isdigit():
            raise NotFound(req.text, "no such thing")
        total = int(req.uri.path[0])
        links = [*self.up_links(req.uri), Link("help", str(self.root))]
        for i in range(total - len(links)):
            rel = self.RELS[i % len(self.RELS)]
            conf = self.CONFIDENCES[i % 3]
            href = str(self.uri(f"target-{i:05d}"))
            links.append(Link(rel, href, conf, count=1 + i % 7))  # type: ignore[arg-type]
        return Content(req.text, vnd("thing"), {"links": total}, links, kind="thing")

    def complete(self, argument: str, value: str, context: Mapping[str, str]) -> builtins.list[str]:
        raise BadArgument(None, "nothing to complete", valid=[])


def space() -> tuple[Namespace, ManyLinks]:
    mount = ManyLinks(HOST)
    return Namespace(HOST, {"many": mount}), mount


def every_link(mount: ManyLinks, count: int) -> list[Link]:
    uri = mount.uri(str(count))
    from tmsite.core.facets import parse_facets

    return order(mount.read(Request(uri, parse_facets(uri))).links)


def test_a_read_carries_at_most_100_links_the_last_pointing_at_all_of_them() -> None:
    ns, mount = space()
    content = ns.read(f"tm://{HOST}/many/250")
    assert len(content.links) == LINK_CAP
    every = every_link(mount, 250)
    assert content.links[:-1] == every[: LINK_CAP - 1]
    last = content.links[-1]
    assert last.rel == "tm:links" and last.confidence == "exact"
    assert last.href == f"tm://{HOST}/many/250?as=links"
    assert last.count == 250
    small = ns.read(f"tm://{HOST}/many/100")
    assert len(small.links) == 100 and all(link.rel != "tm:links" for link in small.links)
    assert len(ns.read(f"tm://{HOST}/many/101").links) == 100


def test_as_links_pages_500_at_a_time_with_next() -> None:
    ns, mount = space()
    every = every_link(mount, 1234)
    uri: str | None = f"tm://{HOST}/many/1234?as=links"
    pages: list[list[Link]] = []
    while uri is not None:
        content = ns.read(uri)
        body = body_of(content)
        assert content.mime_type == "application/vnd.tm.links+json"
        assert body["target"] == f"tm://{HOST}/many/1234" and body["total"] == 1234
        pages.append([Link.from_json(item) for item in body["links"]])
        uri = body.get("next")
        if uri is not None:
            assert body["nextCursor"] in uri
    assert [len(page) for page in pages] == [500, 500, 234]
    assert [link for page in pages for link in page] == every


def test_rel_and_min_filters_and_a_filtered_set_is_an_address() -> None:
    ns, mount = space()
    every = every_link(mount, 1234)
    text = f"tm://{HOST}/many/1234?as=links&rel=tm:found-in&min=5"
    first_content = ns.read(text)
    first = body_of(first_content)
    wanted = [link for link in every if link.rel == "tm:found-in" and (link.count or 1) >= 5]
    assert first["total"] == len(wanted) > 0
    assert first["rel"] == "tm:found-in" and first["min"] == 5
    assert first["uri"] == text
    assert [Link.from_json(item) for item in first["links"]] == wanted[:500]
    again = body_of(ns.read(first["uri"]))
    assert again == first
    only_rel = body_of(ns.read(f"tm://{HOST}/many/1234?as=links&rel=tm:step"))
    steps = [link for link in every if link.rel == "tm:step"]
    assert only_rel["total"] == len(steps)
    collected = [Link.from_json(item) for item in only_rel["links"]]
    nxt = only_rel.get("next")
    while nxt:
        assert "rel=tm:step" in nxt
        page = body_of(ns.read(nxt))
        collected += [Link.from_json(item) for item in page["links"]]
        nxt = page.get("next")
    assert collected == steps
    none = body_of(ns.read(f"tm://{HOST}/many/1234?as=links&rel=tm:pins"))
    assert none["total"] == 0 and none["links"] == [] and "next" not in none


def test_link_cursors_are_bound_to_their_filtered_set() -> None:
    ns, _ = space()
    body = body_of(ns.read(f"tm://{HOST}/many/1234?as=links"))
    cursor = body["nextCursor"]
    for other in (
        f"tm://{HOST}/many/1234?as=links&rel=tm:data&cursor={cursor}",
        f"tm://{HOST}/many/1233?as=links&cursor={cursor}",
        f"tm://{HOST}/many/1234?as=links&min=2&cursor={cursor}",
    ):
        with pytest.raises(BadCursor) as refused:
            ns.read(other)
        assert refused.value.data["reason"] == "bad-cursor"
        assert refused.value.data["uri"] == other
        assert "expected" in refused.value.data


def test_as_links_refusals_echo_the_uri_asked() -> None:
    ns, _ = space()
    text = f"tm://{HOST}/many/250?as=links&depth=3"
    with pytest.raises(BadFacet) as refused:
        ns.read(text)
    assert refused.value.data == {"reason": "bad-facet", "uri": text, "valid": ["as"]}
    missing = f"tm://{HOST}/many/nope?as=links"
    with pytest.raises(NotFound) as not_found:
        ns.read(missing)
    assert not_found.value.data["uri"] == missing
    assert missing not in not_found.value.data["nearest"]
    with pytest.raises(BadCursor):
        ns.read(f"tm://{HOST}/many/250?as=links&cursor=")
