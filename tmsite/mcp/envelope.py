"""The JSON-RPC envelope, shared by the HTTP and stdio transports.

This module turns bytes into classified messages, decides which protocol era a request speaks,
runs it through ``tmsite.mcp.methods.dispatch`` and turns the outcome into a response object. It
knows nothing of HTTP status lines or stdin; ``endpoint.py`` and ``stdio.py`` add those.

Where each rule comes from:

* **Strict JSON** (no NaN/Infinity, no lone surrogates, UTF-8 only, nesting at most
  ``MAX_DEPTH``): RFC 8259 §6–§8 and the I-JSON profile (RFC 7493 §2.1–2.2), which MCP inherits
  through JSON-RPC 2.0; ``NaN`` is not JSON at all. Python's ``json`` accepts all of these by
  default, so each is refused explicitly as a parse error (-32700).
* **Message shapes**: JSON-RPC 2.0 §4–§5 — ``jsonrpc`` must be ``"2.0"``; a request's ``id`` is a
  string or a number, and MCP narrows it to a string or an integer, never ``null``
  (``basic/index.mdx`` of every revision), so ``null``, floats, booleans, objects and arrays are
  -32600. A message without ``id`` is a notification and is never answered (JSON-RPC §4.1),
  whatever its method. An error whose request id could not be read carries no ``id`` member: the
  2025-11-25 and 2026-07-28 schemas make ``JSONRPCErrorResponse.id`` optional and typed
  string/integer, so an absent id validates where ``"id": null`` would not; the transports page
  says such a body "has no ``id``".
* **Batches**: allowed by 2025-03-26 (``basic/transports.mdx``), removed in 2025-06-18 (PR #416);
  a request without ``MCP-Protocol-Version`` counts as 2025-03-26 (2025-06-18 transports page).
* **The 2026-07-28 envelope** (``schema/2026-07-28`` ``RequestMetaObject``,
  ``basic/versioning.mdx``, ``basic/transports/streamable-http.mdx`` §Request Metadata and
  §Server Validation): every request carries ``params._meta`` with
  ``io.modelcontextprotocol/protocolVersion`` and
  ``io.modelcontextprotocol/clientCapabilities`` (``clientInfo`` is optional, PR #3002); missing
  ones are -32602 with HTTP 400 (the official conformance suite's ``server-stateless`` scenario,
  matching the reference SDK's validation ladder in ``mcp.shared.inbound``). Over HTTP the
  ``MCP-Protocol-Version`` header must equal that ``_meta`` value, ``Mcp-Method`` must equal the
  method and ``Mcp-Name`` (base64 sentinel ``=?base64?…?=`` decoded, surrounding whitespace
  ignored per RFC 9110 §5.5) must equal ``params.name`` (``tools/call``, ``prompts/get``) or
  ``params.uri`` (``resources/read``); a missing or different header is ``HeaderMismatch``
  (-32020, HTTP 400). The header rung runs before the version rung, so a client that disagrees
  with itself is told so. A version we do not serve is ``UnsupportedProtocolVersionError``
  (-32022, HTTP 400) with ``data = {supported, requested}``. A dual-era server serves a request
  that carries the modern ``_meta`` statelessly and an ``initialize`` with legacy semantics
  (``versioning.mdx`` §Backward Compatibility).
* **Unknown methods in 2026-07-28** answer -32601 with HTTP **404** (streamable-http.mdx: "If the
  server does not implement the requested RPC method, it MUST respond with 404 Not Found");
  ``ping``, ``initialize`` and ``resources/subscribe`` are among them in that era. In the
  initialize era every error inside a well-formed request travels in HTTP 200, because SDK
  clients drop the session on a 4xx.
* **Notifications in 2026-07-28**: 202 with no body, as in every revision (streamable-http.mdx
  §Sending Messages item 5; the revision defines no client-to-server notifications over HTTP,
  so they are accepted and dropped). **Client-sent responses**: the 2025 era accepts them (202);
  2026-07-28 says clients MUST NOT send them, so they are -32600 with HTTP 400.
* **Results in 2026-07-28** carry ``_meta["io.modelcontextprotocol/serverInfo"]``
  (``ResultMetaObject``: servers SHOULD include it on every response).
* **Internal failures**: -32603 with a generic message and the request's id; the failure goes to
  the log (stderr, ``tmsite.oplog.failures``: one traceback, then a line a minute while it
  lasts), never onto the wire.

Spec: T3, T5, T6, T7.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

from tmsite.mcp.lifecycle import SERVER_INFO_META_KEY, server_info
from tmsite.mcp.protocol import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    STATELESS_VERSION,
    SUPPORTED_VERSIONS,
    UNSUPPORTED_VERSION,
    CallContext,
    RpcError,
    StreamResult,
)
from tmsite.oplog import failures, hooks

#: The largest body or line accepted, in bytes.
MAX_BODY_BYTES = 4 * 1024 * 1024
#: The deepest nesting of arrays and objects accepted in one message.
MAX_DEPTH = 64

META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
#: Method → the params member mirrored in the ``Mcp-Name`` header (2026-07-28).
NAME_BEARING_METHODS: Mapping[str, str] = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
}

RequestId = str | int
#: Marks an error response that has no ``id`` member.
NO_ID: None = None

Kind = Literal["request", "notification", "response"]


class ParseFailure(Exception):
    """The bytes are not one strict JSON text (answered with -32700)."""


class EnvelopeRefusal(Exception):
    """An envelope refusal: a JSON-RPC error sent with a 4xx status over HTTP.

    Attributes:
        status: The HTTP status the HTTP transport answers with.
        code: The JSON-RPC error code.
        message: One sentence saying what was wrong.
        id: The request id to echo, or ``None`` for an error without an ``id`` member.
        data: Optional ``error.data``.
    """

    def __init__(
        self,
        status: int,
        code: int,
        message: str,
        id: RequestId | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.id = id
        self.data = data

    def body(self) -> dict[str, Any]:
        """The JSON-RPC error response this refusal is answered with."""
        return error_response(self.id, self.code, self.message, self.data)


@dataclass(frozen=True)
class Message:
    """One well-formed JSON-RPC message."""

    kind: Kind
    raw: dict[str, Any]
    id: RequestId | None = None
    method: str = ""

    @property
    def params(self) -> Any:
        """The raw ``params`` member, unchecked (``None`` when absent)."""
        return self.raw.get("params")


@dataclass
class Answer:
    """What one request came to: the serialized response and its error code, if any.

    ``data`` is the response in UTF-8 when it was made as bytes already (a prepared answer),
    else made from ``text`` the first time :meth:`encoded` is asked (once for the log's size
    and the body alike). ``stream``: the request is to be held open as a stream (``text`` is
    empty: the transport that offered it sends what it delivers). ``status``: the HTTP status
    of an error that names its own.
    """

    text: str
    error_code: int | None = None
    result: dict[str, Any] | None = None
    data: bytes | None = None
    stream: StreamResult | None = None
    status: int | None = None

    def encoded(self) -> bytes:
        """The response as sent: ``text`` in UTF-8."""
        if self.data is None:
            self.data = self.text.encode("utf-8")
        return self.data


# --- parsing --------------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ParseFailure(f"{name} is not a JSON value")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ParseFailure(f"the number {text[:40]} is out of range")
    return value


#: ``json.loads`` with these hooks, made once (``json.loads`` makes a decoder per call).
_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)


def _check_tree(value: Any) -> None:
    """Refuse nesting deeper than ``MAX_DEPTH`` and strings holding lone surrogates."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, str):
            _check_string(node)
        elif isinstance(node, dict | list):
            if depth >= MAX_DEPTH:
                raise ParseFailure(f"JSON nested deeper than {MAX_DEPTH} levels")
            if isinstance(node, dict):
                for key, child in node.items():
                    _check_string(key)
                    stack.append((child, depth + 1))
            else:
                stack.extend((child, depth + 1) for child in node)


def _check_string(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ParseFailure("a string holds a lone UTF-16 surrogate") from None


def loads_strict(raw: bytes) -> Any:
    """Parse one JSON text strictly.

    Raises:
        ParseFailure: invalid UTF-8, invalid JSON, NaN/Infinity, a number out of range, a lone
            surrogate, or nesting deeper than ``MAX_DEPTH``.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ParseFailure("the body is not valid UTF-8") from None
    try:
        if text.startswith("\ufeff"):  # as json.loads refuses it
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        value = _DECODER.decode(text)
    except ParseFailure:
        raise
    except RecursionError:
        raise ParseFailure(f"JSON nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        raise ParseFailure(f"invalid JSON: {exc.msg} at {where}") from None
    except ValueError:
        raise ParseFailure("invalid JSON: a number is too long") from None
    if _may_hold_more_than_tree_checks(text):
        _check_tree(value)
    return value


def _may_hold_more_than_tree_checks(text: str) -> bool:
    r"""Whether ``text`` could nest past ``MAX_DEPTH`` or decode to a lone surrogate.

    Nesting that deep takes more than ``MAX_DEPTH`` opening brackets, and a surrogate in valid
    UTF-8 text can only come from a ``\u`` escape; a text with neither is refused by no check
    of :func:`_check_tree`, which is left out for it (most requests).
    """
    return "\\u" in text or text.count("{") + text.count("[") > MAX_DEPTH


# --- messages -------------------------------------------------------------------------------


def valid_id(value: Any) -> bool:
    """MCP request ids are strings or integers (never null, a float or a boolean)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def classify(value: Any) -> Message:
    """Classify one decoded JSON value as a request, notification or client-sent response.

    Raises:
        EnvelopeRefusal: -32600 (status 400) when it is not a JSON-RPC 2.0 message; the id is
            echoed only when it is a valid one.
    """
    if not isinstance(value, dict):
        raise EnvelopeRefusal(400, INVALID_REQUEST, "A JSON-RPC message must be a JSON object.")
    has_id = "id" in value
    rid = value.get("id")
    echo: RequestId | None = rid if has_id and valid_id(rid) else None
    if value.get("jsonrpc") != "2.0":
        raise EnvelopeRefusal(400, INVALID_REQUEST, 'The "jsonrpc" member must be "2.0".', echo)
    if has_id and echo is None:
        raise EnvelopeRefusal(
            400, INVALID_REQUEST, 'The "id" member must be a string or an integer.', NO_ID
        )
    if "method" not in value:
        if has_id and ("result" in value or "error" in value):
            return Message("response", value, echo)
        raise EnvelopeRefusal(400, INVALID_REQUEST, 'A request needs a "method" member.', echo)
    method = value["method"]
    if not isinstance(method, str) or not method:
        raise EnvelopeRefusal(
            400, INVALID_REQUEST, 'The "method" member must be a non-empty string.', echo
        )
    return Message("request" if has_id else "notification", value, echo, method)


def error_response(
    id: RequestId | None, code: int, message: str, data: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A JSON-RPC error response; ``id=None`` leaves the ``id`` member out."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    body: dict[str, Any] = {"jsonrpc": "2.0"}
    if id is not None:
        body["id"] = id
    body["error"] = error
    return body


def dumps(body: Any) -> str:
    """Serialize a response compactly; strings that cannot be UTF-8 are escaped."""
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(body, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    return text


def unsupported_version(requested: str, id: RequestId | None) -> EnvelopeRefusal:
    """``UnsupportedProtocolVersionError``: the versions served and the one asked for."""
    return EnvelopeRefusal(
        400,
        UNSUPPORTED_VERSION,
        f"Unsupported protocol version {requested[:64]!r}.",
        id,
        {"supported": sorted(SUPPORTED_VERSIONS, reverse=True), "requested": requested},
    )


def modern_meta(message: Message) -> dict[str, Any] | None:
    """The request's ``_meta`` when it carries the 2026-07-28 protocol-version key."""
    params = message.params
    if isinstance(params, dict):
        meta = params.get("_meta")
        if isinstance(meta, dict) and META_PROTOCOL_VERSION in meta:
            return meta
    return None


def decode_header_value(value: str) -> str | None:
    """Undo the ``=?base64?…?=`` sentinel; ``None`` when the sentinel is malformed."""
    value = value.strip(" \t")
    if not (value.startswith("=?base64?") and value.endswith("?=") and len(value) >= 11):
        return value
    payload = value[len("=?base64?") : -2]
    try:
        decoded = base64.b64decode(payload, validate=True)
        if base64.b64encode(decoded).decode("ascii") != payload:
            return None
        return decoded.decode("utf-8")
    except (binascii.Error, ValueError):
        return None


def check_modern(
    message: Message,
    headers: Mapping[str, str] | None,
    *,
    delivers: bool = False,
    exchange: hooks.Exchange | None = None,
) -> CallContext:
    """Run the 2026-07-28 envelope ladder over one request.

    Args:
        message: The request.
        headers: Lower-cased HTTP headers, or ``None`` on stdio (no header rung).
        delivers: Whether the server answering delivers subscriptions (the context's).
        exchange: The request as the log keeps it (the context's).

    Returns:
        The call context of a request that passed every rung.

    Raises:
        EnvelopeRefusal: -32602 for a missing envelope, -32020 for a header that is missing or
            differs from the body, -32022 for a version not served — each with HTTP status 400.
    """
    rid = message.id
    params = message.params
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict):
        raise EnvelopeRefusal(
            400,
            INVALID_PARAMS,
            f"params._meta must be an object carrying {META_PROTOCOL_VERSION!r} and "
            f"{META_CLIENT_CAPABILITIES!r}.",
            rid,
        )
    missing = [k for k in (META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES) if k not in meta]
    if missing:
        raise EnvelopeRefusal(
            400, INVALID_PARAMS, f"params._meta is missing {', '.join(missing)}.", rid
        )
    version = meta[META_PROTOCOL_VERSION]
    if headers is not None:
        header_version = headers.get("mcp-protocol-version")
        if header_version is None or header_version.strip(" \t") != version:
            raise EnvelopeRefusal(
                400,
                HEADER_MISMATCH,
                "The MCP-Protocol-Version header does not match "
                f"params._meta[{META_PROTOCOL_VERSION!r}].",
                rid,
            )
        header_method = headers.get("mcp-method")
        if header_method is None or header_method.strip(" \t") != message.method:
            raise EnvelopeRefusal(
                400, HEADER_MISMATCH, "The Mcp-Method header does not match the method.", rid
            )
        name_key = NAME_BEARING_METHODS.get(message.method)
        if name_key is not None and isinstance(params, dict) and params.get(name_key) is not None:
            header_name = headers.get("mcp-name")
            decoded = decode_header_value(header_name) if header_name is not None else None
            if decoded is None or decoded != params[name_key]:
                raise EnvelopeRefusal(
                    400,
                    HEADER_MISMATCH,
                    f"The Mcp-Name header does not match params.{name_key}.",
                    rid,
                )
    if not isinstance(version, str):
        raise EnvelopeRefusal(
            400, INVALID_PARAMS, "The protocol version in _meta must be a string.", rid
        )
    if version != STATELESS_VERSION:
        raise unsupported_version(version, rid)
    info = meta.get(META_CLIENT_INFO)
    return CallContext(
        version=STATELESS_VERSION,
        transport="http" if headers is not None else "stdio",
        client_info=info if isinstance(info, dict) else {},
        delivers=delivers,
        exchange=exchange,
    )


# --- running --------------------------------------------------------------------------------


def run_request(message: Message, ctx: CallContext) -> Answer:
    """Dispatch one request and serialize its response; nothing raised escapes."""
    from tmsite.mcp import prepared

    rid = message.id
    params = message.params
    try:
        if params is None:
            params = {}
        elif not isinstance(params, dict):
            raise RpcError(INVALID_PARAMS, "params must be a JSON object.")
        key = prepared.variant(message.method, params, ctx) if rid is not None else None
        if key is not None and rid is not None:
            entry, depends = prepared.lookup(key, ctx.delivers, ctx.chosen)
            if entry is None:
                # no prepared method answers with a stream
                built = cast("dict[str, Any]", _result(message.method, params, ctx))
                entry = prepared.store(key, depends, built, dumps(built))
            elif entry.after is not None:
                entry.after()
            spliced = entry.answer(rid)
            if spliced is None:  # an id the splice cannot write as dumps would
                text = dumps({"jsonrpc": "2.0", "id": rid, "result": entry.result})
                return Answer(text, result=entry.result)
            return Answer(spliced[0], result=entry.result, data=spliced[1])
        return _answer(rid, _result(message.method, params, ctx))
    except RpcError as exc:
        return Answer(
            dumps(error_response(rid, exc.code, exc.message, exc.data)),
            error_code=exc.code,
            status=exc.status,
        )
    except Exception as exc:
        failures.report(f"mcp-{ctx.transport} request", exc)
        return Answer(
            dumps(error_response(rid, INTERNAL_ERROR, "Internal error.")),
            error_code=INTERNAL_ERROR,
        )


def _answer(rid: RequestId | None, result: dict[str, Any] | StreamResult) -> Answer:
    if isinstance(result, StreamResult):  # the transport holds it open; nothing is sent now
        return Answer("", stream=result)
    return Answer(dumps({"jsonrpc": "2.0", "id": rid, "result": result}), result=result)


def _result(method: str, params: dict[str, Any], ctx: CallContext) -> dict[str, Any] | StreamResult:
    """The method's result, as the era states it (2026 results name the server)."""
    from tmsite.mcp.methods import dispatch

    result = dispatch(method, params, ctx)
    if ctx.era == "2026" and not isinstance(result, StreamResult):
        return _stamp_server_info(result)
    return result


def _stamp_server_info(result: dict[str, Any]) -> dict[str, Any]:
    meta = result.get("_meta")
    merged: dict[str, Any] = dict(meta) if isinstance(meta, dict) else {}
    merged.setdefault(SERVER_INFO_META_KEY, server_info())
    return {**result, "_meta": merged}
