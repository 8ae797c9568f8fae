"""Typed links: the one constructor, the one order, the one cap.

IANA relations carry no confidence; every ``tm:`` relation says ``exact``, ``inferred`` or
``low`` — the constructor asserts it, so a link cannot be built wrong.

Spec: LK1, LK3, LK4.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

Confidence = Literal["exact", "inferred", "low"]
CONFIDENCES: tuple[Confidence, ...] = ("exact", "inferred", "low")

IANA_RELS: frozenset[str] = frozenset(
    {
        "up",
        "collection",
        "item",
        "alternate",
        "describedby",
        "version-history",
        "latest-version",
        "help",
        "next",
    }
)

#: The paired relations, each with its inverse. The link walk proves both ends exist.
_PAIRS: tuple[tuple[str, str], ...] = (
    ("tm:source", "tm:renders-as"),
    ("tm:generated-by", "tm:generates"),
    ("tm:repository", "tm:working-copy"),
    ("tm:data", "tm:read-by"),
    ("tm:step", "tm:step-of"),
    ("tm:found-in", "tm:exhibits"),
    ("tm:instance", "tm:instance-of"),
    ("tm:demonstrated-by", "tm:demonstrates"),
    ("tm:measures", "tm:measured-by"),
    ("tm:input", "tm:input-of"),
    ("tm:changed-by", "tm:changes"),
)
#: Each paired relation and its inverse, both ways.
INVERSE: dict[str, str] = {**dict(_PAIRS), **{inverse: rel for rel, inverse in _PAIRS}}
#: tm: relations with no inverse.
ONE_WAY: frozenset[str] = frozenset({"tm:read-with", "tm:pins", "tm:cartridge", "tm:links"})
TM_RELS: frozenset[str] = frozenset(INVERSE) | ONE_WAY

#: At most this many links on one read; past it the last is ``tm:links`` to ``?as=links``.
LINK_CAP = 100


@dataclass(frozen=True)
class Link:
    """One typed link from the thing read to ``href``.

    Attributes:
        rel: An IANA relation or a ``tm:`` relation.
        href: A complete tm:// URI (built by ``tmsite.core.uri``).
        confidence: Required on ``tm:`` relations, absent on IANA ones.
        title: What the target is, for people.
        count: How many occurrences this one link stands for.
        type: The target's media type, when known without reading it.
        provenance: ``curated`` for a link a maintainer approved rather than one derived.
    """

    rel: str
    href: str
    confidence: Confidence | None = None
    title: str | None = None
    count: int | None = None
    type: str | None = None
    provenance: str | None = None

    def __post_init__(self) -> None:
        if self.rel.startswith("tm:"):
            assert self.rel in TM_RELS, f"unknown tm: relation {self.rel!r}"
            assert self.confidence in CONFIDENCES, f"{self.rel} needs a confidence"
        else:
            assert self.rel in IANA_RELS, f"unknown relation {self.rel!r}"
            assert self.confidence is None, f"IANA relation {self.rel} carries no confidence"
        assert self.href.startswith("tm://"), f"href must be a tm:// URI, not {self.href!r}"

    def to_json(self) -> dict[str, Any]:
        """The wire form: ``rel`` and ``href``, then only the optional fields that are set."""
        out: dict[str, Any] = {"rel": self.rel, "href": self.href}
        if self.confidence is not None:
            out["confidence"] = self.confidence
        if self.title is not None:
            out["title"] = self.title
        if self.count is not None:
            out["count"] = self.count
        if self.type is not None:
            out["type"] = self.type
        if self.provenance is not None:
            out["provenance"] = self.provenance
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Link:
        """The link a :meth:`to_json` dict stands for, checked again by the constructor."""
        return cls(
            rel=data["rel"],
            href=data["href"],
            confidence=data.get("confidence"),
            title=data.get("title"),
            count=data.get("count"),
            type=data.get("type"),
            provenance=data.get("provenance"),
        )


def sort_key(link: Link) -> tuple[int, str, str]:
    """IANA first, then exact, inferred, low; within each by relation, then href."""
    group = 0 if link.confidence is None else 1 + CONFIDENCES.index(link.confidence)
    return (group, link.rel, link.href)


def order(links: Iterable[Link]) -> list[Link]:
    """The one link order, duplicates (same rel and href) removed, the first kept."""
    seen: set[tuple[str, str]] = set()
    unique: list[Link] = []
    for link in links:
        key = (link.rel, link.href)
        if key not in seen:
            seen.add(key)
            unique.append(link)
    return sorted(unique, key=sort_key)


def cap(links: list[Link], links_uri: str) -> list[Link]:
    """At most ``LINK_CAP`` links; past it, the last one is ``tm:links`` to every link."""
    if len(links) <= LINK_CAP:
        return links
    overflow = Link(
        "tm:links",
        links_uri,
        "exact",
        title=f"all {len(links)} links, page by page",
        count=len(links),
    )
    return [*links[: LINK_CAP - 1], overflow]


def filtered(links: Iterable[Link], rel: str | None, minimum: int | None) -> list[Link]:
    """The links of one relation and/or with at least ``minimum`` occurrences."""
    out = []
    for link in links:
        if rel is not None and link.rel != rel:
            continue
        if minimum is not None and (link.count if link.count is not None else 1) < minimum:
            continue
        out.append(link)
    return out
