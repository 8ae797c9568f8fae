"""From a server record to a client, and asking a server what it declares (``probe_record``).

The token: ``record.token_setting`` names a Django setting or, failing that, an environment
variable of the box. When the record names one and the box has no value, nothing is started and
nothing is sent: the answer is ``gated``. So it is when a stdio record names a program the
operator does not allow (``tm.W030``, ``failed: program-not-allowed``), and when the address
policy refuses an HTTP peer's URL, a redirect, or an address its name resolves to (``failed:
refused-<what>``): see :mod:`tmsite.servers.programs`. An HTTP server gets the token as a
bearer token; a stdio server gets it in its environment under the same name (and only that one
name beside the allow-listed ones).

A probe stores what the server declared (capped: at most ``MAX_ITEMS`` items a listing, each
item at most ``MAX_ITEM_BYTES`` of JSON, descriptions at most ``MAX_TEXT`` characters; items
without a string name/uri are dropped and counted) and always records on the server when it
asked and what happened: ``answered``, ``gated`` (a token missing or refused) or
``unreachable`` (no answer: spawn failed, the process exited, a deadline passed, the peer broke
the protocol or sent too much — ``last_failure`` says which).

Spec: MCP.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import transaction

from tmsite.mcpclient import (
    Client,
    Gated,
    Limits,
    McpClientError,
    PeerError,
    ProtocolError,
    Refused,
    Timeout,
    TooLarge,
    Unreachable,
    probe,
)
from tmsite.servers.models import McpServer, ServerDeclaration
from tmsite.servers.programs import ProgramNotAllowed, dial_policy

MAX_ITEMS = 1000
MAX_ITEM_BYTES = 64 * 1024
MAX_TEXT = 8192
MAX_NAME = 256
#: Declarations kept per server (the newest is served; older ones are history).
KEPT = 10
LIMITS = Limits(max_message_bytes=4 * 1024 * 1024, max_items=10_000, max_pages=50)


class TokenMissing(Exception):
    """The record names a token the box does not hold."""

    def __init__(self, setting: str) -> None:
        super().__init__(f"the token setting {setting} has no value on this box")
        self.setting = setting


def token_for(record: McpServer) -> str | None:
    """The token the record's setting names, or None when none is needed.

    Raises:
        TokenMissing: one is needed and the box lacks it.
    """
    name = record.token_setting
    if not name:
        return None
    value = getattr(settings, name, None)
    if not isinstance(value, str) or not value:
        value = os.environ.get(name, "")
    if not value:
        raise TokenMissing(name)
    return value


def client_for(record: McpServer) -> Client:
    """A client for the record (not yet started).

    Raises:
        TokenMissing: the record needs a token the box lacks.
        ProgramNotAllowed: a stdio record names a program the operator does not allow.
        ValueError: the record's transport is malformed (an admin form refuses these first).
    """
    token = token_for(record)
    if record.transport == "http":
        return Client.http(
            record.url,
            token=token,
            timeout=record.call_timeout,
            start_timeout=record.start_timeout,
            limits=LIMITS,
            policy=dial_policy(),
        )
    program = record.launch()
    env = {record.token_setting: token} if token is not None else None
    return Client.stdio(
        list(program.argv),
        cwd=program.working_directory(),
        env_allow=list(program.env_allow),
        env=env,
        start_timeout=record.start_timeout,
        call_timeout=record.call_timeout,
        shutdown_timeout=2.0,
        limits=LIMITS,
    )


@dataclass(frozen=True)
class Outcome:
    """What happened when a server was asked: ``answered``, ``gated`` or ``unreachable``."""

    outcome: str
    failure: str
    detail: str
    declaration: ServerDeclaration | None = None


#: (error class, outcome, its ``last_failure``), tried in order; the first class that matches.
_DESCRIBED: tuple[tuple[type[McpClientError], str, Callable[[Any], str]], ...] = (
    (Gated, "gated", lambda exc: f"http-{exc.status}" if exc.status else "token-missing"),
    (Refused, "gated", lambda exc: f"refused-{exc.what}"),
    (Timeout, "unreachable", lambda _exc: "timeout"),
    (Unreachable, "unreachable", lambda exc: exc.what),
    (TooLarge, "unreachable", lambda _exc: "too-large"),
    (ProtocolError, "unreachable", lambda _exc: "protocol"),
    (PeerError, "unreachable", lambda _exc: "refused"),
)


def describe(exc: McpClientError) -> tuple[str, str]:
    """(outcome, failure) for a client error raised before anything was declared."""
    for kind, outcome, failure in _DESCRIBED:
        if isinstance(exc, kind):
            return outcome, failure(exc)
    return "unreachable", "error"


def probe_record(record: McpServer) -> Outcome:
    """Ask the server once (handshake and every listing, all pages) and record what happened."""
    asked = datetime.now(UTC)
    try:
        client = client_for(record)
    except TokenMissing as exc:
        return _record(record, asked, Outcome("gated", "token-missing", str(exc)))
    except ProgramNotAllowed as exc:
        return _record(record, asked, Outcome("gated", "program-not-allowed", str(exc)))
    except ValueError as exc:
        return _record(record, asked, Outcome("unreachable", "config", str(exc)))
    try:
        with client:
            result = probe(client)
    except McpClientError as exc:
        outcome, failure = describe(exc)
        return _record(record, asked, Outcome(outcome, failure, _cap(str(exc), 2000)))
    dropped: dict[str, int] = {}
    declaration = ServerDeclaration(
        server=record,
        asked_at=result.asked_at,
        seconds=round(result.seconds, 4),
        protocol_version=result.handshake.protocol_version,
        era=result.handshake.era,
        capabilities=_capped_item(result.handshake.capabilities) or {},
        server_info=_capped_item(result.handshake.server_info) or {},
        instructions=_cap(result.handshake.instructions or "", MAX_TEXT),
        tools=_listing(result.tools, "name", "tools", dropped),
        resources=_listing(result.resources, "uri", "resources", dropped),
        resource_templates=_listing(
            result.resource_templates, "uriTemplate", "resource_templates", dropped
        ),
        prompts=_listing(result.prompts, "name", "prompts", dropped),
        listing_errors={name: _cap(str(exc), 1000) for name, exc in result.errors.items()},
        dropped=dropped,
    )
    refused = client.refused_requests
    detail = f"refused server requests: {', '.join(refused)}" if refused else ""
    return _record(record, asked, Outcome("answered", "", detail, declaration))


def _record(record: McpServer, asked: datetime, outcome: Outcome) -> Outcome:
    with transaction.atomic():
        record.last_asked_at = asked
        record.last_outcome = outcome.outcome
        record.last_failure = outcome.failure
        record.last_detail = outcome.detail
        fields = ["last_asked_at", "last_outcome", "last_failure", "last_detail"]
        if outcome.declaration is not None:
            outcome.declaration.save()
            record.last_answered_at = outcome.declaration.asked_at
            fields.append("last_answered_at")
            old = record.declarations.order_by("-asked_at", "-id").values_list("id", flat=True)
            stale = list(old[KEPT:])
            if stale:
                ServerDeclaration.objects.filter(id__in=stale).delete()
        McpServer.objects.filter(pk=record.pk).update(**{f: getattr(record, f) for f in fields})
    return outcome


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _capped_value(value: Any, depth: int = 0) -> Any:
    if depth > 32:
        return None
    if isinstance(value, str):
        return _cap(value, MAX_TEXT)
    if isinstance(value, dict):
        return {str(k)[:MAX_NAME]: _capped_value(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_capped_value(v, depth + 1) for v in value]
    return value


def _capped_item(item: Any) -> dict[str, Any] | None:
    if not isinstance(item, dict):
        return None
    capped = _capped_value(item)
    assert isinstance(capped, dict)
    if len(json.dumps(capped, ensure_ascii=False)) > MAX_ITEM_BYTES:
        return None
    return capped


def _listing(
    items: list[dict[str, Any]], key: str, name: str, dropped: dict[str, int]
) -> list[dict[str, Any]]:
    kept: list[dict[str, Any]] = []
    seen: set[str] = set()
    lost = 0
    for item in items:
        ident = item.get(key)
        capped = _capped_item(item) if len(kept) < MAX_ITEMS else None
        if (
            capped is None
            or not isinstance(ident, str)
            or not ident
            or len(ident) > MAX_NAME
            or ident in seen
            or "\0" in ident
        ):
            lost += 1
            continue
        seen.add(ident)
        kept.append(capped)
    if lost:
        dropped[name] = lost
    return kept
