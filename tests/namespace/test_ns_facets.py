"""The parameter grammar, checked once before any mount touches its backend."""

from __future__ import annotations

import pytest

from tests.namespace.world import HOST
from tmsite.core.errors import BadFacet
from tmsite.core.facets import Facets, parse_facets
from tmsite.core.uri import parse

pytestmark = pytest.mark.spec("NS3", "NS4")

BASE = f"tm://{HOST}/fs/docs/a.json"


def facets(query: str) -> Facets:
    return parse_facets(parse(f"{BASE}?{query}"))


def refused(query: str) -> BadFacet:
    with pytest.raises(BadFacet) as caught:
        facets(query)
    assert caught.value.data["reason"] == "bad-facet"
    assert caught.value.data["uri"] == str(parse(f"{BASE}?{query}"))
    return caught.value


def test_good_values_parse() -> None:
    got = facets("n=100&depth=8&min=3&as=log&at=v1.0&rel=tm:found-in")
    assert (got.n, got.depth, got.minimum, got.facet, got.at, got.rel) == (
        100,
        8,
        3,
        "log",
        "v1.0",
        "tm:found-in",
    )
    assert got.given == {"n", "depth", "min", "as", "at", "rel"}
    assert facets("lines=2-2").lines == (2, 2)
    assert facets("range=0-999999999999999").byte_range == (0, 999_999_999_999_999)
    assert facets("pointer=").pointer == ""
    assert facets("pointer=/a~1b/~0/0").pointer == "/a~1b/~0/0"
    assert facets("").given == frozenset()


@pytest.mark.parametrize(
    ("name", "valid"), [("n", ["1-100"]), ("depth", ["1-8"]), ("min", ["1-999999999"])]
)
@pytest.mark.parametrize(
    "value",
    ["", "0", "１", "1_000", "+5", "-5", " 5", "5 ", "0x10", "1e3", "٣", "9" * 10, "9" * 400],
)
def test_numbers_are_ascii_digits_in_range(name: str, valid: list[str], value: str) -> None:
    refusal = refused(f"{name}={value.replace(' ', '%20').replace('+', '%2B')}")
    assert refusal.data["valid"] == valid


@pytest.mark.parametrize(("name", "high"), [("n", 101), ("depth", 9)])
def test_numbers_over_their_ceiling_are_refused(name: str, high: int) -> None:
    assert getattr(facets(f"{name}={high - 1}"), name) == high - 1
    refused(f"{name}={high}")


@pytest.mark.parametrize(
    "value", ["", "0-2", "3-2", "１-2", "1-２", "1_0-20", "-1-4", "1-", "-4", "1-2-3", "1", "a-b"]
)
def test_lines_grammar(value: str) -> None:
    refusal = refused(f"lines={value}")
    assert refusal.data["valid"] == ["lines=FIRST-LAST, 1-based, FIRST <= LAST"]


@pytest.mark.parametrize("value", ["", "5-5", "6-5", "-1-4", "0-", "0-1_0", "0-" + "9" * 16])
def test_range_grammar(value: str) -> None:
    refusal = refused(f"range={value}")
    assert refusal.data["valid"] == ["range=START-END, bytes, half-open, START < END"]


def test_one_part_at_a_time() -> None:
    refusal = refused("lines=1-2&range=0-4")
    assert refusal.data["valid"] == ["lines", "range"]
    refusal = refused("lines=1-2&pointer=/a&range=0-1")
    assert refusal.data["valid"] == ["lines", "pointer", "range"]


@pytest.mark.parametrize("value", ["", "STAT", "st at", "stat!", "x" * 17, "ｓｔａｔ"])
def test_facet_names_are_short_lowercase_words(value: str) -> None:
    refusal = refused(f"as={value.replace(' ', '%20')}")
    assert refusal.data["valid"] == []


@pytest.mark.parametrize("query", ["at=", "at=" + "a" * 256])
def test_at_is_bounded(query: str) -> None:
    refused(query)
    assert facets("at=" + "a" * 255).at == "a" * 255


@pytest.mark.parametrize("value", ["", "Up", "tm:", "tm:Source", "-up", "x" * 50, "tm:a b"])
def test_rel_grammar(value: str) -> None:
    refused(f"rel={value.replace(' ', '%20')}")


@pytest.mark.parametrize("value", ["a", "a/b", "/~2", "/~", "/" + "a" * 1024])
def test_pointer_grammar(value: str) -> None:
    refused(f"pointer={value}")


def test_require_names_what_is_valid() -> None:
    got = facets("depth=3&as=raw")
    with pytest.raises(BadFacet) as caught:
        got.require(BASE, ("as", "lines"), "a file")
    assert caught.value.data == {"reason": "bad-facet", "uri": BASE, "valid": ["as", "lines"]}
    with pytest.raises(BadFacet) as caught:
        got.require_facet(BASE, ("stat",), "a file")
    assert caught.value.data["valid"] == ["stat"]
