"""JSON-RPC 2.0 messages as this client reads and writes them, for both transports.

Decoding is strict (no NaN or Infinity, objects only); classification separates responses,
server→client requests and notifications; a server→client request is never acted on — it is
answered with -32601 (``ping`` excepted, which is answered with an empty result as the
specification asks of every party).

Spec: MCP.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from tmsite.mcpclient.errors import PeerError, ProtocolError, TooDeep, TooLarge
from tmsite.mcpclient.limits import MAX_DEPTH

JSONObject = dict[str, Any]
RequestId = int | str
Kind = Literal["response", "request", "notification"]

METHOD_NOT_FOUND = -32601

#: A JSON string, or an unterminated one running to the end. Possessive, so a run of escaped
#: quotes costs one pass, not one pass per quote.
_STRING = re.compile(rb'"(?:[^"\\]++|\\.?)*+(?:"|\Z)', re.DOTALL)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_OPEN = frozenset(b"[{")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def excerpt(raw: bytes | str, size: int = 200) -> str:
    """The first ``size`` characters of a message, for error reports."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    return text[:size]


def check_depth(raw: bytes, max_depth: int, part: str = "message") -> None:
    """Refuse JSON nested deeper than ``max_depth`` arrays and objects, without parsing it.

    Strings are skipped and the brackets outside them counted, in one pass and without
    recursion, so an answer a thousand levels deep is refused before any of it is built. Bytes
    that are not JSON are refused the same way when their brackets nest too deep; otherwise
    they are left for the parser to refuse.

    Raises:
        TooDeep: the nesting goes past ``max_depth``.
    """
    if raw.count(b"[") + raw.count(b"{") <= max_depth:
        return
    depth = 0
    for byte in _STRING.sub(b"", raw).translate(None, _NOT_BRACKET):
        if byte in _OPEN:
            depth += 1
            if depth > max_depth:
                raise TooDeep(part, max_depth)
        else:
            depth -= 1


def decode(raw: bytes, limit: int, *, max_depth: int = MAX_DEPTH, part: str = "message") -> Any:
    """Parse one message's bytes as JSON, refusing oversized or overdeep ones.

    More than ``limit`` bytes, or nesting deeper than ``max_depth``, is refused before parsing.

    Raises:
        TooLarge: the message is over the byte cap.
        TooDeep: the message is nested deeper than the depth cap (checked before parsing).
        ProtocolError: the bytes are not UTF-8 JSON.
    """
    if len(raw) > limit:
        raise TooLarge(part, limit, len(raw))
    check_depth(raw, max_depth, part)
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except RecursionError:
        # Only when max_depth is set past what the parser can nest.
        raise TooDeep(part, max_depth) from None
    except (UnicodeDecodeError, ValueError):
        raise ProtocolError(f"not a JSON {part}", excerpt(raw)) from None


def encode(message: JSONObject) -> bytes:
    """Serialise one message compactly (no newline)."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def request(sent_id: RequestId, method: str, params: JSONObject | None) -> JSONObject:
    """A request message: a notification's, with an id (``params`` left out when ``None``)."""
    return {"jsonrpc": "2.0", "id": sent_id, **notification(method, params)}


def notification(method: str, params: JSONObject | None) -> JSONObject:
    """A notification message: no id, no answer (``params`` left out when ``None``)."""
    message: JSONObject = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def classify(message: Any) -> Kind:
    """Say what a decoded message is, refusing anything that is not a JSON-RPC 2.0 message.

    Raises:
        ProtocolError: not an object, wrong ``jsonrpc``, a malformed id, method, result or error.
    """
    if not isinstance(message, dict):
        raise ProtocolError("a message must be a JSON object", excerpt(json.dumps(message)))
    if message.get("jsonrpc") != "2.0":
        raise ProtocolError('a message must carry "jsonrpc": "2.0"', excerpt(json.dumps(message)))
    if "method" in message:
        return _classify_call(message)
    _check_response(message)
    return "response"


def _classify_call(message: JSONObject) -> Kind:
    """A message with a method: a notification without an id, else a request.

    Raises:
        ProtocolError: the method is not a string, or the id neither a string nor an integer.
    """
    if not isinstance(message["method"], str):
        raise ProtocolError("a method must be a string", excerpt(json.dumps(message)))
    if "id" not in message:
        return "notification"
    if not _valid_id(message["id"]):
        raise ProtocolError("a request id must be a string or an integer")
    return "request"


def _check_response(message: JSONObject) -> None:
    """Refuse a response that is malformed: its id, its result or its error.

    A null id is allowed on an error only (the server could not read the request).

    Raises:
        ProtocolError: not exactly one of result and error, no id or a bad one, a result that
            is not an object, an error without an integer code and a string message.
    """
    has_result, has_error = "result" in message, "error" in message
    if has_result == has_error:
        raise ProtocolError(
            "a response needs exactly one of result and error", excerpt(json.dumps(message))
        )
    if "id" not in message:
        raise ProtocolError("a response must carry an id", excerpt(json.dumps(message)))
    rid = message["id"]
    if not (_valid_id(rid) or (rid is None and has_error)):
        raise ProtocolError("a response id must be a string or an integer")
    if has_result and not isinstance(message["result"], dict):
        raise ProtocolError("a result must be an object", excerpt(json.dumps(message)))
    if has_error and not _is_error_object(message["error"]):
        raise ProtocolError(
            "an error needs an integer code and a string message", excerpt(json.dumps(message))
        )


def _is_error_object(error: Any) -> bool:
    """Whether a response's ``error`` is an object with an integer code and a string message."""
    return (
        isinstance(error, dict)
        and isinstance(error.get("code"), int)
        and not isinstance(error.get("code"), bool)
        and isinstance(error.get("message"), str)
    )


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def result_of(
    message: JSONObject, sent_id: RequestId, method: str, *, status: int | None = None
) -> JSONObject:
    """The result of a classified response to request ``sent_id``.

    An error response with a null id (the server could not read the request) is taken as the
    answer to the one request in flight.

    Raises:
        ProtocolError: the response answers an id that was never sent.
        PeerError: the response is a JSON-RPC error.
    """
    rid = message.get("id")
    if rid is not None and (rid != sent_id or type(rid) is not type(sent_id)):
        raise ProtocolError(f"response to an id never sent ({rid!r}; waiting for {sent_id!r})")
    if "error" in message:
        error = message["error"]
        raise PeerError(
            error["code"], error["message"], data=error.get("data"), method=method, status=status
        )
    result: JSONObject = message["result"]
    return result


def answer_to(request: JSONObject) -> JSONObject:
    """The client's answer to a server→client request: -32601, never an action.

    ``ping`` is answered with an empty result; sampling, elicitation, roots and anything else
    are refused, because this client declares none of those capabilities.
    """
    if request["method"] == "ping":
        return {"jsonrpc": "2.0", "id": request["id"], "result": {}}
    return {
        "jsonrpc": "2.0",
        "id": request["id"],
        "error": {
            "code": METHOD_NOT_FOUND,
            "message": f"Method not found: this client does not offer {request['method']}",
        },
    }
