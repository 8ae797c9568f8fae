"""Caps and deadlines shared by both transports.

Spec: MCP.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from tmsite.mcpclient.errors import Deadline as DeadlineKind
from tmsite.mcpclient.errors import Timeout

MIB = 1024 * 1024
#: The default depth cap: as deep as this site's own server accepts (``tmsite.mcp.envelope``).
MAX_DEPTH = 64


@dataclass(frozen=True, slots=True)
class Limits:
    """What the client accepts from a server before it stops listening.

    Attributes:
        max_message_bytes: bytes in one JSON-RPC message (one stdout line, one JSON body, one
            SSE event).
        max_items: entries in one listing, summed over its pages.
        max_pages: pages in one listing.
        max_stderr_log_bytes: bytes of a stdio server's stderr written to the log; the rest is
            drained and dropped.
        stderr_tail_bytes: bytes of stderr kept to explain a failure.
        max_depth: arrays and objects nested one inside the other in one message, and in the
            JSON a tool answer's lone text item carries; checked on the bytes, before anything
            is parsed.
    """

    max_message_bytes: int = 4 * MIB
    max_items: int = 10_000
    max_pages: int = 100
    max_stderr_log_bytes: int = 64 * 1024
    stderr_tail_bytes: int = 2048
    max_depth: int = MAX_DEPTH


@dataclass(slots=True)
class Deadline:
    """A monotonic deadline of one kind; :meth:`remaining` raises :class:`Timeout` once past."""

    kind: DeadlineKind
    seconds: float
    method: str | None = None
    end: float = field(init=False)

    def __post_init__(self) -> None:
        self.end = time.monotonic() + self.seconds

    def remaining(self) -> float:
        """Seconds left; raises Timeout when none are."""
        left = self.end - time.monotonic()
        if left <= 0:
            raise self.expired()
        return left

    def expired(self) -> Timeout:
        """The Timeout this deadline raises."""
        return Timeout(self.kind, self.seconds, self.method)
