"""What the capabilities say where the server answering a request delivers subscriptions.

``python -m tmsite.serve`` holds streams (in its event loop) and sessions' subscriptions, and
so does ``manage.py mcp_stdio`` (its stdout; the process is the session); the WSGI servers
(gunicorn, Django's test live server) answer one request at a time on a thread and refuse
``subscriptions/listen``. Each request says which it is (``CallContext.delivers``, from the
ASGI application's ``Asked.delivers`` or the stdio server's session), so ``server/discover``
advertises the resources' ``listChanged`` and ``subscribe`` capabilities there and nowhere else.
The tools' and prompts' lists never change while a box runs (they are tables in the code), so
their ``listChanged`` is advertised nowhere. ``initialize`` (2025-11-25 and older) advertises
``resources.subscribe`` there; no list change is told in that era, so ``listChanged`` stays
false.

Spec: SUB1, SUB2.
"""

from __future__ import annotations


def listen_capabilities(delivers: bool) -> dict[str, dict[str, bool]]:
    """What a 2026-07-28 ``subscriptions/listen`` stream delivers, where the server ``delivers``."""
    if not delivers:
        return {}
    # tools/list and prompts/list are tables in the code, fixed while a box runs: never told
    return {
        "tools": {"listChanged": False},
        "resources": {"subscribe": True, "listChanged": True},
        "prompts": {"listChanged": False},
    }


def session_capabilities(delivers: bool) -> dict[str, dict[str, bool]]:
    """What ``initialize`` (2025-11-25 and older) adds where sessions' subscriptions are told."""
    if not delivers:
        return {}
    return {"resources": {"subscribe": True, "listChanged": False}}
