"""The message rules both transports share: what is refused, and with which fields."""

from __future__ import annotations

import contextlib
import time

import pytest

from tmsite.mcpclient import PeerError, ProtocolError, TooDeep, TooLarge
from tmsite.mcpclient.jsonrpc import answer_to, check_depth, classify, decode, result_of

pytestmark = pytest.mark.spec("MCP")


@pytest.mark.parametrize(
    ("raw", "what"),
    [
        (b'{"jsonrpc":"2.0","id":1,"result":NaN}', "not a JSON message"),
        (b'{"jsonrpc":"2.0","id":1,"result":Infinity}', "not a JSON message"),
        (b"\xff\xfe{}", "not a JSON message"),
        (b"[" * 100_000 + b"]" * 100_000, "message nested deeper than 64 levels"),
    ],
)
def test_decode_refuses(raw: bytes, what: str) -> None:
    with pytest.raises(ProtocolError) as bad:
        decode(raw, 1 << 30)
    assert bad.value.what == what


def _nested(levels: int) -> bytes:
    """Objects and arrays in turn, ``levels`` deep: ``{"a":[{"a":0}]}`` for 3."""
    opens = [b'{"a":' if level % 2 == 0 else b"[" for level in range(levels)]
    closes = [b"}" if level % 2 == 0 else b"]" for level in reversed(range(levels))]
    return b"".join(opens) + b"0" + b"".join(closes)


@pytest.mark.parametrize("levels", [1, 2, 63, 64])
def test_decode_accepts_nesting_up_to_the_cap(levels: int) -> None:
    assert decode(_nested(levels), 1 << 30) is not None


@pytest.mark.parametrize("levels", [65, 66, 1000, 1_000_000])
def test_decode_refuses_nesting_past_the_cap(levels: int) -> None:
    with pytest.raises(TooDeep) as deep:
        decode(_nested(levels), 1 << 30)
    assert (deep.value.part, deep.value.limit) == ("message", 64)
    assert deep.value.what == "message nested deeper than 64 levels"
    assert deep.value.what in str(deep.value)


def test_decode_takes_its_depth_cap_from_the_caller() -> None:
    assert decode(_nested(3), 100, max_depth=3) == {"a": [{"a": 0}]}
    with pytest.raises(TooDeep) as deep:
        decode(_nested(4), 100, max_depth=3, part="text")
    assert (deep.value.part, deep.value.limit) == ("text", 3)


@pytest.mark.parametrize(
    "raw",
    [
        b'["' + b"[" * 100 + b'"]',  # brackets inside a string are not nesting
        b'["\\"' + b"{" * 100 + b'"]',  # an escaped quote does not end the string
        b'{"' + b"[" * 100 + b'":1}',  # nor in a key
        b"[" + b"[]," * 10_000 + b"[]]",  # wide, not deep
    ],
)
def test_depth_counts_brackets_outside_strings_only(raw: bytes) -> None:
    check_depth(raw, 2)


@pytest.mark.parametrize(
    "raw",
    [
        b'["\\\\",' + b"[" * 3 + b"]" * 3 + b"]",  # the string ends after an escaped backslash
        b'["x"' + b"[" * 3 + b'"y"' + b"]" * 3 + b"]",
        b"[" * 10,  # unclosed
    ],
)
def test_depth_is_refused_past_the_cap_around_strings(raw: bytes) -> None:
    with pytest.raises(TooDeep):
        check_depth(raw, 3)


def test_depth_check_is_linear_in_hostile_strings() -> None:
    # Runs of escaped quotes and unterminated strings cost one pass, not one pass per quote.
    for raw in (
        b'"' + b'\\"' * (1 << 20),
        b'"' + b'\\"' * (1 << 20) + b"\\",
        b'"' * (2 << 20) + b"[" * 100,
    ):
        started = time.monotonic()
        with contextlib.suppress(TooDeep):
            check_depth(raw, 64)
        assert time.monotonic() - started < 2.0


def test_decode_caps_bytes() -> None:
    with pytest.raises(TooLarge) as big:
        decode(b"{}" + b" " * 99, 100)
    assert (big.value.what, big.value.limit, big.value.seen) == ("message", 100, 101)


@pytest.mark.parametrize(
    ("message", "what"),
    [
        ([], "a message must be a JSON object"),
        ({"jsonrpc": "1.0", "id": 1, "result": {}}, 'a message must carry "jsonrpc": "2.0"'),
        ({"jsonrpc": "2.0", "id": 1}, "a response needs exactly one of result and error"),
        (
            {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {}},
            "a response needs exactly one of result and error",
        ),
        ({"jsonrpc": "2.0", "result": {}}, "a response must carry an id"),
        (
            {"jsonrpc": "2.0", "id": 1.5, "result": {}},
            "a response id must be a string or an integer",
        ),
        (
            {"jsonrpc": "2.0", "id": True, "result": {}},
            "a response id must be a string or an integer",
        ),
        (
            {"jsonrpc": "2.0", "id": None, "result": {}},
            "a response id must be a string or an integer",
        ),
        ({"jsonrpc": "2.0", "id": 1, "result": []}, "a result must be an object"),
        (
            {"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": "m"}},
            "an error needs an integer code and a string message",
        ),
        (
            {"jsonrpc": "2.0", "id": 1, "error": {"code": True, "message": "m"}},
            "an error needs an integer code and a string message",
        ),
        (
            {"jsonrpc": "2.0", "id": 1, "error": {"code": -32000}},
            "an error needs an integer code and a string message",
        ),
        ({"jsonrpc": "2.0", "id": 1, "method": 7}, "a method must be a string"),
        (
            {"jsonrpc": "2.0", "id": {}, "method": "ping"},
            "a request id must be a string or an integer",
        ),
    ],
)
def test_classify_refuses(message: object, what: str) -> None:
    with pytest.raises(ProtocolError) as bad:
        classify(message)
    assert bad.value.what == what


def test_classify_kinds() -> None:
    assert classify({"jsonrpc": "2.0", "method": "notifications/progress"}) == "notification"
    assert classify({"jsonrpc": "2.0", "id": "s1", "method": "roots/list"}) == "request"
    assert classify({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "x"}}) == (
        "response"
    )


def test_result_of_matches_the_id_sent() -> None:
    assert result_of({"jsonrpc": "2.0", "id": 4, "result": {"a": 1}}, 4, "m") == {"a": 1}
    with pytest.raises(ProtocolError) as stray:
        result_of({"jsonrpc": "2.0", "id": "4", "result": {}}, 4, "m")
    assert stray.value.what == "response to an id never sent ('4'; waiting for 4)"
    with pytest.raises(PeerError) as parse:
        result_of(
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "bad"}}, 4, "m"
        )
    assert (parse.value.code, parse.value.message, parse.value.method) == (-32700, "bad", "m")


def test_server_requests_are_refused_but_ping_is_answered() -> None:
    assert answer_to({"jsonrpc": "2.0", "id": 1, "method": "ping"}) == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {},
    }
    assert answer_to({"jsonrpc": "2.0", "id": "e", "method": "elicitation/create"}) == {
        "jsonrpc": "2.0",
        "id": "e",
        "error": {
            "code": -32601,
            "message": "Method not found: this client does not offer elicitation/create",
        },
    }
