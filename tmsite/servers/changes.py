"""Maintainers' changes to map entries and server records, each kept with who and when.

Used by the admin and by commands, so both keep the same trail: one change row per changed
field; a corrected map entry is marked ``touched`` so re-deriving never overwrites it.

Spec: OP4.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db import transaction
from django.utils import timezone

from tmsite.servers.models import MapEntry, MapEntryChange, McpServer, ServerChange


def who(user: Any) -> tuple[Any, str]:
    """(user or None, the name kept) for a request's user."""
    if user is not None and getattr(user, "is_authenticated", False):
        return user, str(user.get_username())
    return None, ""


def log_entry_fields(
    entry: MapEntry, fields: Iterable[str], old: Mapping[str, Any], user: Any, name: str
) -> list[str]:
    """Write one ``correct`` row per field whose value changed; mark the entry touched."""
    changed = [f for f in fields if f in MapEntry.CORRECTABLE and old.get(f) != getattr(entry, f)]
    now = timezone.now()
    for field in changed:
        MapEntryChange.objects.create(
            entry=entry,
            server_name=entry.server.name,
            path_template=entry.path_template,
            action="correct",
            field=field,
            old=old.get(field),
            new=getattr(entry, field),
            changed_by=user,
            changed_by_name=name,
            changed_at=now,
        )
    return changed


def correct_entry(entry: MapEntry, changes: Mapping[str, Any], user: Any, name: str) -> list[str]:
    """Correct some fields of one entry (validated), keeping who and when."""
    with transaction.atomic():
        old = {f: getattr(entry, f) for f in MapEntry.CORRECTABLE}
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


def log_entry_added(entry: MapEntry, user: Any, name: str) -> None:
    """Keep a maintainer's new entry: one ``add`` change with every correctable value."""
    MapEntryChange.objects.create(
        entry=entry,
        server_name=entry.server.name,
        path_template=entry.path_template,
        action="add",
        field="*",
        old=None,
        new={f: getattr(entry, f) for f in MapEntry.CORRECTABLE},
        changed_by=user,
        changed_by_name=name,
    )


def log_entry_removed(entry: MapEntry, user: Any, name: str) -> None:
    """Keep a maintainer's deletion: one ``remove`` change with the values the entry had."""
    MapEntryChange.objects.create(
        entry=entry,
        server_name=entry.server.name,
        path_template=entry.path_template,
        action="remove",
        field="*",
        old={f: getattr(entry, f) for f in MapEntry.CORRECTABLE},
        new=None,
        changed_by=user,
        changed_by_name=name,
    )


def log_server_fields(
    server: McpServer, fields: Iterable[str], old: Mapping[str, Any], user: Any, name: str
) -> list[str]:
    """One ServerChange per changed field (``*`` with every value when ``old`` is empty)."""
    now = timezone.now()
    if not old:
        ServerChange.objects.create(
            server=server,
            server_name=server.name,
            field="*",
            old=None,
            new={f: getattr(server, f) for f in McpServer.CORRECTABLE},
            changed_by=user,
            changed_by_name=name,
            changed_at=now,
        )
        return ["*"]
    changed = [f for f in fields if f in McpServer.CORRECTABLE and old.get(f) != getattr(server, f)]
    for field in changed:
        ServerChange.objects.create(
            server=server,
            server_name=server.name,
            field=field,
            old=old.get(field),
            new=getattr(server, field),
            changed_by=user,
            changed_by_name=name,
            changed_at=now,
        )
    return changed
