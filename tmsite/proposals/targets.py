"""What a correction may change: an entity's correctable field, or a map entry's.

:func:`find` names the target an address (and, for ``mcp/<server>/map``, a path template)
stands for, with the fields the admin lets maintainers correct there; ``check`` cleans a
value as the admin's form and the model's own ``clean`` would; ``row`` is the correction row
the admin would write; ``apply`` writes it through the admin's own path (history kept).

Spec: PROP1, PROP2, OP4.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tmsite.core.errors import BadArgument
from tmsite.core.uri import TmUri
from tmsite.entities import corrections as entity_corrections
from tmsite.entities import models as em
from tmsite.servers import changes
from tmsite.servers.models import MapEntry

ENTITY_MODELS: dict[str, Any] = {"pattern": em.Pattern, "game": em.Game, "lesson": em.Lesson}
ROUTINE_KEY = re.compile(r"b(\d{1,3})-([0-9A-F]{4})")
SHAPES = [
    "entity/pattern/<key>",
    "entity/game/<key>",
    "entity/lesson/<key>",
    "entity/game/<game>/routine/<routine>",
    "mcp/<server>/map (with entry: the path template)",
]


@dataclass(frozen=True)
class Target:
    """One correctable thing, as it is now."""

    what: str  # an entity kind, or "map-entry"
    key: str
    fields: list[str]
    obj: Any

    def value(self, field: str) -> Any:
        """The field's value now."""
        return getattr(self.obj, field)

    def check(self, field: str, value: Any) -> Any:
        """``value`` cleaned as the admin would clean it. Raises ``ValidationError``."""
        if self.what == "map-entry":
            probe = MapEntry(
                **{f.attname: getattr(self.obj, f.attname) for f in MapEntry._meta.fields}
            )
            probe._state.adding = False  # the entry itself, as the admin's form checks it
            setattr(probe, field, value)
            probe.full_clean()
            return getattr(probe, field)
        return self.obj._meta.get_field(field).clean(value, self.obj)

    def row(self, field: str, new: Any) -> dict[str, Any]:
        """The correction row the admin would write."""
        if self.what == "map-entry":
            return {
                "server_name": self.obj.server.name,
                "path_template": self.obj.path_template,
                "action": "correct",
                "field": field,
                "old": self.value(field),
                "new": new,
            }
        return {
            "entity": self.what,
            "key": self.key,
            "field": field,
            "value": new,
            "record_value": self.obj.recorded.get(field),
        }

    def apply(self, field: str, new: Any, user: Any) -> list[str]:
        """Write the correction through the admin's own path; the fields changed."""
        if self.what == "map-entry":
            name = user.get_username() if getattr(user, "is_authenticated", False) else ""
            return changes.correct_entry(self.obj, {field: new}, user, name)
        setattr(self.obj, field, new)
        return entity_corrections.correct(self.what, self.key, self.obj, [field], user)


def _nothing(uri: TmUri, why: str) -> BadArgument:
    return BadArgument(str(uri), f"{uri} {why}; a correction names one of", valid=SHAPES)


def find(uri: TmUri, entry: str | None) -> Target:
    """The correctable thing ``uri`` (and ``entry``) names, as it is now.

    Raises:
        BadArgument: it names nothing correctable (``valid``: the shapes that do).
    """
    path = uri.path
    if uri.mount == "entity":
        if len(path) == 2 and path[0] in ENTITY_MODELS:
            model = ENTITY_MODELS[path[0]]
            obj = model.objects.filter(key=path[1]).first()
            if obj is None:
                raise _nothing(uri, f"names no {path[0]}")
            return Target(path[0], path[1], list(model.CORRECTABLE), obj)
        if len(path) == 4 and path[0] == "game" and path[2] == "routine":
            match = ROUTINE_KEY.fullmatch(path[3])
            routine = None
            if match is not None:
                routine = em.Routine.objects.filter(
                    game__key=path[1], bank=int(match[1]), addr=int(match[2], 16)
                ).first()
            if routine is None:
                raise _nothing(uri, "names no routine")
            key = f"{path[1]}/{path[3]}"
            return Target("routine", key, list(em.Routine.CORRECTABLE), routine)
    if uri.mount == "mcp" and len(path) == 2 and path[1] == "map":
        found = MapEntry.objects.select_related("server").filter(
            server__name=path[0], path_template=entry or ""
        )
        obj = found.first()
        if obj is None:
            names = MapEntry.objects.filter(server__name=path[0]).values_list(
                "path_template", flat=True
            )
            raise BadArgument(
                str(uri),
                f"the map of {path[0]!r} has no entry {entry!r}",
                field="entry",
                valid=sorted(names)[:50],
            )
        return Target(
            "map-entry", f"{path[0]}/{obj.path_template}", list(MapEntry.CORRECTABLE), obj
        )
    raise _nothing(uri, "is not correctable")


def refind(row: dict[str, Any], host: str) -> Target | None:
    """The target a prepared correction row names, as it is now (None: it moved or went)."""
    try:
        return find(address_of(row, host), row["path_template"] if "server_name" in row else None)
    except BadArgument:
        return None


def address_of(row: dict[str, Any], host: str) -> TmUri:
    """The address a prepared correction row changes."""
    if "server_name" in row:
        return TmUri(host, "mcp", (row["server_name"], "map"))
    if row["entity"] == "routine":
        game, _, routine = row["key"].partition("/")
        return TmUri(host, "entity", ("game", game, "routine", routine))
    return TmUri(host, "entity", (row["entity"], row["key"]))
