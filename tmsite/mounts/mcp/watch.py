"""The mcp mount's change sources: the server records' stamp, and the peers' own notices.

What the records say (a server's status, what it declared, its map) is stamped by a few
aggregates over them and read while it is listened to; what asks a server (a resource's
content) is told by the server itself, through
:class:`~tmsite.servers.notices.PeerNotices` (a stdio or 2026-07-28 HTTP server's
``resources/updated`` and ``*/list_changed``).

Spec: SUB3, SRCH1.
"""

from __future__ import annotations

from collections.abc import Hashable

from django.db import DatabaseError
from django.db.models import Count, Max, Sum

#: The models whose saves and deletes wake the records' watcher in the process that saved.
SENDERS = ("tm_servers.McpServer", "tm_servers.ServerDeclaration", "tm_servers.MapEntry")
#: What the records' watcher reads: descriptions only, never what runs on a server.
DESCRIBED = frozenset({"tools", "prompts", "map"})


def stamp() -> Hashable:
    """The server records' status and declarations: moves when any is asked or corrected."""
    from tmsite.servers.models import McpServer, ServerDeclaration

    try:
        records = McpServer.objects.aggregate(
            n=Count("id"),
            asked=Max("last_asked_at"),
            answered=Max("last_answered_at"),
            updated=Max("updated_at"),
            maps=Sum("map_version"),
        )
        declared = ServerDeclaration.objects.aggregate(n=Count("id"), last=Max("id"))
    except DatabaseError:
        return None
    return (tuple(sorted(records.items())), declared["n"], declared["last"])


def described(path: tuple[str, ...]) -> bool:
    """Whether an ``mcp/`` path is read from the records alone (no server is asked)."""
    # resources/ is its listing; a resource under it is its content, which asks the server
    return len(path) <= 1 or path[1] in DESCRIBED or path[1:] == ("resources",)
