"""Every way a call to another MCP server can fail, as one small tree.

All errors derive from :class:`McpClientError` and carry their facts as attributes, so the
``mcp`` mount can translate them into its own rejections by a table (``Unreachable`` →
``unreachable``, ``Gated`` → ``gated``, ``Timeout`` → ``timeout`` …) without parsing messages.
"""

from __future__ import annotations

from typing import Any, Literal

Deadline = Literal["start", "call", "shutdown"]


class McpClientError(Exception):
    """Base class: something went wrong talking to another MCP server."""


class Unreachable(McpClientError):
    """The server could not be reached or stopped answering.

    Attributes:
        what: what failed, e.g. ``"spawn"``, ``"exited"``, ``"connect"``, ``"closed"``, ``"http"``.
        detail: a human-readable account (the OS error, the exit code and stderr tail, the
            HTTP status …).
        status: the HTTP status when one was received, else None.
        exit_code: the process's exit code when it ended, else None.
    """

    def __init__(
        self,
        what: str,
        detail: str,
        *,
        status: int | None = None,
        exit_code: int | None = None,
    ) -> None:
        super().__init__(f"unreachable ({what}): {detail}")
        self.what = what
        self.detail = detail
        self.status = status
        self.exit_code = exit_code


class Timeout(McpClientError):
    """A deadline passed.

    Attributes:
        deadline: which one — ``"start"`` (spawn and handshake), ``"call"`` or ``"shutdown"``.
        seconds: the deadline's length.
        method: the JSON-RPC method waited on, when there was one.
    """

    def __init__(self, deadline: Deadline, seconds: float, method: str | None = None) -> None:
        on = f" waiting for {method}" if method else ""
        super().__init__(f"{deadline} deadline of {seconds:g}s passed{on}")
        self.deadline: Deadline = deadline
        self.seconds = seconds
        self.method = method


class Gated(McpClientError):
    """The server wants credentials the client does not have (or refused the ones it sent).

    Attributes:
        status: 401 or 403, or None when the token was missing before any request.
        token_sent: whether a bearer token went with the request.
        challenge: the ``WWW-Authenticate`` header, if any.
    """

    def __init__(
        self, status: int | None, *, token_sent: bool, challenge: str | None = None
    ) -> None:
        if status is None:
            text = "a token is required and none is configured"
        else:
            text = f"HTTP {status} ({'token refused' if token_sent else 'no token sent'})"
        super().__init__(f"gated: {text}")
        self.status = status
        self.token_sent = token_sent
        self.challenge = challenge


class Refused(McpClientError):
    """The box's own policy refused the connection: nothing was dialled.

    Attributes:
        what: ``scheme``, ``credentials``, ``address``, ``resolve`` or ``redirect``.
        host: the host the URL (or the redirect) names.
        address: the address judged, or ``""``.
        reason: why that address is refused (``private``, ``link-local`` …), or ``""``.
        detail: one sentence.
    """

    def __init__(
        self, what: str, host: str, detail: str, *, address: str = "", reason: str = ""
    ) -> None:
        super().__init__(f"refused ({what}): {detail}")
        self.what = what
        self.host = host
        self.address = address
        self.reason = reason
        self.detail = detail


class ProtocolError(McpClientError):
    """The server said something MCP does not allow, or the client will not accept.

    Attributes:
        what: a short account of what was wrong.
        excerpt: up to 200 characters of the offending message, when there was one.
    """

    def __init__(self, what: str, excerpt: str | None = None) -> None:
        super().__init__(f"protocol error: {what}" + (f" [{excerpt}]" if excerpt else ""))
        self.what = what
        self.excerpt = excerpt


class TooDeep(ProtocolError):
    """The server sent JSON nested deeper than the client's depth cap.

    Refused before the JSON is built, as a protocol failure of that server.

    Attributes:
        part: what was too deep — ``"message"`` (a JSON-RPC message) or ``"text"`` (the JSON a
            tool answer's lone text item carries).
        limit: the cap (arrays and objects, one inside the other).
    """

    def __init__(self, part: str, limit: int) -> None:
        super().__init__(f"{part} nested deeper than {limit} levels")
        self.part = part
        self.limit = limit


class TooLarge(McpClientError):
    """A cap was reached.

    Attributes:
        what: which cap — ``"message"`` (bytes in one message), ``"items"`` (entries in one
            listing), ``"pages"`` (pages in one listing), ``"contents"`` (items in one
            ``resources/read`` answer).
        limit: the cap.
        seen: how much had been seen when the client stopped (at least ``limit + 1`` for bytes).
    """

    def __init__(self, what: str, limit: int, seen: int) -> None:
        super().__init__(f"too large: {what} exceeded the cap of {limit} (saw {seen})")
        self.what = what
        self.limit = limit
        self.seen = seen


class PeerError(McpClientError):
    """The server answered a request with a JSON-RPC error.

    Attributes:
        code: the JSON-RPC error code.
        message: the server's message.
        data: the error's ``data`` member, if any.
        method: the method that was refused.
        status: the HTTP status the error came with (HTTP transport), else None.
    """

    def __init__(
        self,
        code: int,
        message: str,
        *,
        data: Any = None,
        method: str | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(f"peer error {code} on {method}: {message}")
        self.code = code
        self.message = message
        self.data = data
        self.method = method
        self.status = status
