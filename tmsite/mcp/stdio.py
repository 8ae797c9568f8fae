"""The stdio transport: the same dispatch over newline-delimited JSON on stdin and stdout.

Framing follows the stdio server described in seed 000 (and ``basic/transports.mdx``, stdio):

* one line is one message, UTF-8 JSON, no ``Content-Length`` headers;
* blank lines are skipped; a line that is not strict JSON (or longer than 4 MiB) is dropped
  without a reply — there is no id to answer to;
* messages without ``method`` (client responses) are ignored; notifications get no reply;
* stdin closed → exit status 0;
* stdout carries JSON-RPC messages only — the responses and, where subscriptions are held, their
  notifications — each written whole under one lock (:class:`Writer`); anything else the
  process prints goes to stderr, and so does every log line;
* a request the server fails to answer gets -32603 with its id; the failure is logged once per
  class a minute (``tmsite.oplog.failures``), not a traceback per line.

Era: a request whose ``params._meta`` carries ``io.modelcontextprotocol/protocolVersion`` is
served statelessly as 2026-07-28 (the envelope ladder without its HTTP header rung); any other
request speaks the version this process negotiated with ``initialize`` (``versioning.mdx``: an
``initialize`` selects legacy semantics scoped to the stdio process), or the latest
initialize-era version before any handshake. Batches are accepted only while that version
allows them (2025-03-26 and older).

Subscriptions: ``serve`` may be given what holds them (:class:`Held`, built over the
:class:`Writer`; ``manage.py mcp_stdio`` gives :mod:`tmsite.streams.stdio_stream`, a layer
above this one). It answers the methods it names (``subscriptions/listen``,
``resources/subscribe``, ``resources/unsubscribe``) with the ordinary run of the request at
hand, writes their notifications itself, hears the client's notifications
(``notifications/cancelled``) and is closed when stdin ends. Its requests' context then says
the session delivers subscriptions (``CallContext.delivers``), and so do the capabilities.

Spec: T11, SUB1, SUB2.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
from collections.abc import Callable
from typing import Any, BinaryIO, Protocol

from tmsite.mcp import observed
from tmsite.mcp.envelope import (
    MAX_BODY_BYTES,
    Answer,
    EnvelopeRefusal,
    Message,
    ParseFailure,
    check_modern,
    classify,
    dumps,
    error_response,
    loads_strict,
    modern_meta,
)
from tmsite.mcp.protocol import (
    BATCH_VERSIONS,
    INVALID_REQUEST,
    LATEST_INITIALIZE_VERSION,
    CallContext,
)
from tmsite.oplog import failures, hooks

logger = logging.getLogger("tmsite.mcp.stdio")


class Writer:
    """stdout, shared by the answers and the notifications: one whole line at a time."""

    def __init__(self, stdout: BinaryIO) -> None:
        self._out = stdout
        self._lock = threading.Lock()
        self.closed = False

    def line(self, text: str) -> bool:
        """Write ``text`` and a newline, flushed; False once stdout is closed by the client."""
        data = text.encode("utf-8") + b"\n"
        with self._lock:
            if self.closed:
                return False
            try:
                self._out.write(data)
                self._out.flush()
            except (BrokenPipeError, ValueError, OSError):
                self.closed = True
                logger.warning("stdout closed by the client; stopping")
                return False
        return True


class Held(Protocol):
    """What holds the subscriptions of a stdio session (see the module's text)."""

    #: The requests it answers (with the ordinary run it is handed).
    methods: frozenset[str]

    def request(
        self, message: Message, ctx: CallContext, run: Callable[[CallContext], Answer]
    ) -> str | None:
        """Answer one of ``methods``: the line to write, or None when it wrote its own.

        ``run`` answers the request in the context it is given (the one passed, or more).
        """
        ...

    def notification(self, message: Message) -> None:
        """Hear a notification of the client."""
        ...

    def close(self) -> None:
        """End everything held (stdin ended)."""
        ...


class StdioSession:
    """One stdio peer: the version it negotiated, and how to answer each of its lines."""

    def __init__(self, held: Held | None = None) -> None:
        self.negotiated: str | None = None
        self.held = held

    @property
    def legacy_version(self) -> str:
        """The version a request without the 2026-07-28 ``_meta`` speaks here."""
        return self.negotiated or LATEST_INITIALIZE_VERSION

    def handle_line(self, line: bytes) -> str | None:
        """Answer one line: the JSON text to write, or ``None`` when nothing is owed."""
        if not line.strip():
            return None
        if len(line) > MAX_BODY_BYTES:
            logger.warning("dropped a line longer than %d bytes", MAX_BODY_BYTES)
            return None
        try:
            value = loads_strict(line)
        except ParseFailure as exc:
            logger.warning("dropped an unparsable line: %s", exc)
            return None
        if isinstance(value, list):
            return self._batch(value)
        return self._one(value)

    def _one(self, value: Any) -> str | None:
        if isinstance(value, dict) and "method" not in value:
            return None  # a response, or not a message at all: ignored, as the seed does
        try:
            message = classify(value)
        except EnvelopeRefusal as refusal:
            return dumps(refusal.body())
        if message.kind != "request":
            if self.held is not None and message.kind == "notification":
                try:
                    self.held.notification(message)
                except Exception as exc:
                    failures.report("mcp-stdio session", exc)
            return None
        exchange = hooks.Exchange()  # outside HTTP: nothing limited, the call's row its own
        try:
            if modern_meta(message) is not None:
                ctx = check_modern(message, None, delivers=self.held is not None, exchange=exchange)
            else:
                ctx = CallContext(
                    version=self.legacy_version,
                    transport="stdio",
                    delivers=self.held is not None,
                    exchange=exchange,
                )
            return self._run(message, ctx)
        except EnvelopeRefusal as refusal:
            return dumps(refusal.body())
        except Exception as exc:
            failures.report("mcp-stdio session", exc)
            return observed.internal_error(message.id).text

    def _run(self, message: Message, ctx: CallContext) -> str | None:
        if self.held is not None and message.method in self.held.methods:
            return self.held.request(message, ctx, lambda c: observed.run_request(message, c))
        answer = observed.run_request(message, ctx)  # a request log row (stdio: no limit)
        if message.method == "initialize" and answer.result is not None:
            version = answer.result.get("protocolVersion")
            if isinstance(version, str):
                self.negotiated = version
        return answer.text

    def _batch(self, items: list[Any]) -> str | None:
        if not items:
            return dumps(error_response(None, INVALID_REQUEST, "An empty batch is not a message."))
        if self.legacy_version not in BATCH_VERSIONS:
            return dumps(
                error_response(
                    None,
                    INVALID_REQUEST,
                    f"JSON-RPC batches are not accepted under protocol {self.legacy_version}.",
                )
            )
        parts = [text for text in (self._one(item) for item in items) if text is not None]
        return "[" + ",".join(parts) + "]" if parts else None


def serve(
    stdin: BinaryIO, stdout: BinaryIO, holding: Callable[[Writer], Held] | None = None
) -> int:
    """Answer lines from ``stdin`` on ``stdout`` until end of input; returns the exit status.

    ``holding`` builds what holds subscriptions over the writer (none: they are not offered).
    While serving, ``sys.stdout`` points at stderr, so a stray ``print`` anywhere cannot corrupt
    the JSON-RPC stream.
    """
    writer = Writer(stdout)
    held = holding(writer) if holding is not None else None
    session = StdioSession(held)
    with contextlib.redirect_stdout(sys.stderr):
        try:
            for line in stdin:
                reply = session.handle_line(line)
                if reply is not None and not writer.line(reply):
                    return 0
        finally:
            if held is not None:
                held.close()
    return 0
