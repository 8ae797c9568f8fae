"""Warm clients: one started client per server, process-wide.

A map-named read then does not pay a cold start every time.

* Bounded: at most ``TM_MCP_WARM_MAX`` servers (default 8) are kept; starting one more closes
  the least recently used.
* Keyed by the record's identity and its ``updated_at`` (and the token, and the operator's
  launch spec or address policy): a changed record or program gets a fresh client and the old
  one is closed; a program the operator no longer allows starts nothing.
* Thread-safe: the pool's lock guards the table; each client serialises its own calls.
* Killed on fault: any failure other than a JSON-RPC error answer (a deadline, the process
  gone, a protocol break, too much data) closes the client — its process group is killed — and
  drops it, so the next read starts afresh.
* Everything is closed at interpreter exit (``atexit``) and by :func:`close_all` (tests).

Spec: MCP.
"""

from __future__ import annotations

import atexit
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings

from tmsite.mcpclient import Client, McpClientError, PeerError
from tmsite.servers.connect import client_for, token_for
from tmsite.servers.models import McpServer
from tmsite.servers.programs import dial_policy

T = TypeVar("T")
_lock = threading.Lock()
_clients: OrderedDict[str, tuple[str, Client]] = OrderedDict()


def _limit() -> int:
    return max(1, int(getattr(settings, "TM_MCP_WARM_MAX", 8)))


def _fingerprint(record: McpServer, token: str | None, launch: str) -> str:
    digest = hashlib.blake2s(digest_size=8)
    digest.update(f"{record.pk}|{record.updated_at.isoformat()}|".encode())
    digest.update((token or "").encode() + b"|" + launch.encode())
    return digest.hexdigest()


def _launch(record: McpServer) -> str:
    """What the operator's configuration says of the record now: a changed program restarts."""
    if record.transport != "stdio":
        return repr(sorted(dial_policy().allowed_hosts))
    return repr(record.launch().as_json())  # ProgramNotAllowed propagates: nothing is started


def _take(record: McpServer) -> Client:
    token = token_for(record)  # TokenMissing propagates: nothing is started
    key = _fingerprint(record, token, _launch(record))
    stale: list[Client] = []
    with _lock:
        held = _clients.get(record.name)
        if held is not None and held[0] == key:
            _clients.move_to_end(record.name)
            return held[1]
        if held is not None:
            stale.append(held[1])
            del _clients[record.name]
        client = client_for(record)
        _clients[record.name] = (key, client)
        while len(_clients) > _limit():
            _, (_, oldest) = _clients.popitem(last=False)
            stale.append(oldest)
    for old in stale:
        old.close()
    return client


def _drop(name: str, client: Client) -> None:
    with _lock:
        held = _clients.get(name)
        if held is not None and held[1] is client:
            del _clients[name]
    client.close()


def run(record: McpServer, work: Callable[[Client], T]) -> T:
    """Run ``work`` with the server's warm client (started and met on first use).

    Raises:
        TokenMissing: the record needs a token the box lacks (nothing started).
        ProgramNotAllowed: the record names a program the operator does not allow (nothing
            started).
        McpClientError: as the client raised it; the client is closed and dropped unless the
            server merely answered with a JSON-RPC error.
    """
    client = _take(record)
    try:
        client.handshake()
        return work(client)
    except PeerError:
        raise
    except McpClientError:
        _drop(record.name, client)
        raise


def pids() -> dict[str, int | None]:
    """The warm clients' process ids, by server (for tests and the record)."""
    with _lock:
        return {name: client.pid for name, (_, client) in _clients.items()}


def close(name: str) -> None:
    """Close one server's warm client, if any."""
    with _lock:
        held = _clients.pop(name, None)
    if held is not None:
        held[1].close()


def close_all() -> None:
    """Close every warm client."""
    with _lock:
        held = list(_clients.values())
        _clients.clear()
    for _, client in held:
        client.close()


atexit.register(close_all)
