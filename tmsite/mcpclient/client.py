"""A synchronous MCP client for reading other MCP servers, over stdio or Streamable HTTP.

Usage::

    with Client.stdio([sys.executable, "-m", "tmsite.demo.mcp_server"]) as client:
        hs = client.handshake()
        tools = client.list_tools()
        result = client.call_tool("get_element", {"symbol": "Fe"})

Both protocol eras are spoken: the client first asks ``server/discover`` at 2026-07-28 and, on
any JSON-RPC error or HTTP 4xx, falls back to ``initialize`` at 2025-11-25 (accepting whichever
handshake-era version the server answers with). It is tolerant of what real servers do — an
echoed protocol version, capabilities declaring tools only, text-only tool results carrying JSON,
``resources/list`` answered without the capability (or refused with -32601 when undeclared,
read as empty), tool failures as ``isError`` — and strict where it matters: byte, item, page and
depth caps, cursor cycles, responses to ids never sent, and server→client requests (sampling,
elicitation, roots…) answered with -32601 and never acted on.

One call is in flight at a time; a lock makes a client safe to share between threads.

Spec: MCP.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Literal, Protocol

from tmsite.core import tracing, work
from tmsite.core.addresses import DialPolicy
from tmsite.mcpclient import jsonrpc
from tmsite.mcpclient.errors import (
    Gated,
    McpClientError,
    PeerError,
    ProtocolError,
    TooDeep,
    TooLarge,
    Unreachable,
)
from tmsite.mcpclient.http import Hangup, HttpTransport
from tmsite.mcpclient.limits import MAX_DEPTH, Deadline, Limits
from tmsite.mcpclient.stdio import DEFAULT_ENV_ALLOW, StdioTransport, build_env

JSONObject = jsonrpc.JSONObject
Era = Literal["initialize", "discover"]
Mode = Literal["auto", "initialize"]

MODERN_VERSION = "2026-07-28"
HANDSHAKE_VERSION = "2025-11-25"
HANDSHAKE_VERSIONS = frozenset({"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"})
CLIENT_INFO: JSONObject = {"name": "tmsite-mcpclient", "version": "1.0"}

_META_VERSION = "io.modelcontextprotocol/protocolVersion"
_META_CAPS = "io.modelcontextprotocol/clientCapabilities"
_META_INFO = "io.modelcontextprotocol/clientInfo"
_META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
_NAME_PARAM = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


@dataclass(frozen=True, slots=True)
class Handshake:
    """What the server declared when the client met it.

    Attributes:
        protocol_version: the version in use (echoed by ``initialize``, or 2026-07-28).
        capabilities: the server's capabilities object, as sent.
        server_info: its ``serverInfo`` (``{}`` when it gave none).
        instructions: its instructions for the model, if any.
        era: ``"initialize"`` (2024-11-05 … 2025-11-25) or ``"discover"`` (2026-07-28).
        supported_versions: the versions ``server/discover`` listed (empty in the initialize era).
        session: whether the HTTP server issued an ``Mcp-Session-Id``.
    """

    protocol_version: str
    capabilities: JSONObject
    server_info: JSONObject
    instructions: str | None
    era: Era
    supported_versions: tuple[str, ...] = ()
    session: bool = False


#: ``ToolResult.parsed`` before anything was parsed (None is a parse result: "not JSON").
_UNPARSED: Any = object()


@dataclass(frozen=True, slots=True)
class ToolResult:
    """One ``tools/call`` answer.

    Attributes:
        content: the content items as sent (each an object with a string ``type``).
        structured: ``structuredContent`` when the server sent it.
        is_error: the tool failed (``isError``): the text says why, for the model.
        meta: the result's ``_meta``, if any.
        max_depth: the depth cap :meth:`data` holds the JSON in a lone text item to.
    """

    content: list[JSONObject]
    structured: JSONObject | None
    is_error: bool
    meta: JSONObject | None = None
    max_depth: int = MAX_DEPTH
    #: What :meth:`data` found, once :meth:`Client.call_tool` has asked (parsed only once).
    parsed: Any = field(default=_UNPARSED, repr=False, compare=False)

    @property
    def text(self) -> str:
        """The text items joined by newlines."""
        return "\n".join(str(c.get("text", "")) for c in self.content if c.get("type") == "text")

    def data(self) -> Any:
        """The result as data, or None when there is none.

        That is ``structuredContent`` if sent, else the JSON a lone text item carries (as
        koyu-mcp's tools return), else None (the text is not JSON).

        Raises:
            TooDeep: the lone text item nests arrays and objects deeper than ``max_depth``. The
                depth is counted before parsing, so such a text is refused, never taken for
                plain text and never built.
        """
        if self.parsed is not _UNPARSED:
            return self.parsed
        if self.structured is not None:
            return self.structured
        texts = [c for c in self.content if c.get("type") == "text"]
        if len(texts) != 1:
            return None
        raw = str(texts[0].get("text", "")).encode()
        try:
            return jsonrpc.decode(raw, 1 << 62, max_depth=self.max_depth, part="text")
        except TooDeep:
            raise
        except ProtocolError:
            return None


#: A media type as RFC 9110 spells one: ``type/subtype`` and parameters, printable ASCII only.
_MEDIA_TYPE = re.compile(
    r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}"
    r"(?:[ \t]*;[ \t]*[A-Za-z0-9!#$%&'*+.^_`|~-]+=(?:[A-Za-z0-9!#$%&'*+.^_`|~-]+|\"[ -~]*\"))*",
    re.ASCII,
)
#: Longest media type accepted from a server.
MAX_MEDIA_TYPE = 255
#: Most content items one ``resources/read`` answer may carry.
MAX_CONTENTS = 100


@dataclass(frozen=True, slots=True)
class ResourceContent:
    """One item of a ``resources/read`` answer, checked.

    Attributes:
        uri: the item's URI, as the server sent it (data, never followed).
        mime_type: the item's ``mimeType`` when it sent one (a well-formed media type).
        text: the text, for a text item (else None).
        blob: the decoded bytes, for a blob item (else None).
        meta: the item's ``_meta``, if any.
    """

    uri: str
    mime_type: str | None
    text: str | None
    blob: bytes | None
    meta: JSONObject | None = None


@dataclass(frozen=True, slots=True)
class Completion:
    """One ``completion/complete`` answer."""

    values: list[str]
    total: int | None
    has_more: bool


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """Everything a server declared when asked once: handshake and all listings.

    A listing that failed is empty and its error is in ``errors`` under the listing's name
    (``"tools"``, ``"resources"``, ``"resource_templates"``, ``"prompts"``).
    """

    handshake: Handshake
    tools: list[JSONObject]
    resources: list[JSONObject]
    resource_templates: list[JSONObject]
    prompts: list[JSONObject]
    errors: dict[str, McpClientError] = field(default_factory=dict)
    asked_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    seconds: float = 0.0


class _Transport(Protocol):
    @property
    def pid(self) -> int | None: ...
    def start(self) -> None: ...
    def close(self) -> None: ...
    def kill(self, reason: McpClientError) -> None: ...
    def request(
        self,
        method: str,
        params: JSONObject | None,
        deadline: Deadline,
        headers: Mapping[str, str] | None = None,
    ) -> JSONObject: ...
    def notify(
        self,
        method: str,
        params: JSONObject | None,
        deadline: Deadline,
        headers: Mapping[str, str] | None = None,
    ) -> None: ...


class Client:
    """A connection to one MCP server. Build it with :meth:`stdio` or :meth:`http`."""

    def __init__(
        self,
        transport: _Transport,
        *,
        start_timeout: float,
        call_timeout: float,
        limits: Limits,
        mode: Mode,
        token_missing: bool = False,
    ) -> None:
        self._transport = transport
        self.start_timeout = start_timeout
        self.call_timeout = call_timeout
        self.limits = limits
        self.mode: Mode = mode
        self.refused_requests: list[str] = []
        self._token_missing = token_missing
        self._handshake: Handshake | None = None
        self._started = False
        self._closed = False
        self._lock = threading.RLock()
        self._listeners: list[Callable[[str, JSONObject], None]] = []

    # -- construction ----------------------------------------------------------------------

    @classmethod
    def stdio(
        cls,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str] | None = None,
        env_allow: Iterable[str] = DEFAULT_ENV_ALLOW,
        env: Mapping[str, str] | None = None,
        start_timeout: float = 10.0,
        call_timeout: float = 30.0,
        shutdown_timeout: float = 3.0,
        limits: Limits | None = None,
        mode: Mode = "auto",
    ) -> Client:
        """A client for a server run as a child process from ``argv`` (no shell).

        Args:
            argv: the program and its arguments, as a list.
            cwd: the child's working directory (None: ours).
            env_allow: names copied from our environment when set (default: PATH and locale).
            env: explicit values added over the allow-listed ones.
            start_timeout: seconds for spawn plus handshake.
            call_timeout: seconds for each later request.
            shutdown_timeout: seconds the child gets to exit after stdin closes before its
                process group is terminated, then killed.
            limits: caps (default :class:`Limits`).
            mode: ``"auto"`` (discover, then initialize) or ``"initialize"`` only.

        Raises:
            ValueError: ``argv`` is not a non-empty list of strings, or ``env`` is malformed.
        """
        caps = limits or Limits()
        client: Client
        transport = StdioTransport(
            argv,
            cwd=cwd,
            env=build_env(env_allow, env),
            limits=caps,
            shutdown_timeout=shutdown_timeout,
            on_server_request=lambda method: client.refused_requests.append(method),
            on_notification=lambda method, params: client._notified(method, params),
        )
        client = cls(
            transport,
            start_timeout=start_timeout,
            call_timeout=call_timeout,
            limits=caps,
            mode=mode,
        )
        return client

    @classmethod
    def http(
        cls,
        url: str,
        *,
        token: str | None = None,
        token_required: bool = False,
        timeout: float = 30.0,
        start_timeout: float | None = None,
        limits: Limits | None = None,
        mode: Mode = "auto",
        policy: DialPolicy | None = None,
    ) -> Client:
        """A client for a Streamable HTTP endpoint.

        Args:
            url: the endpoint (http or https; no credentials in it).
            token: a bearer token sent to that origin only.
            token_required: the server is known to need a token; without one, the handshake
                raises :class:`Gated` before any request is made.
            timeout: seconds for each request.
            start_timeout: seconds for the handshake (default: ``timeout``).
            limits: caps (default :class:`Limits`).
            mode: ``"auto"`` (discover, then initialize) or ``"initialize"`` only.
            policy: where it may connect (None: anywhere); a URL, redirect or resolved address
                it refuses raises :class:`Refused` before anything is dialled.

        Raises:
            ValueError: the URL is not http(s) or carries credentials.
        """
        caps = limits or Limits()
        client: Client
        transport = HttpTransport(
            url,
            token=token,
            limits=caps,
            on_server_request=lambda method: client.refused_requests.append(method),
            user_agent=f"{CLIENT_INFO['name']}/{CLIENT_INFO['version']}",
            policy=policy,
        )
        client = cls(
            transport,
            start_timeout=start_timeout or timeout,
            call_timeout=timeout,
            limits=caps,
            mode=mode,
            token_missing=token_required and token is None,
        )
        return client

    # -- lifecycle -------------------------------------------------------------------------

    def __enter__(self) -> Client:
        try:
            self.handshake()
        except BaseException:
            self.close()  # no child outlives a failed ``with``
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        """The stdio child's pid (its process-group id too); None over HTTP."""
        return self._transport.pid

    @property
    def session_id(self) -> str | None:
        """The ``Mcp-Session-Id`` an HTTP server issued, while the session lasts."""
        sid = getattr(self._transport, "session_id", None)
        return sid if isinstance(sid, str) else None

    @property
    def forced_shutdown(self) -> bool:
        """Whether closing had to terminate a stdio child that ignored EOF."""
        return bool(getattr(self._transport, "forced_shutdown", False))

    def on_notification(self, callback: Callable[[str, JSONObject], None]) -> None:
        """Call ``callback(method, params)`` for each notification the server sends.

        Over stdio a notification is delivered as it arrives, from the transport's reader
        thread, whether a request is waiting or not (so ``callback`` must be quick and not
        block); ``params`` that are not an object are delivered as ``{}``. Over HTTP the
        notifications of an ordinary answer are not delivered; a 2026-07-28 server's are heard
        with :meth:`listen`, a 2025-era session's with :meth:`session_stream`.
        """
        self._listeners.append(callback)

    def _notified(self, method: str, params: Any) -> None:
        for callback in list(self._listeners):
            callback(method, params if isinstance(params, dict) else {})

    def close(self) -> None:
        """End the connection: the child exits (or is killed), the HTTP session is released."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._transport.close()

    def handshake(self) -> Handshake:
        """Meet the server (once) and return what it declared.

        Raises:
            Gated, Unreachable, Timeout (``start``), ProtocolError, TooLarge, PeerError.
        """
        with self._lock:
            if self._handshake is not None:
                return self._handshake
            if self._closed:
                raise Unreachable("closed", "the client was closed")
            if self._token_missing:
                raise Gated(None, token_sent=False)
            deadline = Deadline("start", self.start_timeout, "handshake")
            if not self._started:
                self._started = True
                self._transport.start()
            try:
                hs = self._discover(deadline) if self.mode == "auto" else None
                if hs is None:
                    hs = self._initialize(deadline)
            except McpClientError as exc:
                if not isinstance(exc, PeerError | Gated):
                    self._transport.kill(exc)
                raise
            self._handshake = hs
            return hs

    def _discover(self, deadline: Deadline) -> Handshake | None:
        deadline.method = "server/discover"
        try:
            result = self._transport.request(
                "server/discover",
                self._params(None, MODERN_VERSION),
                deadline,
                self._routing("server/discover", None, MODERN_VERSION),
            )
        except PeerError:
            return None
        except Unreachable as exc:
            if exc.status is not None and 400 <= exc.status < 500:
                return None
            raise
        supported = result.get("supportedVersions")
        if not isinstance(supported, list) or MODERN_VERSION not in supported:
            return None
        capabilities = _object(result.get("capabilities"), "discover capabilities")
        info = result.get("serverInfo")
        meta = result.get("_meta")
        if info is None and isinstance(meta, dict):
            info = meta.get(_META_SERVER_INFO)
        return Handshake(
            protocol_version=MODERN_VERSION,
            capabilities=capabilities,
            server_info=_object(info, "serverInfo") if info is not None else {},
            instructions=_optional_str(result.get("instructions"), "instructions"),
            era="discover",
            supported_versions=tuple(str(v) for v in supported),
            session=self.session_id is not None,
        )

    def _initialize(self, deadline: Deadline) -> Handshake:
        deadline.method = "initialize"
        result = self._transport.request(
            "initialize",
            {"protocolVersion": HANDSHAKE_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO},
            deadline,
        )
        version = result.get("protocolVersion")
        if not isinstance(version, str) or version not in HANDSHAKE_VERSIONS:
            raise ProtocolError(
                f"the server chose a protocol version this client does not speak: {version!r}"
            )
        capabilities = result.get("capabilities", {})
        info = result.get("serverInfo", {})
        hs = Handshake(
            protocol_version=version,
            capabilities=_object(capabilities, "capabilities"),
            server_info=_object(info, "serverInfo"),
            instructions=_optional_str(result.get("instructions"), "instructions"),
            era="initialize",
            session=self.session_id is not None,
        )
        self._transport.notify(
            "notifications/initialized",
            None,
            deadline,
            self._routing("notifications/initialized", None, version),
        )
        return hs

    # -- requests --------------------------------------------------------------------------

    def _params(self, params: JSONObject | None, version: str) -> JSONObject | None:
        if version != MODERN_VERSION:
            return params
        out = dict(params or {})
        meta = dict(out.get("_meta") or {})
        meta.update({_META_VERSION: version, _META_CAPS: {}, _META_INFO: CLIENT_INFO})
        out["_meta"] = meta
        return out

    def _routing(self, method: str, params: JSONObject | None, version: str) -> dict[str, str]:
        if version == HANDSHAKE_VERSION and method == "initialize":
            return {}
        headers = {"MCP-Protocol-Version": version}
        if version == MODERN_VERSION:
            headers["Mcp-Method"] = method
            key = _NAME_PARAM.get(method)
            if key is not None and params is not None and isinstance(params.get(key), str):
                headers["Mcp-Name"] = _header_value(params[key])
        return headers

    def request(self, method: str, params: JSONObject | None = None) -> JSONObject:
        """Send any request under the call deadline and return its result object.

        Raises:
            PeerError, Unreachable, Timeout (``call``), ProtocolError, TooLarge, Gated.
        """
        hs = self.handshake()
        with self._lock, tracing.span(method, {"mcp.method.name": method}, client=True):
            if self._closed:
                raise Unreachable("closed", "the client was closed")
            work.spend("peer")
            version = hs.protocol_version
            body = _carrying(self._params(params, version))
            result = self._transport.request(
                method,
                body,
                Deadline("call", self.call_timeout, method),
                self._routing(method, params, version),
            )
            if result.get("resultType", "complete") != "complete":
                raise ProtocolError(
                    f"the server asked for input to finish {method} "
                    f"(resultType {result.get('resultType')!r}); this client "
                    "provides none"
                )
            return result

    def _list(self, method: str, key: str, required: str, capability: str) -> list[JSONObject]:
        """Every entry of a paged list method, following ``nextCursor`` to the end.

        A first page refused with method-not-found by a server that did not declare
        ``capability`` is an empty list.

        Raises:
            TooLarge: more pages or entries than the limits allow.
            ProtocolError: a page or an entry is malformed, or a cursor comes back.
            PeerError: the server refused a page.
        """
        items: list[JSONObject] = []
        seen: set[str] = set()
        cursor: str | None = None
        pages = 0
        while True:
            pages += 1
            if pages > self.limits.max_pages:
                raise TooLarge("pages", self.limits.max_pages, pages)
            try:
                result = self.request(method, {"cursor": cursor} if cursor is not None else None)
            except PeerError as exc:
                declared = capability in self.handshake().capabilities
                if exc.code == jsonrpc.METHOD_NOT_FOUND and not declared and pages == 1:
                    return []
                raise
            items.extend(_page_entries(method, key, required, result))
            if len(items) > self.limits.max_items:
                raise TooLarge("items", self.limits.max_items, len(items))
            cursor = _next_cursor(method, result, seen, pages)
            if cursor is None:
                return items

    def list_tools(self) -> list[JSONObject]:
        """Every tool, all pages, as the server described them."""
        return self._list("tools/list", "tools", "name", "tools")

    def list_resources(self) -> list[JSONObject]:
        """Every resource, all pages (asked even when the capability is not declared)."""
        return self._list("resources/list", "resources", "uri", "resources")

    def list_resource_templates(self) -> list[JSONObject]:
        """Every resource template, all pages."""
        return self._list(
            "resources/templates/list", "resourceTemplates", "uriTemplate", "resources"
        )

    def list_prompts(self) -> list[JSONObject]:
        """Every prompt, all pages."""
        return self._list("prompts/list", "prompts", "name", "prompts")

    def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolResult:
        """Run one tool. A tool failure is a result with ``is_error``, not an exception.

        Raises:
            PeerError: the server refused the call itself (e.g. an unknown tool, -32602).
            TooDeep: the answer, or the JSON its lone text item carries when it is not a tool
                failure, nests deeper than the depth cap.
        """
        result = self.request("tools/call", {"name": name, "arguments": dict(arguments or {})})
        content = result.get("content", [])
        if not isinstance(content, list) or not all(
            isinstance(c, dict) and isinstance(c.get("type"), str) for c in content
        ):
            raise ProtocolError("tools/call: content must be a list of typed objects")
        structured = result.get("structuredContent")
        if structured is not None and not isinstance(structured, dict):
            raise ProtocolError("tools/call: structuredContent must be an object")
        is_error = result.get("isError", False)
        if not isinstance(is_error, bool):
            raise ProtocolError("tools/call: isError must be a boolean")
        meta = result.get("_meta")
        answer = ToolResult(
            content,
            structured,
            is_error,
            meta if isinstance(meta, dict) else None,
            self.limits.max_depth,
        )
        # Parsed here, inside the call, so JSON text nested past the cap is refused with the
        # call's other faults; the caller's data() then reuses it.
        return answer if is_error else replace(answer, parsed=answer.data())

    def read_resource(self, uri: str) -> list[JSONObject]:
        """The contents of one resource (each with ``uri`` and ``text`` or ``blob``)."""
        result = self.request("resources/read", {"uri": uri})
        contents = result.get("contents")
        if not isinstance(contents, list) or not all(
            isinstance(c, dict) and isinstance(c.get("uri"), str) for c in contents
        ):
            raise ProtocolError("resources/read: contents must be a list of objects with a uri")
        return contents

    def read_contents(self, uri: str) -> list[ResourceContent]:
        """The contents of one resource, each item checked.

        Each has exactly one of ``text`` (a string) and ``blob`` (strict base64, decoded), an
        optional well-formed ``mimeType`` and an optional ``_meta`` object; there are at most
        :data:`MAX_CONTENTS` items.

        Raises:
            ProtocolError: an item breaks one of those rules (``what`` says which).
            TooLarge: more items than :data:`MAX_CONTENTS` (``what``: ``contents``).
            PeerError, Unreachable, Timeout, Gated: as :meth:`request`.
        """
        items = self.read_resource(uri)
        if len(items) > MAX_CONTENTS:
            raise TooLarge("contents", MAX_CONTENTS, len(items))
        return [_resource_content(item) for item in items]

    def subscribe_resource(self, uri: str) -> None:
        """Ask the server to send ``notifications/resources/updated`` when ``uri`` changes."""
        self.request("resources/subscribe", {"uri": uri})

    def unsubscribe_resource(self, uri: str) -> None:
        """Ask the server to stop telling of ``uri``."""
        self.request("resources/unsubscribe", {"uri": uri})

    def listen(
        self,
        notifications: JSONObject,
        on_notification: Callable[[str, JSONObject], None],
        hangup: Hangup,
        *,
        read_seconds: float = 45.0,
    ) -> str:
        """Hold a 2026-07-28 ``subscriptions/listen`` stream open, telling each notification.

        ``notifications`` is the listen's filter (``resourceSubscriptions``,
        ``toolsListChanged``…); ``on_notification(method, params)`` is called for each
        notification, the acknowledgement included, from the calling thread. Returns how the
        stream ended (``"complete"``, ``"closed"``, ``"hung up"``); not under the client's lock,
        so other requests go on meanwhile.

        Raises:
            ProtocolError: the server does not speak 2026-07-28 over HTTP. And what
            :meth:`HttpTransport.listen` raises.
        """
        hs = self.handshake()
        transport = self._transport
        if hs.era != "discover" or not isinstance(transport, HttpTransport):
            raise ProtocolError(
                f"subscriptions/listen needs {MODERN_VERSION} over HTTP "
                f"(the server speaks {hs.protocol_version})"
            )
        params: JSONObject = {"notifications": notifications}
        body = self._params(params, MODERN_VERSION) or params

        return transport.listen(
            body,
            self._routing("subscriptions/listen", params, MODERN_VERSION),
            connect_seconds=self.start_timeout,
            read_seconds=read_seconds,
            on_notification=_told(on_notification),
            hangup=hangup,
        )

    def session_stream(
        self,
        on_notification: Callable[[str, JSONObject], None],
        hangup: Hangup,
        *,
        opened: Callable[[], None],
        event_id: Callable[[str], None],
        last_event_id: str | None = None,
        read_seconds: float = 45.0,
    ) -> str:
        """Hold a 2025-era HTTP session's own GET stream open, telling each notification.

        The stream of the session the handshake opened (``Mcp-Session-Id``), asked with the
        version it chose (``MCP-Protocol-Version``) and, when given, ``Last-Event-ID``;
        ``opened()`` is called once it is open, ``event_id(id)`` with each event id the server
        sends, ``on_notification(method, params)`` for each notification, from the calling
        thread. Returns how it ended (``"closed"``, ``"hung up"``); not under the client's lock,
        so requests (``resources/subscribe``…) go on meanwhile.

        Raises:
            ProtocolError: the server speaks 2026-07-28, is not over HTTP, or issued no
            session. And what :meth:`HttpTransport.session_stream` raises (an
            :class:`Unreachable` with ``status`` 404: the session is gone).
        """
        hs = self.handshake()
        transport = self._transport
        if hs.era != "initialize" or not isinstance(transport, HttpTransport):
            raise ProtocolError(
                "a session stream needs a 2025-era server over HTTP "
                f"(the server speaks {hs.protocol_version})"
            )

        return transport.session_stream(
            {"MCP-Protocol-Version": hs.protocol_version},
            last_event_id=last_event_id,
            connect_seconds=self.start_timeout,
            read_seconds=read_seconds,
            opened=opened,
            on_notification=_told(on_notification),
            event_id=event_id,
            hangup=hangup,
        )

    def complete(
        self,
        ref: Mapping[str, Any],
        argument: Mapping[str, str],
        context: Mapping[str, str] | None = None,
    ) -> Completion:
        """Ask for completions of one argument.

        Args:
            ref: ``{"type": "ref/resource", "uri": template}`` or
                ``{"type": "ref/prompt", "name": name}``.
            argument: ``{"name": ..., "value": ...}``.
            context: arguments already resolved, by name.
        """
        params: JSONObject = {"ref": dict(ref), "argument": dict(argument)}
        if context:
            params["context"] = {"arguments": dict(context)}
        result = self.request("completion/complete", params)
        completion = _object(result.get("completion"), "completion")
        values = completion.get("values")
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise ProtocolError("completion/complete: values must be a list of strings")
        if len(values) > 100:
            raise TooLarge("items", 100, len(values))
        total = completion.get("total")
        return Completion(
            values,
            total if isinstance(total, int) else None,
            bool(completion.get("hasMore", False)),
        )


def probe(client: Client) -> ProbeResult:
    """Meet the server and list everything it offers, recording what each listing did.

    Raises:
        McpClientError: the handshake itself failed (nothing was declared).
    """
    started = time.monotonic()
    asked_at = datetime.now(UTC)
    hs = client.handshake()
    errors: dict[str, McpClientError] = {}

    def attempt(name: str, fn: Callable[[], list[JSONObject]]) -> list[JSONObject]:
        try:
            return fn()
        except McpClientError as exc:
            errors[name] = exc
            return []

    tools = attempt("tools", client.list_tools)
    resources = attempt("resources", client.list_resources)
    templates = attempt("resource_templates", client.list_resource_templates)
    prompts = attempt("prompts", client.list_prompts)
    return ProbeResult(
        hs, tools, resources, templates, prompts, errors, asked_at, time.monotonic() - started
    )


def _resource_content(item: JSONObject) -> ResourceContent:
    """One ``resources/read`` item, checked (see :meth:`Client.read_contents`).

    Raises:
        ProtocolError: the item is malformed.
    """
    text, blob = item.get("text"), item.get("blob")
    if (text is None) == (blob is None):
        raise ProtocolError("resources/read: an item needs exactly one of text and blob")
    if text is not None and not isinstance(text, str):
        raise ProtocolError("resources/read: text must be a string")
    data: bytes | None = None
    if blob is not None:
        if not isinstance(blob, str):
            raise ProtocolError("resources/read: blob must be a base64 string")
        try:
            data = base64.b64decode(blob, validate=True)
        except (binascii.Error, ValueError):
            raise ProtocolError(
                "resources/read: blob is not valid base64", jsonrpc.excerpt(blob)
            ) from None
    mime = item.get("mimeType")
    if mime is not None and not (
        isinstance(mime, str) and len(mime) <= MAX_MEDIA_TYPE and _MEDIA_TYPE.fullmatch(mime)
    ):
        raise ProtocolError(
            "resources/read: mimeType is not a media type", jsonrpc.excerpt(repr(mime))
        )
    meta = item.get("_meta")
    if meta is not None and not isinstance(meta, dict):
        raise ProtocolError("resources/read: _meta must be an object")
    return ResourceContent(str(item["uri"]), mime, text, data, meta)


def _told(
    on_notification: Callable[[str, JSONObject], None],
) -> Callable[[JSONObject], None]:
    """A stream's message handed on as ``(method, params)`` (params not an object: ``{}``)."""

    def each(message: JSONObject) -> None:
        params = message.get("params")
        on_notification(str(message["method"]), params if isinstance(params, dict) else {})

    return each


def _object(value: Any, what: str) -> JSONObject:
    if not isinstance(value, dict):
        raise ProtocolError(f"{what} must be an object")
    return value


def _optional_str(value: Any, what: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ProtocolError(f"{what} must be a string")
    return value


def _header_value(value: str) -> str:
    if (
        re.fullmatch(r"[\x20-\x7e]*", value)
        and value == value.strip()
        and not (value.startswith("=?base64?") and value.endswith("?="))
    ):
        return value
    return f"=?base64?{base64.b64encode(value.encode()).decode('ascii')}?="


def _page_entries(method: str, key: str, required: str, result: JSONObject) -> list[JSONObject]:
    """The entries of one page of a list method, each an object with a string ``required``.

    Raises:
        ProtocolError: the page is not a list, or an entry lacks its string ``required``.
    """
    page = result.get(key, [])
    if not isinstance(page, list):
        raise ProtocolError(f"{method}: {key} is not a list")
    for item in page:
        if not isinstance(item, dict) or not isinstance(item.get(required), str):
            raise ProtocolError(
                f"{method}: an entry without a string {required}",
                jsonrpc.excerpt(repr(item)),
            )
    return page


def _next_cursor(method: str, result: JSONObject, seen: set[str], pages: int) -> str | None:
    """The cursor of the next page (added to ``seen``), or None after the last page.

    Raises:
        ProtocolError: the cursor is not a string, or is one already followed (a cycle).
    """
    nxt = result.get("nextCursor")
    if nxt is None or nxt == "":
        return None
    if not isinstance(nxt, str):
        raise ProtocolError(f"{method}: nextCursor is not a string")
    if nxt in seen:
        raise ProtocolError(
            f"{method}: cursor cycle (a cursor came back after {pages} pages)", nxt[:200]
        )
    seen.add(nxt)
    return nxt


def _carrying(params: JSONObject | None) -> JSONObject | None:
    """``params`` with the current trace context in its ``_meta`` (SEP-414), when tracing."""
    if not tracing.enabled():
        return params
    out = dict(params or {})
    meta = out.get("_meta")
    carried = tracing.carried(meta if isinstance(meta, dict) else None)
    if carried:
        out["_meta"] = carried
    return out if out or params is not None else None
