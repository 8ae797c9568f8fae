"""Protocol facts shared by every surface: versions, eras, the call context, JSON-RPC errors.

Two eras of the Model Context Protocol are spoken:

* the ``initialize`` era (2024-11-05 … 2025-11-25): a handshake, then requests that carry the
  negotiated version in the ``MCP-Protocol-Version`` header (absent means 2025-03-26);
* the stateless 2026-07-28 era: ``server/discover``, the version and client info in each
  request's ``_meta``, headers checked against the body, ``resultType`` on results.

Spec: T7.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from tmsite.mcp.prepared import Chosen
    from tmsite.oplog.hooks import Exchange
    from tmsite.subscriptions.sessions import Session

INITIALIZE_VERSIONS: tuple[str, ...] = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_INITIALIZE_VERSION = "2025-11-25"
STATELESS_VERSION = "2026-07-28"
SUPPORTED_VERSIONS: tuple[str, ...] = (*INITIALIZE_VERSIONS, STATELESS_VERSION)
#: What a request without any version header is taken to speak (the transport spec's rule).
DEFAULT_HEADERLESS_VERSION = "2025-03-26"
#: Versions that still allow JSON-RPC batches.
BATCH_VERSIONS: frozenset[str] = frozenset({"2024-11-05", "2025-03-26"})

Era = Literal["2025", "2026"]

# JSON-RPC and MCP error codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002
HEADER_MISMATCH = -32020
UNSUPPORTED_VERSION = -32022

META_LINKS_KEY = "tinymachines.ai/links"


def era_of(version: str) -> Era:
    """The era a protocol version belongs to."""
    return "2026" if version >= STATELESS_VERSION else "2025"


@dataclass(frozen=True)
class StreamOffer:
    """The transport can hold this request open as a stream (its answer a :class:`StreamResult`).

    Attributes:
        rid: The request's id, which tags the stream's messages.
        accept: The request's ``Accept`` header; None where there is none to check (stdio).
    """

    rid: Any
    accept: str | None = None


class Subscriber(Protocol):
    """What holds the 2025-11-25 subscriptions of a session kept in this process (stdio's)."""

    def subscribe(self, uri: str) -> None:
        """Hold ``uri`` until unsubscribed."""
        ...

    def unsubscribe(self, uri: str) -> None:
        """Stop telling of ``uri``."""
        ...


@dataclass(slots=True)
class CallContext:
    """What a method handler knows about the request it answers (made once per request).

    Not frozen: a frozen dataclass sets each field through ``object.__setattr__``, and one is
    made on every request's hot path; nothing changes a context once it is made.

    Attributes:
        version: The protocol version this request speaks.
        transport: ``"http"`` or ``"stdio"``.
        client_info: The client's ``clientInfo`` when it sent one (2026-07-28 carries it in
            ``_meta``); informational only, never logged.
        stream: What the transport offers to hold this request open as a stream; None where it
            holds none (a WSGI server, or a request it does not route to a stream).
        session: The valid session (``Mcp-Session-Id``) an HTTP request carries, where sessions
            are kept; else None.
        subscriber: What holds the subscriptions of the session the transport is (stdio: the
            process); else None.
        chosen: The prepared answer the server chose for the request in its event loop
            (``prepared.current``), which it is answered with; else None.
        delivers: Whether the server answering holds streams and sessions' subscriptions
            (``python -m tmsite.serve``; ``mcp_stdio`` with subscriptions): what the
            capabilities say (:mod:`tmsite.bus.delivery`).
        exchange: The request as the log keeps it (its caller, its row; ``hooks.Exchange``);
            None where it is not observed.
    """

    version: str = LATEST_INITIALIZE_VERSION
    transport: Literal["http", "stdio"] = "http"
    client_info: dict[str, Any] = field(default_factory=dict)
    stream: StreamOffer | None = None
    session: Session | None = None
    subscriber: Subscriber | None = None
    chosen: Chosen | None = None
    delivers: bool = False
    exchange: Exchange | None = None

    @property
    def era(self) -> Era:
        """The era of ``version``: which methods exist and how results are stamped."""
        return era_of(self.version)


class StreamResult:
    """What a handler answers with when the transport is to hold the request open as a stream.

    A subclass says what the stream delivers (``subscriptions/listen``'s plan); the transport
    that offered the stream recognises it by its type and starts the stream from it. It is not
    a result: nothing of it is sent as the response.
    """


class RpcError(Exception):
    """A JSON-RPC error answered to the client (HTTP 200 on the HTTP transport).

    ``status``: the HTTP status it is sent with when not the endpoint's own (a listen's
    ``Accept`` without ``text/event-stream`` is 406, as the transport's own refusal is).
    """

    def __init__(
        self,
        code: int,
        message: str,
        data: dict[str, Any] | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.status = status

    def to_json(self) -> dict[str, Any]:
        """The ``error`` member of a JSON-RPC response; ``data`` only when there is some."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error
