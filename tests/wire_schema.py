"""Every MCP answer the suite sees, checked against the protocol schema of its revision.

The schema is the pinned ``mcp-types`` package: its per-revision wire models (``_v2025_11_25``
for every initialize-era revision, ``_v2026_07_28`` for the stateless one) and its surface maps
(``mcp_types.methods``), looked up by method name, so a method the server starts offering is
checked without a line here. One validator, :func:`check_message`, takes a JSON-RPC message the
server sent, the method of the request it answers and the revision it was served in:

* a result: the revision's ``JSONRPCResultResponse``, then the method's result type (the row of
  ``SERVER_RESULTS``); a result for a method the revision does not define, or whose id matches
  no request sent, is a failure too;
* an error: the revision's ``JSONRPCErrorResponse``, and every model of the revision that
  fixes that error code (``UnsupportedProtocolVersionError``, ``HeaderMismatchError``, …, found
  by looking at the models, not listed here);
* a request or notification from the server: its ``(method, revision)`` row.

Where answers are taken (installed once per process by ``tests/conftest.py``):

* ``dispatch`` — every result of ``tmsite.mcp.methods.dispatch``, for ``ctx.version``; the tool
  and namespace tests call it directly.
* ``http`` — every response the in-process server gives on ``/api/mcp``, whoever asked (the live
  server, Django's test client, SDK clients against the live server): Django's
  ``BaseHandler.get_response`` is wrapped, and the endpoint's ``_read_body`` keeps the body it
  read on the request. The revision is what the request names, read as the transport spec says:
  the ``MCP-Protocol-Version`` header (absent means 2025-03-26) and the 2026-07-28 ``_meta``
  version. An answer whose request names two revisions must hold in both; one whose request
  names none the server speaks, in every revision it speaks.
* ``stdio`` and ``http`` from a subprocess — :func:`check_stdio` and :func:`check_http`, called
  by the helpers that talk to ``manage.py mcp_stdio`` and to gunicorn. On stdio the revision is
  the request's ``_meta`` version, else the one the session negotiated with ``initialize``
  (the latest initialize-era one before any handshake).

Only what is not a JSON-RPC message is passed over: an empty body, a body that is not JSON (an
HTML page), JSON that has none of the members a JSON-RPC message has. Server-sent events are
read event by event.

Validation is strict, of the message as JSON: the schema's types, not what pydantic would coerce
into them. A failure is recorded, not raised where it is found (a server thread must answer as
it would), and fails the test it happened in, naming where, the method, the revision and
pydantic's error locations. :func:`expected` collects the failures a test causes on purpose
instead.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import cache
from types import ModuleType, UnionType
from typing import Any, Literal, get_args, get_origin

import pydantic
from mcp_types import _v2025_11_25 as v2025
from mcp_types import _v2026_07_28 as v2026
from mcp_types import methods as surface
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS

from tmsite.mcp.protocol import (
    DEFAULT_HEADERLESS_VERSION,
    LATEST_INITIALIZE_VERSION,
    SUPPORTED_VERSIONS,
    era_of,
)

MCP_PATH = "/api/mcp"
META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
#: Members at least one of which every JSON-RPC message has.
_MESSAGE_MEMBERS = frozenset({"jsonrpc", "id", "method", "result", "error"})
#: Where the endpoint's ``_read_body`` leaves the body on the request.
_BODY_ATTR = "_wire_schema_body"
_MAX_LOCATIONS = 6


# --- the validator ------------------------------------------------------------------------------


def _schema(revision: str) -> ModuleType:
    return v2026 if era_of(revision) == "2026" else v2025


def _literal_code(model: type[pydantic.BaseModel]) -> int | None:
    field = model.model_fields.get("code")
    if field is None or get_origin(field.annotation) is not Literal:
        return None
    (code,) = get_args(field.annotation)
    return code if isinstance(code, int) else None


def _coded_models(schema: ModuleType) -> dict[int, list[tuple[str, type[pydantic.BaseModel]]]]:
    """Error code → the models of ``schema`` that fix it, with what each validates.

    A whole response (``error``, ``id``, ``jsonrpc``) whose ``error`` has a literal code
    validates the message; an error object (``code``, ``message``, ``data``) with one validates
    the ``error`` member.
    """
    table: dict[int, list[tuple[str, type[pydantic.BaseModel]]]] = {}
    for value in vars(schema).values():
        if not (isinstance(value, type) and issubclass(value, pydantic.BaseModel)):
            continue
        fields = set(value.model_fields)
        if fields == {"error", "id", "jsonrpc"}:
            error = value.model_fields["error"].annotation
            code = _literal_code(error) if isinstance(error, type) else None
            if code is not None and issubclass(error, pydantic.BaseModel):
                table.setdefault(code, []).append(("", value))
        elif fields == {"code", "message", "data"} and (code := _literal_code(value)) is not None:
            table.setdefault(code, []).append(("error", value))
    return table


_CODED = {schema.__name__: _coded_models(schema) for schema in (v2025, v2026)}
#: A result each schema's ``Result`` accepts, standing in while the envelope is checked.
_PLACEHOLDER_RESULT: dict[str, dict[str, Any]] = {
    v2025.__name__: {},
    v2026.__name__: {"resultType": "complete"},
}


@cache
def _adapter(target: Any) -> pydantic.TypeAdapter[Any]:
    return pydantic.TypeAdapter(target)


def _validate(target: Any, value: Any) -> None:
    """Validate ``value`` as the JSON it is on the wire, strictly, by the schema's member names.

    Strict JSON validation is what the schema says (a boolean is ``true`` or ``false``, never
    ``"false"``); ``mcp_types.methods.validate_server_result`` validates laxly, coercing such
    strings, so it is not used.
    """
    _adapter(target).validate_json(json.dumps(value), strict=True, by_name=False)


def _locations(exc: pydantic.ValidationError, prefix: str) -> str:
    parts = []
    for error in exc.errors()[:_MAX_LOCATIONS]:
        where = ".".join(str(p) for p in (prefix, *error["loc"]) if p != "") or "(message)"
        parts.append(f"{where}: {error['msg']}")
    more = exc.error_count() - _MAX_LOCATIONS
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def _result_arm(row: Any, schema: ModuleType, result: Any) -> Any:
    """The arm of a two-arm result row that ``result`` claims by its ``resultType``.

    The 2026-07-28 rows of ``tools/call``, ``resources/read`` and ``prompts/get`` are
    ``X | InputRequiredResult``, and ``InputRequiredResult`` takes any object with a
    ``resultType`` (its other members are optional), so the union as a whole accepts every
    malformed ``X``. The spec tells them apart by ``resultType`` (``"input_required"`` or not),
    and so does this.
    """
    if not isinstance(row, UnionType):
        return row
    interim = getattr(schema, "InputRequiredResult", None)
    arms = [arm for arm in get_args(row) if (arm is interim) == surface.is_input_required(result)]
    return arms[0] if len(arms) == 1 else row


def check_result(method: str, revision: str, result: Any) -> list[str]:
    """What is wrong with ``result`` as the answer to ``method`` under ``revision``."""
    label = f"{method} under {revision}"
    row = surface.SERVER_RESULTS.get((method, revision))
    if row is None:
        return [f"{label}: a result, but {revision} defines no such request"]
    try:
        _validate(_result_arm(row, _schema(revision), result), result)
    except pydantic.ValidationError as exc:
        return [f"{label}: {_locations(exc, 'result')}"]
    return []


def check_message(message: Any, method: str | None, revision: str) -> list[str]:
    """What is wrong with one message the server sent, answering ``method`` under ``revision``.

    ``method`` is ``None`` when the message answers no request that could be read (an error
    without ``id``, an id the client never sent).
    """
    label = f"{method or '(no request)'} under {revision}"
    schema = _schema(revision)
    where = ""
    if not isinstance(message, dict):
        return [f"{label}: {type(message).__name__} is not a JSON-RPC message object"]
    try:
        if "method" in message:
            kind, table = (
                ("request", surface.SERVER_REQUESTS)
                if "id" in message
                else ("notification", surface.SERVER_NOTIFICATIONS)
            )
            model = table.get((str(message["method"]), revision))
            if model is None:
                return [
                    f"{label}: the server sent the {kind} {message['method']!r}, "
                    f"which {revision} does not define"
                ]
            _validate(model, message)
            return []
        if "error" in message:
            _validate(schema.JSONRPCErrorResponse, message)
            code = message["error"]["code"]
            for member, model in _CODED[schema.__name__].get(code, []):
                where = member
                _validate(model, message[member] if member else message)
            return []
        # The envelope here; the result's members are the method's result type's to check.
        envelope = message
        if isinstance(message.get("result"), dict):
            envelope = {**message, "result": _PLACEHOLDER_RESULT[schema.__name__]}
        _validate(schema.JSONRPCResultResponse, envelope)
    except pydantic.ValidationError as exc:
        return [f"{label}: {_locations(exc, where)}"]
    if method is None:
        return [f"{label}: a result whose id {message['id']!r} matches no request sent"]
    return check_result(method, revision, message["result"])


# --- what a transport carries -------------------------------------------------------------------


def _looks_like_a_message(value: Any) -> bool:
    if isinstance(value, dict):
        return bool(_MESSAGE_MEMBERS & value.keys())
    return isinstance(value, list) and any(_looks_like_a_message(item) for item in value)


def _event_data(content: bytes) -> list[bytes]:
    """The ``data`` of each server-sent event (lines joined by newlines)."""
    events: list[bytes] = []
    data: list[bytes] = []
    for line in [*content.replace(b"\r\n", b"\n").split(b"\n"), b""]:
        if not line:
            if data:
                events.append(b"\n".join(data))
            data = []
        elif line.startswith(b"data:"):
            data.append(line[5:].removeprefix(b" "))
    return events


def answers_in(content_type: str, content: bytes) -> list[Any]:
    """The JSON-RPC messages (or batches) a response body carries; nothing else."""
    media = content_type.split(";")[0].strip().lower()
    if media == "text/event-stream":
        texts = _event_data(content)
    elif media == "application/json" or media.endswith("+json"):
        texts = [content]
    else:
        return []
    found = []
    for text in texts:
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            continue
        if _looks_like_a_message(value):
            found.append(value)
    return found


def _loads(raw: bytes | str | None) -> Any:
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, or nested past what the parser follows
        return None


def _id_key(value: Any) -> str:
    return json.dumps(value)


def _meta_version(message: Any) -> str | None:
    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


def _served(named: Sequence[str]) -> tuple[str, ...]:
    served = tuple(dict.fromkeys(v for v in named if v in SUPPORTED_VERSIONS))
    return served or SUPPORTED_VERSIONS


def http_revisions(headers: Mapping[str, str], sent: Any) -> tuple[str, ...]:
    """The revisions an HTTP request names: its version header and its ``_meta`` versions."""
    lowered = {k.lower(): v for k, v in headers.items()}
    header = lowered.get("mcp-protocol-version")
    named = [DEFAULT_HEADERLESS_VERSION if header is None else header.strip(" \t")]
    for message in sent if isinstance(sent, list) else [sent]:
        if (version := _meta_version(message)) is not None:
            named.append(version)
    return _served(named)


def http_problems(
    headers: Mapping[str, str], body: bytes | None, content_type: str, content: bytes
) -> list[str]:
    """What is wrong with one HTTP answer, given the request's headers and body."""
    sent = _loads(body)
    asked = {
        _id_key(m["id"]): m["method"]
        for m in (sent if isinstance(sent, list) else [sent])
        if isinstance(m, dict) and "id" in m and isinstance(m.get("method"), str)
    }
    revisions = http_revisions(headers, sent)
    problems: list[str] = []
    for answer in answers_in(content_type, content):
        if answer == []:
            problems.append(f"(batch) under {', '.join(revisions)}: an empty batch answer")
        for item in answer if isinstance(answer, list) else [answer]:
            rid = item.get("id") if isinstance(item, dict) else None
            method = asked.get(_id_key(rid)) if rid is not None else None
            for revision in revisions:
                problems.extend(check_message(item, method, revision))
    return problems


def _subscription_id(message: dict[str, Any]) -> Any:
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get("io.modelcontextprotocol/subscriptionId") if isinstance(meta, dict) else None


def stdio_problems(sent: Sequence[bytes | str], stdout: bytes) -> list[str]:
    """What is wrong with a stdio server's output, given the lines it was sent, in order.

    Every line of stdout must be a JSON-RPC message (or batch); each answer is paired with the
    earliest unanswered request of its id, and a notification tagged with a subscription id
    with the listen of that id (it is checked in the listen's revision).
    """
    pending: list[dict[str, Any]] = []
    listens: dict[Any, dict[str, Any]] = {}
    for line in sent:
        value = _loads(line)
        for message in value if isinstance(value, list) else [value]:
            if (
                isinstance(message, dict)
                and "id" in message
                and isinstance(message.get("method"), str)
            ):
                pending.append(message)
                if message["method"] == "subscriptions/listen":
                    listens.setdefault(_id_key(message["id"]), message)
    negotiated: str | None = None
    problems: list[str] = []
    for line in stdout.splitlines():
        value = _loads(line)
        if not _looks_like_a_message(value):
            problems.append(f"(stdout) a line that is not a JSON-RPC message: {line[:80]!r}")
            continue
        for item in value if isinstance(value, list) else [value]:
            request = None
            if isinstance(item, dict) and "id" in item:
                key = _id_key(item["id"])
                request = next((m for m in pending if _id_key(m["id"]) == key), None)
                if request is not None:
                    pending.remove(request)
            elif isinstance(item, dict):
                tagged = _subscription_id(item)
                listen = listens.get(_id_key(tagged)) if tagged is not None else None
                modern = _meta_version(listen)
                if modern is not None:
                    for revision in _served([modern]):
                        problems.extend(check_message(item, None, revision))
                    continue
            modern = _meta_version(request)
            revisions = (
                _served([modern])
                if modern is not None
                else (negotiated or LATEST_INITIALIZE_VERSION,)
            )
            method: str | None = request["method"] if request is not None else None
            for revision in revisions:
                problems.extend(check_message(item, method, revision))
            result = item.get("result") if isinstance(item, dict) else None
            if method == "initialize" and isinstance(result, dict):
                version = result.get("protocolVersion")
                negotiated = version if version in SUPPORTED_VERSIONS else negotiated
    return problems


# --- recording ----------------------------------------------------------------------------------

_lock = threading.Lock()
_found: list[str] = []
_expected: list[str] | None = None


def report(where: str, problems: list[str]) -> None:
    """Record failures found at ``where`` (for the running test, or :func:`expected`)."""
    if not problems:
        return
    with _lock:
        into = _expected if _expected is not None else _found
        into.extend(f"wire schema ({where}): {problem}" for problem in problems)


def take_found() -> list[str]:
    """What was found since the last call (outside :func:`expected`), and forget it."""
    with _lock:
        found, _found[:] = list(_found), []
    return found


@contextmanager
def expected() -> Iterator[list[str]]:
    """Collect the failures caused inside the block instead of failing the test."""
    global _expected
    collected: list[str] = []
    with _lock:
        _expected = collected
    try:
        yield collected
    finally:
        with _lock:
            _expected = None


def check_http(
    headers: Mapping[str, str], body: bytes | None, content_type: str, content: bytes
) -> None:
    """Check one answer from a server in another process (see :func:`http_problems`)."""
    report("http", http_problems(headers, body, content_type, content))


def check_stdio(sent: Sequence[bytes | str], stdout: bytes) -> None:
    """Check a stdio server's whole output (see :func:`stdio_problems`)."""
    report("stdio", stdio_problems(sent, stdout))


# --- the in-process choke points ----------------------------------------------------------------

_installed = False


def _guarded(where: str, check: Any, *args: Any) -> None:
    try:
        report(where, check(*args))
    except Exception as exc:  # the layer must not change what the server answers
        report(where, [f"the check itself failed: {exc!r}"])


def install() -> None:
    """Wrap ``dispatch``, the endpoint's body reader and Django's handler (once per process)."""
    global _installed
    if _installed:
        return
    _installed = True
    unknown = [v for v in SUPPORTED_VERSIONS if v not in KNOWN_PROTOCOL_VERSIONS]
    if unknown:
        raise RuntimeError(f"mcp-types has no schema for the served revisions {unknown}")

    from django.core.handlers.base import BaseHandler
    from django.http import HttpRequest, HttpResponseBase

    from tmsite.mcp import endpoint, methods
    from tmsite.mcp.protocol import CallContext, StreamResult

    dispatch = methods.dispatch

    def checked_dispatch(
        method: str, params: dict[str, Any], ctx: CallContext
    ) -> dict[str, Any] | StreamResult:
        result = dispatch(method, params, ctx)
        if not isinstance(result, StreamResult):  # a stream's messages are checked as sent
            _guarded("dispatch", check_result, method, ctx.version, result)
        return result

    methods.dispatch = checked_dispatch

    read_body = endpoint._read_body

    def keeping_body(request: HttpRequest) -> bytes | None:
        raw = read_body(request)
        setattr(request, _BODY_ATTR, raw)
        return raw

    endpoint._read_body = keeping_body

    get_response = BaseHandler.get_response

    def checked_response(self: BaseHandler, request: HttpRequest) -> HttpResponseBase:
        response = get_response(self, request)
        if request.path_info.rstrip("/") == MCP_PATH:
            if response.streaming:
                content = b"".join(response.streaming_content)  # type: ignore[attr-defined]
                response.streaming_content = [content]  # type: ignore[attr-defined]
            else:
                content = response.content  # type: ignore[attr-defined]
            _guarded(
                "http",
                http_problems,
                request.headers,
                getattr(request, _BODY_ATTR, None),
                response.get("Content-Type", ""),
                content,
            )
        return response

    BaseHandler.get_response = checked_response  # type: ignore[method-assign]


_served_installed = False


def install_on_serve() -> None:
    """Check the answers of the ASGI serving model too: it calls the endpoint without Django's
    handler (``tmsite.serve.app``: in its event loop or on a thread), so the wrap of
    ``get_response`` never sees them.
    """
    global _served_installed
    if _served_installed:
        return
    _served_installed = True

    from tmsite.mcp import endpoint
    from tmsite.serve import app

    def checked(answered: endpoint.Answered | None, asked: endpoint.Asked) -> None:
        if answered is not None and answered.stream is None:
            _guarded(
                "http",
                http_problems,
                asked.headers,
                asked.body,
                answered.header("Content-Type") or "",
                answered.body,
            )

    on_thread, in_loop = app._served_on_thread, app.answered_in_loop

    def checked_on_thread(asked: endpoint.Asked, *args: Any) -> endpoint.Answered:
        answered = on_thread(asked, *args)
        checked(answered, asked)
        return answered

    def checked_in_loop(asked: endpoint.Asked) -> endpoint.Answered | None:
        answered = in_loop(asked)
        checked(answered, asked)
        return answered

    app._served_on_thread = checked_on_thread  # type: ignore[assignment]
    app.answered_in_loop = checked_in_loop
