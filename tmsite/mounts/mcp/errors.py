"""The ``mcp`` mount's one translation of foreign failures into the namespace's refusals.

What a call to an MCP server can raise — the client's errors (``tmsite.mcpclient``), a token
the box does not hold (``tmsite.servers.connect.TokenMissing``) and a program the operator does
not allow (``tmsite.servers.programs.ProgramNotAllowed``) — leaves the mount only through
``translated``, by the table ``FAULTS``:

* ``Gated`` → ``gated`` (the status, the token setting, whether a token was sent), a missing
  token → ``gated`` with the setting that would hold it; a program not allowed → ``gated``
  with ``failed: program-not-allowed``, the program and the start-up check id; an address the
  policy refuses (``Refused``) → ``gated`` with ``failed: refused-<what>``, the host, the
  address and why (``private``, ``link-local`` …), nothing having been dialled;
* ``Timeout`` → ``timeout`` (the seconds waited and which deadline);
* everything else that stops an answer (``Unreachable``, a protocol break, an answer over the
  client's byte cap, a JSON-RPC error) → ``unreachable`` with ``failed`` naming which. An answer
  nested deeper than the client's depth cap — the message itself, or the JSON a lone text item
  carries — is ``failed: too-deep`` with ``limit`` and ``what`` (``message`` or ``text``):
  refused before it is parsed, never served as text.

Spec: MCP, RJ1.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tmsite.core import errors
from tmsite.mcpclient import (
    Gated,
    McpClientError,
    PeerError,
    ProtocolError,
    Refused,
    Timeout,
    TooDeep,
    TooLarge,
    Unreachable,
)
from tmsite.servers.connect import TokenMissing
from tmsite.servers.models import McpServer
from tmsite.servers.programs import ProgramNotAllowed

#: What ``translated`` turns into refusals (a completion, which never refuses, ignores these).
FOREIGN: tuple[type[Exception], ...] = (McpClientError, TokenMissing, ProgramNotAllowed)

#: Client error → (refusal class, ``failed``), first match wins.
FAULTS: tuple[tuple[type[McpClientError], type[errors.Refusal], str], ...] = (
    (Gated, errors.Gated, ""),
    (Refused, errors.Gated, "refused"),
    (Timeout, errors.Timeout, ""),
    (Unreachable, errors.Unreachable, ""),
    (TooLarge, errors.Unreachable, "too-large"),
    (TooDeep, errors.Unreachable, "too-deep"),
    (ProtocolError, errors.Unreachable, "protocol"),
    (PeerError, errors.Unreachable, "refused"),
    (McpClientError, errors.Unreachable, "error"),
)


@contextmanager
def translated(uri: str, record: McpServer) -> Iterator[None]:
    """Run a call to ``record``'s server: a foreign failure leaves as the refusal for ``uri``.

    Raises:
        Refusal: ``gated``, ``timeout`` or ``unreachable`` (see the module docstring).
    """
    try:
        yield
    except TokenMissing:
        raise errors.Gated(
            uri,
            f"the MCP server {record.name} wants a token this box does not hold",
            tokenSetting=record.token_setting,
        ) from None
    except ProgramNotAllowed as exc:
        raise not_allowed(uri, exc) from None
    except McpClientError as exc:
        raise refusal_for(exc, uri, record) from None


def not_allowed(uri: str, exc: ProgramNotAllowed) -> errors.Gated:
    """``gated``: the record names a program the operator does not allow; nothing started."""
    return errors.Gated(
        uri,
        str(exc),
        failed="program-not-allowed",
        program=exc.program,
        check=exc.check_id,
    )


def refusal_for(exc: McpClientError, uri: str, record: McpServer) -> errors.Refusal:
    """The mount's refusal for one client error (see :data:`FAULTS`)."""
    refusal, failed = next((r, f) for k, r, f in FAULTS if isinstance(exc, k))
    name = record.name
    if isinstance(exc, Refused):
        return errors.Gated(
            uri,
            f"the box does not connect to the MCP server {name}: {exc.detail}",
            failed=f"{failed}-{exc.what}",
            host=exc.host,
            address=exc.address or None,
            why=exc.reason or None,
        )
    if isinstance(exc, Gated):
        return errors.Gated(
            uri,
            f"the MCP server {name} wants a credential this box does not hold"
            + (f" (HTTP {exc.status})" if exc.status else ""),
            status=exc.status,
            tokenSetting=record.token_setting or None,
            tokenSent=exc.token_sent,
        )
    if isinstance(exc, Timeout):
        return errors.Timeout(
            uri,
            f"the MCP server {name} did not answer within its {exc.deadline} deadline",
            seconds=exc.seconds,
            deadline=exc.deadline,
        )
    helpers: dict[str, Any] = {"server": name}
    why = ""
    if isinstance(exc, Unreachable):
        helpers.update(failed=exc.what, status=exc.status, exitCode=exc.exit_code)
    elif isinstance(exc, TooLarge):
        helpers.update(failed=failed, limit=exc.limit, what=exc.what)
    elif isinstance(exc, TooDeep):
        helpers.update(failed=failed, limit=exc.limit, what=exc.part)
        why = f": its {exc.part} nests deeper than {exc.limit} levels"
    elif isinstance(exc, PeerError):
        helpers.update(failed=failed, code=exc.code)
    else:
        helpers.update(failed=failed)
    return refusal(
        uri, f"the MCP server {name} did not answer well ({helpers['failed']}{why})", **helpers
    )
