"""System checks for the trails: files that do not parse, steps that do not resolve.

* ``tm.W020`` — a trail file under ``notes/trails/`` does not parse (and no correction in the
  admin is over it).
* ``tm.W021`` — a step of a trail as served (its file, or its correction in the admin) does not
  resolve: its host is not this box's, its mount is not served,
  or reading it is refused (``not-found``, ``bad-facet`` …). Steps on the mounts that read
  other servers (``http``, ``mcp``) are not read at start-up, when the front door may not be
  up yet; the link walk reads them.

The trail mount imports this module, so its checks are registered with the mount's; they are
handed the way to build the process namespace (``check_registry.namespace_check``).

Spec: TRAILS.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.checks import Warning
from django.db import DatabaseError

from tmsite.check_registry import namespace_check
from tmsite.core.errors import Refusal
from tmsite.core.uri import parse
from tmsite.mounts.base import NamespaceView
from tmsite.trails import index

#: Mounts whose reads go out to other servers; not read by the start-up check.
REMOTE_MOUNTS = frozenset({"http", "mcp"})


@namespace_check
def trail_checks(namespace: Callable[[], NamespaceView]) -> list[Any]:
    """Every trail parses, and every step on a local mount resolves (read in ``namespace()``).

    The trails as served: a correction over a file is checked instead of the file.
    """
    messages: list[Any] = []
    view = index.current()
    trails, problems = view.trails, view.problems
    for name, problem in problems.items():
        messages.append(
            Warning(
                f"notes/trails/{name}.json does not parse: {problem}",
                hint="A trail is {title, description, steps: [{uri, note}, …]}.",
                id="tm.W020",
            )
        )
    if not trails:
        return messages
    served = namespace()
    for trail in trails:
        for step in trail.steps:
            why = step_problem(served, step.uri, settings.TM_HOST)
            if why:
                messages.append(
                    Warning(
                        f"trail {trail.name}, step {step.position} ({step.uri}) does not "
                        f"resolve: {why}",
                        hint="Fix the address in the trail file (or its correction in the "
                        "admin), or the thing it names.",
                        id="tm.W021",
                    )
                )
    return messages


def step_problem(namespace: NamespaceView, uri: str, host: str) -> str | None:
    """Why a step does not resolve, or None (None also for remote mounts, not read here)."""
    parsed = parse(uri)
    if parsed.host != host:
        return f"the host is {parsed.host!r}, this box is {host!r}"
    if parsed.mount in REMOTE_MOUNTS:
        return None
    if parsed.mount is not None and parsed.mount not in namespace.mounts:
        return f"no mount {parsed.mount!r} is served"
    return _read_problem(namespace, uri)


def _read_problem(namespace: NamespaceView, uri: str) -> str | None:
    """Why reading a step on a served mount fails, or None (too large or denied still resolve)."""
    try:
        namespace.read(uri)
    except Refusal as refusal:
        if refusal.reason in {"too-large", "denied"}:
            return None
        return f"{refusal.reason}: {refusal.message}"
    except DatabaseError:
        return None  # tables not migrated yet: say nothing rather than guess
    return None
