"""Query parameters: their grammar, checked once, before any mount touches its backend.

Representation (``as``), revision (``at``), sizes (``n``, ``depth``), parts (``lines``,
``pointer``, ``range``), link filters (``rel``, ``min``) and paging (``cursor``). Numbers are
ASCII digits only — no sign, no ``_``, no Unicode digits, no more than nine of them. Which
parameters a target honours is the mount's to say (``Facets.require``); an unknown one is
refused ``bad-facet`` naming the valid ones. An unknown ``as`` value is an :class:`UnknownFacet`,
whose ``valid`` list the namespace completes with the facets it answers for every address
(``links``, ``blocks``): what a thing serves is said where it is served.

Spec: NS3, NS4.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from tmsite.core.errors import BadFacet
from tmsite.core.uri import PARAM_ORDER, TmUri

KNOWN_PARAMS: frozenset[str] = frozenset(PARAM_ORDER)
PART_PARAMS: tuple[str, ...] = ("lines", "pointer", "range")
_NUMBER = re.compile(r"[0-9]{1,9}", re.ASCII)
_SPAN = re.compile(r"([0-9]{1,15})-([0-9]{1,15})", re.ASCII)
_FACET = re.compile(r"[a-z]{1,16}", re.ASCII)
_REL = re.compile(r"(tm:)?[a-z][a-z-]{0,40}", re.ASCII)
_POINTER_TOKEN_ESCAPE = re.compile(r"~(?![01])")
MAX_POINTER_LENGTH = 1024
MAX_AT_LENGTH = 255


class UnknownFacet(BadFacet):
    """An ``as`` value the target does not serve; ``valid`` names those it does.

    Args:
        uri: the address refused.
        what: the kind of target, for the message ("a file").
        asked: the ``as`` value asked for.
        valid: the facets served.
    """

    def __init__(self, uri: str | None, what: str, asked: str, valid: Iterable[str]) -> None:
        self.what = what
        self.asked = asked
        self.offered = list(valid)
        offers = ", ".join(self.offered) or "none"
        super().__init__(uri, f"{what} has no ?as={asked}; it offers {offers}", valid=self.offered)

    def offering(self, more: Iterable[str]) -> UnknownFacet:
        """The same refusal, with the facets in ``more`` it did not name added to ``valid``."""
        added = [facet for facet in more if facet not in self.offered]
        return UnknownFacet(self.uri, self.what, self.asked, [*self.offered, *added])


@dataclass(frozen=True)
class Facets:
    """The parsed parameters of one request.

    Attributes:
        facet: ``as``, the representation asked for, or None for the target's default.
        at: A ref or date, unparsed (the mount that honours it validates it).
        n: ``n``, a count for logs.
        depth: ``depth`` for trees.
        lines: ``(first, last)``, 1-based, inclusive.
        pointer: An RFC 6901 JSON pointer (``""`` is the whole document).
        byte_range: ``(start, end)``, half-open.
        rel: A link relation filter.
        minimum: ``min``, the least ``count`` a link must carry.
        cursor: An opaque paging cursor.
    """

    facet: str | None = None
    at: str | None = None
    n: int | None = None
    depth: int | None = None
    lines: tuple[int, int] | None = None
    pointer: str | None = None
    byte_range: tuple[int, int] | None = None
    rel: str | None = None
    minimum: int | None = None
    cursor: str | None = None
    given: frozenset[str] = frozenset()

    @property
    def part(self) -> str | None:
        """The one part parameter given, if any."""
        for name in PART_PARAMS:
            if name in self.given:
                return name
        return None

    def require(self, uri: str, allowed: Iterable[str], what: str) -> None:
        """Refuse any parameter outside ``allowed`` for this target (``what`` names it)."""
        allowed_set = frozenset(allowed)
        extra = sorted(self.given - allowed_set)
        if extra:
            valid = sorted(allowed_set)
            raise BadFacet(
                uri,
                f"{what} takes no {', '.join(repr(e) for e in extra)} parameter; "
                f"it takes {', '.join(valid) if valid else 'no parameters'}",
                valid=valid,
            )

    def require_facet(self, uri: str, valid: Iterable[str], what: str) -> None:
        """Refuse an ``as`` value that ``what`` cannot honour."""
        valid_list = list(valid)
        if self.facet is not None and self.facet not in valid_list:
            raise UnknownFacet(uri, what, self.facet, valid_list)


def parse_facets(uri: TmUri) -> Facets:
    """Check the grammar of every parameter of ``uri``.

    Raises:
        BadFacet: an unknown parameter, or a value out of its grammar.
    """
    text = str(uri)
    values = uri.query
    unknown = sorted(set(values) - KNOWN_PARAMS)
    if unknown:
        raise BadFacet(
            text,
            f"unknown parameter {unknown[0]!r}; the parameters are {', '.join(PARAM_ORDER)}",
            valid=list(PARAM_ORDER),
        )
    parts = [name for name in PART_PARAMS if name in values]
    if len(parts) > 1:
        raise BadFacet(text, "ask for one part at a time: lines, pointer or range", valid=parts)
    facet = values.get("as")
    if facet is not None and not _FACET.fullmatch(facet):
        raise BadFacet(text, "as= takes a facet name such as stat, raw or log", valid=[])
    at = values.get("at")
    if at is not None and not (0 < len(at) <= MAX_AT_LENGTH):
        raise BadFacet(text, f"at= takes a ref or a date of at most {MAX_AT_LENGTH} characters")
    rel = values.get("rel")
    if rel is not None and not _REL.fullmatch(rel):
        raise BadFacet(text, "rel= takes a relation name such as tm:source or up")
    pointer = values.get("pointer")
    if pointer is not None:
        _check_pointer(text, pointer)
    return Facets(
        facet=facet,
        at=at,
        n=_number(text, values, "n", 1, 100),
        depth=_number(text, values, "depth", 1, 8),
        lines=_span(text, values, "lines", inclusive=True),
        pointer=pointer,
        byte_range=_span(text, values, "range", inclusive=False),
        rel=rel,
        minimum=_number(text, values, "min", 1, 10**9 - 1),
        cursor=values.get("cursor"),
        given=frozenset(values),
    )


def _number(text: str, values: dict[str, str], name: str, low: int, high: int) -> int | None:
    raw = values.get(name)
    if raw is None:
        return None
    if not _NUMBER.fullmatch(raw) or not low <= int(raw) <= high:
        raise BadFacet(
            text,
            f"{name}= takes a whole number from {low} to {high} (ASCII digits), not {raw[:40]!r}",
            valid=[f"{low}-{high}"],
        )
    return int(raw)


def _span(
    text: str, values: dict[str, str], name: str, *, inclusive: bool
) -> tuple[int, int] | None:
    raw = values.get(name)
    if raw is None:
        return None
    match = _SPAN.fullmatch(raw)
    if inclusive:
        shape = f"{name}=FIRST-LAST, 1-based, FIRST <= LAST"
        ok = match is not None and 1 <= int(match[1]) <= int(match[2])
    else:
        shape = f"{name}=START-END, bytes, half-open, START < END"
        ok = match is not None and int(match[1]) < int(match[2])
    if not ok or match is None:
        raise BadFacet(text, f"{shape}; not {raw[:40]!r}", valid=[shape])
    return int(match[1]), int(match[2])


def _check_pointer(text: str, pointer: str) -> None:
    if len(pointer) > MAX_POINTER_LENGTH:
        raise BadFacet(text, f"pointer= is longer than {MAX_POINTER_LENGTH} characters")
    if pointer and not pointer.startswith("/"):
        raise BadFacet(text, "pointer= is an RFC 6901 JSON pointer: empty, or starting with /")
    if _POINTER_TOKEN_ESCAPE.search(pointer):
        raise BadFacet(text, "pointer= escapes ~ as ~0 and / as ~1; no other ~ is allowed")
