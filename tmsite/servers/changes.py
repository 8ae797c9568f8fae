"""Maintainers' changes to map entries and server records, each kept with who and when.

Used by the admin and by commands, so both keep the same trail: one change row per changed
field; a corrected map entry is marked ``touched`` so re-deriving never overwrites it.

Spec: OP4.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from tmsite.servers.models import MapEntry, MapEntryChange, McpServer, ServerChange


def entry_values(entry: Any) -> dict[str, Any]:
    """The correctable fields of a map entry (or of what would be one), by name."""
    return {field: getattr(entry, field) for field in MapEntry.CORRECTABLE}


def log_entry(
    entry: MapEntry,
    action: str,
    field: str,
    old: Any,
    new: Any,
    user: Any,
    name: str,
    when: datetime | None = None,
) -> None:
    """Keep one change of a map entry (``field`` ``*``: the entry whole, added or removed)."""
    MapEntryChange.objects.create(
        entry=entry if entry.pk else None,
        server_name=entry.server.name,
        path_template=entry.path_template,
        action=action,
        field=field,
        old=old,
        new=new,
        changed_by=user,
        changed_by_name=name,
        changed_at=when or timezone.now(),
    )


def log_entry_fields(
    entry: MapEntry, fields: Iterable[str], old: Mapping[str, Any], user: Any, name: str
) -> list[str]:
    """Write one ``correct`` row per field whose value changed; mark the entry touched."""
    changed = [f for f in fields if f in MapEntry.CORRECTABLE and old.get(f) != getattr(entry, f)]
    now = timezone.now()
    for field in changed:
        log_entry(entry, "correct", field, old.get(field), getattr(entry, field), user, name, now)
    return changed


def correct_entry(entry: MapEntry, changes: Mapping[str, Any], user: Any, name: str) -> list[str]:
    """Correct some fields of one entry (validated), keeping who and when."""
    with transaction.atomic():
        old = entry_values(entry)
        for field, value in changes.items():
            if field not in MapEntry.CORRECTABLE:
                raise ValueError(f"{field} is not a correctable field")
            setattr(entry, field, value)
        entry.full_clean()
        changed = log_entry_fields(entry, changes, old, user, name)
        if changed:
            entry.touched = True
            entry.updated_at = timezone.now()
            entry.save()
    return changed


def log_entry_removed(entry: MapEntry, user: Any, name: str) -> None:
    """Keep a maintainer's deletion: one ``remove`` change with the values the entry had."""
    log_entry(entry, "remove", "*", entry_values(entry), None, user, name)


def log_server_fields(
    server: McpServer, fields: Iterable[str], old: Mapping[str, Any], user: Any, name: str
) -> list[str]:
    """One ServerChange per changed field (``*`` with every value when ``old`` is empty)."""
    now = timezone.now()
    if not old:
        rows = [("*", None, {f: getattr(server, f) for f in McpServer.CORRECTABLE})]
    else:
        rows = [
            (f, old.get(f), getattr(server, f))
            for f in fields
            if f in McpServer.CORRECTABLE and old.get(f) != getattr(server, f)
        ]
    for field, before, after in rows:
        ServerChange.objects.create(
            server=server,
            server_name=server.name,
            field=field,
            old=before,
            new=after,
            changed_by=user,
            changed_by_name=name,
            changed_at=now,
        )
    return [field for field, _, _ in rows]
