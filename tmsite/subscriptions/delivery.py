"""Whether the server answering this request delivers subscription streams, and what it says.

Only ``python -m tmsite.serve`` holds streams (in its event loop); the WSGI servers (gunicorn,
Django's test live server) answer one request at a time on a thread and refuse
``subscriptions/listen``. The ASGI application runs each MCP request inside :func:`serving`,
so ``server/discover`` advertises the resources' ``listChanged`` and ``subscribe`` capabilities
there and nowhere else. The tools' and prompts' lists never change while a box runs (they are
tables in the code), so their ``listChanged`` is advertised nowhere.

Spec: SUB1.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

_here: ContextVar[bool] = ContextVar("tm_streams_delivered", default=False)


@contextlib.contextmanager
def serving() -> Iterator[None]:
    """The block answers a request on a server that delivers streams."""
    token = _here.set(True)
    try:
        yield
    finally:
        _here.reset(token)


def here() -> bool:
    """Whether the request being answered is served where streams are delivered."""
    return _here.get()


def listen_capabilities() -> dict[str, dict[str, bool]]:
    """The capabilities a 2026-07-28 ``subscriptions/listen`` stream delivers, here; or none."""
    if not here():
        return {}
    # tools/list and prompts/list are tables in the code, fixed while a box runs: never told
    return {
        "tools": {"listChanged": False},
        "resources": {"subscribe": True, "listChanged": True},
        "prompts": {"listChanged": False},
    }
