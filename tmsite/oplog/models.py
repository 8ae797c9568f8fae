"""The request log: one row per request, what was asked and how it ended — never who asked.

There is deliberately no column for an address, a user agent, a token, a session, a tool's
arguments, or anything derived from them (no hash either). Rows older than
``TM_LOG_RETENTION_DAYS`` (30) are deleted automatically. The log is not in the namespace.

Beside it, the admin's logins and lock-outs (:class:`LoginEvent`): the account name, and the
caller only as its key for the day — an HMAC that links to nothing once the day's secret is gone.

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


class LoginEvent(models.Model):
    """One admin login attempt that mattered, or one lock-out: never the caller's address.

    ``caller`` is the caller's key for the day (:func:`tmsite.callers.caller.keyed`), an HMAC
    under a secret that lives a day or two: it tells one caller's attempts of a day apart from
    another's, and once the secret is gone it links to nothing. A lock-out is one row (its
    ``until``, and how many attempts it refused), not one row per refused attempt. Rows older
    than ``TM_LOG_RETENTION_DAYS`` are deleted with the request log's.

    Spec: OP4.
    """

    OK = "ok"
    FAILED = "failed"
    TOKEN_FAILED = "token-failed"
    LOCKED = "locked"
    OUTCOMES = (
        (OK, "logged in"),
        (FAILED, "wrong account or password"),
        (TOKEN_FAILED, "right password, wrong token"),
        (LOCKED, "locked out"),
    )
    ACCOUNT = "account"
    CALLER = "caller"
    SCOPES = ((ACCOUNT, "the account"), (CALLER, "the caller"))

    at = models.DateTimeField(db_index=True, help_text="When it happened (UTC).")
    account = models.CharField(
        max_length=150, help_text="The account name as typed (case folded), existing or not."
    )
    caller = models.CharField(
        max_length=32, help_text="The caller's key for that day: an HMAC, never the address."
    )
    outcome = models.CharField(max_length=16, choices=OUTCOMES)
    scope = models.CharField(
        max_length=8, blank=True, choices=SCOPES, help_text="What a lock-out locks."
    )
    until = models.DateTimeField(null=True, blank=True, help_text="When a lock-out ends.")
    refused = models.PositiveIntegerField(
        default=0, help_text="Attempts a lock-out refused without looking at the password."
    )

    class Meta:
        verbose_name = "login event"
        verbose_name_plural = "logins and lock-outs"
        indexes = (
            models.Index(fields=["account", "at"], name="tm_login_account_at"),
            models.Index(fields=["caller", "at"], name="tm_login_caller_at"),
        )

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.account} {self.outcome}"
