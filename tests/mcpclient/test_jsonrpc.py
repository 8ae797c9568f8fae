"""The message rules both transports share: what is refused, and with which fields."""

from __future__ import annotations

import pytest

from tmsite.mcpclient import PeerError, ProtocolError, TooLarge
from tmsite.mcpclient.jsonrpc import answer_to, classify, decode, result_of


@pytest.mark.parametrize(
    ("raw", "what"),
    [
        (b'{"jsonrpc":"2.0","id":1,"result":NaN}', "not a JSON message"),
        (b'{"jsonrpc":"2.0","id":1,"result":Infinity}', "not a JSON message"),
        (b"\xff\xfe{}", "not a JSON message"),
        (b"[" * 100_000 + b"]" * 100_000, "not a JSON message"),
    ],
)
def test_decode_refuses(raw: bytes, what: str) -> None:
    with pytest.raises(ProtocolError) as bad:
        decode(raw, 1 << 30)
    assert bad.value.what == what


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
