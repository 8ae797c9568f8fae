"""The request log: one row per request, what was asked and how it ended — never who asked.

There is deliberately no column for an address, a user agent, a token, a session, a tool's
arguments, or anything derived from them (no hash either). Rows older than
``TM_LOG_RETENTION_DAYS`` (30) are deleted automatically. The log is not in the namespace.

Spec: OP2.
"""

from __future__ import annotations

from django.db import models


class RequestLog(models.Model):
    """One request: when, through which door, what it asked, how it ended, bytes and time."""

    at = models.DateTimeField(db_index=True, help_text="When the request arrived (UTC).")
    surface = models.CharField(
        max_length=16, help_text="mcp-http, mcp-stdio or rest: which door it came through."
    )
    method = models.CharField(
        max_length=64, blank=True, help_text="The JSON-RPC method, or the REST route."
    )
    kind = models.CharField(
        max_length=32, blank=True, help_text="What kind of read it was (prices the rate limit)."
    )
    target = models.CharField(
        max_length=500, blank=True, help_text="The tm:// URI read, or the tool called."
    )
    facet = models.CharField(max_length=32, blank=True, help_text="The URI's ?as= facet.")
    protocol = models.CharField(
        max_length=16, blank=True, help_text="The MCP protocol version the request spoke."
    )
    outcome = models.CharField(
        max_length=32,
        help_text="ok, the refusal reason, rpc-<code> for a JSON-RPC error, or http-<status>.",
    )
    status = models.PositiveSmallIntegerField(default=200, help_text="The HTTP status sent.")
    bytes = models.PositiveIntegerField(default=0, help_text="Bytes of the answer's body.")
    duration_us = models.PositiveIntegerField(default=0, help_text="Microseconds it took.")

    class Meta:
        verbose_name = "request log"
        verbose_name_plural = "request log"

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.method} {self.outcome}"
