"""Where parts of tmsite register their start-up checks (ids ``tm.E0xx``).

A part appends a callable returning a list of ``django.core.checks.CheckMessage``; the one
Django check in ``tmsite.checks`` runs them all. Ids are stable and listed in the README.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

CHECKS: list[Callable[[], list[Any]]] = []


def check(func: Callable[[], list[Any]]) -> Callable[[], list[Any]]:
    """Decorator: register ``func`` as a tmsite start-up check."""
    CHECKS.append(func)
    return func
