"""Whether the server answering this request delivers subscription streams, and what it says.

``python -m tmsite.serve`` holds streams (in its event loop) and so does ``manage.py
mcp_stdio`` (its stdout); the WSGI servers (gunicorn, Django's test live server) answer one
request at a time on a thread and refuse ``subscriptions/listen``. The ASGI application runs
each MCP request inside :func:`serving`, the stdio server its whole session, so
``server/discover`` advertises the resources' ``listChanged`` and ``subscribe`` capabilities
there and nowhere else. The tools' and prompts' lists never change while a box runs (they are
tables in the code), so their ``listChanged`` is advertised nowhere. Where 2025-11-25
``resources/subscribe`` is delivered too (``serving(sessions=True)``: over stdio the process is
the session), ``initialize`` advertises ``resources.subscribe``; no list change is told in that
era, so ``listChanged`` stays false there.

Spec: SUB1, SUB2.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

_here: ContextVar[bool] = ContextVar("tm_streams_delivered", default=False)
_sessions: ContextVar[bool] = ContextVar("tm_session_subscriptions_delivered", default=False)


@contextlib.contextmanager
def serving(*, sessions: bool = False) -> Iterator[None]:
    """The block answers on a server that delivers streams (and sessions' subscriptions)."""
    token = _here.set(True)
    session_token = _sessions.set(sessions)
    try:
        yield
    finally:
        _sessions.reset(session_token)
        _here.reset(token)


def here() -> bool:
    """Whether the request being answered is served where streams are delivered."""
    return _here.get()


def sessions_here() -> bool:
    """Whether 2025-11-25 ``resources/subscribe`` is delivered where this request is served."""
    return _sessions.get()


def delivered() -> tuple[bool, bool]:
    """What is delivered here (streams, sessions' subscriptions): what the capabilities say."""
    return _here.get(), _sessions.get()


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


def session_capabilities() -> dict[str, dict[str, bool]]:
    """What ``initialize`` (2025-11-25 and older) adds where sessions' subscriptions are told."""
    if not sessions_here():
        return {}
    return {"resources": {"subscribe": True, "listChanged": False}}
