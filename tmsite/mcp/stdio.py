"""The stdio transport: the same dispatch over newline-delimited JSON on stdin and stdout.

Framing follows the stdio server described in seed 000 (and ``basic/transports.mdx``, stdio):

* one line is one message, UTF-8 JSON, no ``Content-Length`` headers;
* blank lines are skipped; a line that is not strict JSON (or longer than 4 MiB) is dropped
  without a reply — there is no id to answer to;
* messages without ``method`` (client responses) are ignored; notifications get no reply;
* stdin closed → exit status 0;
* stdout carries JSON-RPC responses only: anything else the process prints goes to stderr, and
  so does every log line;
* a request the server fails to answer gets -32603 with its id; the failure is logged once per
  class a minute (``tmsite.oplog.failures``), not a traceback per line.

Era: a request whose ``params._meta`` carries ``io.modelcontextprotocol/protocolVersion`` is
served statelessly as 2026-07-28 (the envelope ladder without its HTTP header rung); any other
request speaks the version this process negotiated with ``initialize`` (``versioning.mdx``: an
``initialize`` selects legacy semantics scoped to the stdio process), or the latest
initialize-era version before any handshake. Batches are accepted only while that version
allows them (2025-03-26 and older).

Spec: T11.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from typing import Any, BinaryIO

from tmsite.mcp import observed
from tmsite.mcp.envelope import (
    MAX_BODY_BYTES,
    EnvelopeRefusal,
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
from tmsite.oplog import failures

logger = logging.getLogger("tmsite.mcp.stdio")


class StdioSession:
    """One stdio peer: the version it negotiated, and how to answer each of its lines."""

    def __init__(self) -> None:
        self.negotiated: str | None = None

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
            return None
        try:
            if modern_meta(message) is not None:
                ctx = check_modern(message, None)
            else:
                ctx = CallContext(version=self.legacy_version, transport="stdio")
            answer = observed.run_request(message, ctx)  # a request log row (stdio: no limit)
        except EnvelopeRefusal as refusal:
            return dumps(refusal.body())
        except Exception as exc:
            failures.report("mcp-stdio session", exc)
            return observed.internal_error(message.id).text
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


def serve(stdin: BinaryIO, stdout: BinaryIO) -> int:
    """Answer lines from ``stdin`` on ``stdout`` until end of input; returns the exit status.

    While serving, ``sys.stdout`` points at stderr, so a stray ``print`` anywhere cannot corrupt
    the JSON-RPC stream.
    """
    session = StdioSession()
    with contextlib.redirect_stdout(sys.stderr):
        for line in stdin:
            reply = session.handle_line(line)
            if reply is None:
                continue
            try:
                stdout.write(reply.encode("utf-8") + b"\n")
                stdout.flush()
            except BrokenPipeError:
                logger.warning("stdout closed by the client; stopping")
                return 0
    return 0
