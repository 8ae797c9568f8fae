"""The admin row behind an address, for staff reading it in the explorer.

The inverse of each admin's "View on site" (:class:`tmsite.admin_base.AddressedAdmin`): the
explorer page of an address a row governs shows a logged-in staff user a link to that row's
change page.

* ``entity/pattern/<key>``, ``entity/game/<key>`` (and its ``routine/`` listing),
  ``entity/lesson/<key>`` → that entity; ``entity/game/<game>/routine/<key>`` → the routine.
* ``mcp/<server>/`` and what it declared (``tools/``, ``prompts/``, ``resources/``) → the server
  record; ``mcp/<server>/map`` → the server's map entries; a path the map names → the entry
  that names it.
* ``trail/<name>`` → the trail (from its file or a correction, as the index last saw it).

An address read ``?at=`` a past revision comes from the record files, not from a row: it has
no link. Nothing else has a row behind it.

Spec: OP4.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import Model
from django.urls import reverse

from tmsite.core.errors import Refusal
from tmsite.core.uri import parse
from tmsite.entities import models as em
from tmsite.entities import records as R
from tmsite.mounts.mcp import map as mcp_map
from tmsite.servers import models as sm
from tmsite.trails import index as trail_index
from tmsite.trails import models as tm

_ENTITIES: dict[str, type[Any]] = {"pattern": em.Pattern, "game": em.Game, "lesson": em.Lesson}
_DECLARED = ("tools", "prompts", "resources")


@dataclass(frozen=True)
class AdminRow:
    """Where a row is corrected, and what it is (``the game 72f469219b30``)."""

    href: str
    label: str


def admin_row(text: str) -> AdminRow | None:
    """The admin change page behind the address ``text``, or None if no row is behind it."""
    try:
        uri = parse(text)
    except Refusal:
        return None
    if uri.host != settings.TM_HOST or uri.param("at") is not None:
        return None
    if uri.mount == "entity":
        return _entity(uri.path)
    if uri.mount == "mcp" and uri.path:
        return _mcp(uri.path)
    if uri.mount == "trail" and len(uri.path) == 1 and not uri.collection:
        trail_index.current()  # the rows as the files and the corrections are now
        row = tm.Trail.objects.filter(name=uri.path[0]).first()
        return _change(row, f"the trail {uri.path[0]}")
    return None


def _change(row: Model | None, label: str) -> AdminRow | None:
    if row is None:
        return None
    opts = row._meta
    href = reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[row.pk])
    return AdminRow(href, label)


def _entity(path: tuple[str, ...]) -> AdminRow | None:
    kind = path[0] if path else ""
    if kind in _ENTITIES and (len(path) == 2 or path[2:] == ("routine",)):
        row = _ENTITIES[kind].objects.filter(key=path[1]).first()
        return _change(row, f"the {kind} {path[1]}")
    if kind == "game" and len(path) == 4 and path[2] == "routine":
        try:
            bank, addr = R.parse_routine_key(path[3])
        except R.InvalidKey:
            return None
        routine = em.Routine.objects.filter(game__key=path[1], bank=bank, addr=addr).first()
        return _change(routine, f"the routine {path[3]} of the game {path[1]}")
    return None


def _mcp(path: tuple[str, ...]) -> AdminRow | None:
    server = sm.McpServer.objects.filter(name=path[0]).first()
    if server is None:
        return None
    if len(path) == 1 or path[1] in _DECLARED:
        return _change(server, f"the MCP server record {server.name}")
    if path[1:] == ("map",):
        changelist = reverse("admin:tm_servers_mapentry_changelist")
        return AdminRow(f"{changelist}?server__id__exact={server.pk}", f"the map of {server.name}")
    found = mcp_map.match(list(sm.MapEntry.objects.filter(server=server)), path[1:])
    if found is None:
        return None
    entry = found.entry
    return _change(entry, f"the map entry {server.name}/{entry.path_template}")
