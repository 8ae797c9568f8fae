"""MCP servers and their index maps in the Django admin: corrected item by item, kept whole.

* Server records are added and changed here (or with ``manage.py tm_servers``); every change is
  a :class:`~tmsite.servers.models.ServerChange` per field, with who and when. What a stdio
  record runs is the operator's: the form offers only a choice among the programs the operator
  allows (:mod:`tmsite.servers.programs`), never a program, arguments, working directory or
  environment to type, and an HTTP record's URL must pass the operator's address policy.
  Actions: ask the selected servers now (probe, then re-derive their maps), or re-derive their
  maps only.
* Map entries: a maintainer corrects the path template, tool, argument mapping, kind,
  confidence (``exact`` once confirmed) and notes. A save writes one
  :class:`~tmsite.servers.models.MapEntryChange` per changed field and marks the entry
  ``touched``: the index driver never changes it again. Adding and deleting are kept too.
* Declarations and changes are read-only: history is never edited.
* Each change page's "View on site" opens the explorer on the address the row governs: a
  server record (and its declarations and changes) ``mcp/<server>/``, a map entry (and its
  changes) the map it is in, ``mcp/<server>/map``.

Spec: OP4.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.forms import ModelForm
from django.http import HttpRequest
from django.utils import timezone
from typing_extensions import override

from tmsite.admin_base import AddressedAdmin, ReadOnlyAdmin, changed_by, tm_uri
from tmsite.core.uri import TmUri
from tmsite.servers import changes, programs
from tmsite.servers import models as m
from tmsite.servers.connect import probe_record
from tmsite.servers.index import rederive


def _program_choices() -> list[tuple[str, str]]:
    """The programs the operator allows, for the form's one choice (none when unreadable)."""
    try:
        allowed = programs.allowed()
    except programs.ProgramsUnreadable:
        allowed = {}
    return [("", "— (an HTTP server)"), *((name, name) for name in sorted(allowed))]


class McpServerForm(ModelForm[m.McpServer]):
    """The server form: a program is chosen among the allowed ones, never typed."""

    program = forms.TypedChoiceField(
        choices=_program_choices,
        required=False,
        help_text="stdio: one of the programs the operator allows (TM_STDIO_PROGRAMS, or "
        "manage.py tm_servers add --stdio on the box); what it runs is not edited here.",
    )

    class Meta:
        model = m.McpServer
        fields = ("name", *m.McpServer.CORRECTABLE)


@admin.register(m.McpServer)
class McpServerAdmin(AddressedAdmin):
    """Server records: listed by how they last answered, every field change kept, probed at will."""

    form = McpServerForm

    list_display = (
        "name",
        "transport",
        "program",
        "last_outcome",
        "last_failure",
        "last_asked_at",
        "last_answered_at",
    )
    list_filter = ("transport", "last_outcome")
    search_fields = ("name", "description", "program", "url")
    readonly_fields = (
        "last_asked_at",
        "last_outcome",
        "last_failure",
        "last_detail",
        "last_answered_at",
        "created_at",
        "updated_at",
    )
    actions = ("probe_now", "rederive_maps")

    @override
    def address(self, obj: Any) -> TmUri:
        return tm_uri("mcp", obj.name, collection=True)

    @override
    def save_model(
        self, request: HttpRequest, obj: Any, form: ModelForm[Any], change: bool
    ) -> None:
        old: dict[str, Any] = {}
        if change and obj.pk:
            before = m.McpServer.objects.get(pk=obj.pk)
            old = {f: getattr(before, f) for f in m.McpServer.CORRECTABLE}
        super().save_model(request, obj, form, change)
        user, name = changed_by(request.user)
        changes.log_server_fields(obj, form.changed_data, old, user, name)

    @admin.action(description="Ask the selected servers now (probe, then re-derive maps)")
    def probe_now(self, request: HttpRequest, queryset: QuerySet[m.McpServer]) -> None:
        """Probe each selected server now and, when it answered, re-derive its map."""
        for server in queryset:
            outcome = probe_record(server)
            text = f"{server.name}: {outcome.outcome}"
            if outcome.declaration is not None:
                summary = rederive(server)
                text += f"; map +{len(summary.added)} ~{len(summary.updated)}"
            elif outcome.detail:
                text += f" ({outcome.failure}: {outcome.detail[:200]})"
            level = messages.SUCCESS if outcome.outcome == "answered" else messages.WARNING
            self.message_user(request, text, level)

    @admin.action(description="Re-derive the selected servers' maps (hand corrections kept)")
    def rederive_maps(self, request: HttpRequest, queryset: QuerySet[m.McpServer]) -> None:
        """Re-derive each selected server's map from its latest declaration; corrections kept."""
        for server in queryset:
            summary = rederive(server)
            self.message_user(
                request,
                f"{server.name}: +{len(summary.added)} ~{len(summary.updated)} "
                f"-{len(summary.removed)}, {len(summary.kept)} kept as corrected",
            )


@admin.register(m.MapEntry)
class MapEntryAdmin(AddressedAdmin):
    """Map entries, corrected item by item: each changed field kept, the entry then ``touched``."""

    list_display = (
        "server",
        "path_template",
        "tool",
        "kind",
        "confidence",
        "origin",
        "touched",
        "updated_at",
    )
    list_filter = ("server", "confidence", "origin", "touched", "kind")
    search_fields = ("path_template", "tool", "kind", "notes", "server__name")
    list_select_related = ("server",)
    readonly_fields = ("origin", "derived_key", "derived_reason", "touched", "updated_at")

    @override
    def address(self, obj: Any) -> TmUri:
        return tm_uri("mcp", obj.server.name, "map")

    @override
    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = tuple(self.readonly_fields)
        return (*fields, "server") if obj is not None else fields

    @override
    def save_model(
        self, request: HttpRequest, obj: Any, form: ModelForm[Any], change: bool
    ) -> None:
        user, name = changed_by(request.user)
        if not change:
            obj.origin = "maintainer"
            obj.touched = True
            super().save_model(request, obj, form, change)
            changes.log_entry(obj, "add", "*", None, changes.entry_values(obj), user, name)
            return
        old = changes.entry_values(m.MapEntry.objects.get(pk=obj.pk))
        changed = changes.log_entry_fields(obj, form.changed_data, old, user, name)
        if changed:
            obj.touched = True
            obj.updated_at = timezone.now()
        super().save_model(request, obj, form, change)

    @override
    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        user, name = changed_by(request.user)
        changes.log_entry_removed(obj, user, name)
        super().delete_model(request, obj)

    @override
    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        user, name = changed_by(request.user)
        for obj in queryset:
            changes.log_entry_removed(obj, user, name)
        super().delete_queryset(request, queryset)


@admin.register(m.MapEntryChange)
class MapEntryChangeAdmin(ReadOnlyAdmin):
    """The history of map entry corrections, read-only."""

    list_display = (
        "changed_at",
        "server_name",
        "path_template",
        "action",
        "field",
        "old",
        "new",
        "changed_by_name",
    )
    list_filter = ("action", "server_name", "field", "changed_by_name")
    search_fields = ("server_name", "path_template", "field", "changed_by_name")
    date_hierarchy = "changed_at"

    @override
    def address(self, obj: Any) -> TmUri:
        return tm_uri("mcp", obj.server_name, "map")


@admin.register(m.ServerChange)
class ServerChangeAdmin(ReadOnlyAdmin):
    """The history of server record changes, read-only."""

    list_display = ("changed_at", "server_name", "field", "old", "new", "changed_by_name")
    list_filter = ("server_name", "field", "changed_by_name")
    search_fields = ("server_name", "field", "changed_by_name")
    date_hierarchy = "changed_at"

    @override
    def address(self, obj: Any) -> TmUri:
        return tm_uri("mcp", obj.server_name, collection=True)


@admin.register(m.ServerDeclaration)
class ServerDeclarationAdmin(ReadOnlyAdmin):
    """What each server declared when asked, read-only."""

    list_display = ("server", "asked_at", "protocol_version", "era", "seconds")
    list_filter = ("server", "era")
    search_fields = ("server__name",)

    @override
    def address(self, obj: Any) -> TmUri:
        return tm_uri("mcp", obj.server.name, collection=True)
