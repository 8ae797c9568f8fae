"""Where parts of tmsite register their start-up checks (ids ``tm.E0xx``).

A part appends a callable returning a list of ``django.core.checks.CheckMessage``; the one
Django check in ``tmsite.checks`` runs them all. A check that reads through the namespace is
registered with ``namespace_check``: it is handed the way to build the process namespace (built
only if the check needs it), so the part never imports the registry. Ids are stable and listed
in the README.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

CHECKS: list[Callable[[], list[Any]]] = []


def check(func: Callable[[], list[Any]]) -> Callable[[], list[Any]]:
    """Decorator: register ``func`` as a tmsite start-up check."""
    CHECKS.append(func)
    return func


#: Checks handed the way to build the process namespace (``tmsite.checks`` hands it).
NAMESPACE_CHECKS: list[Callable[[Callable[[], Any]], list[Any]]] = []


def namespace_check(
    func: Callable[[Callable[[], Any]], list[Any]],
) -> Callable[[Callable[[], Any]], list[Any]]:
    """Decorator: register ``func`` as a start-up check that reads through the namespace."""
    NAMESPACE_CHECKS.append(func)
    return func
