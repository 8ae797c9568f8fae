"""The entity records in the Django admin: listed, searched, filtered — and corrected.

The decision: **the records stay the source of truth, and the admin keeps corrections.**

* Entities are never added or deleted here: they come and go with ``data/autopsy.json`` and
  ``data/lessons.json``. Keys, addresses, digests, counts and relations are read-only.
* A few descriptive fields of each entity may be corrected (``CORRECTABLE`` on each model: a
  pattern's description, a game's name, a routine's name and kind, a lesson's title, kind and
  description). Saving a change writes one :class:`~tmsite.entities.models.Correction` row per
  changed field — who, when, the new value and what the record said — and nothing else.
* ``manage.py tm_load_records`` refills the tables from the records and then applies the
  latest correction of each field again, so corrections are kept across reloads. Setting a
  field back to the record's value is itself a correction (it records the revert).
* Corrections are listed read-only: they are never edited or deleted, so the history of every
  field stays whole.
* Each change page's "View on site" opens the explorer on the entity's ``tm://`` address
  (``entity/<kind>/<key>``; a routine's ``entity/game/<game>/routine/<key>``), where the
  correction is read on the next read.

Spec: OP4.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.forms import ModelForm
from django.http import HttpRequest
from typing_extensions import override

from tmsite.admin_base import AddressedAdmin, ReadOnlyAdmin, tm_uri
from tmsite.core.uri import TmUri
from tmsite.entities import corrections
from tmsite.entities import models as m


class _ReadOnlyInline(admin.TabularInline):  # type: ignore[type-arg]
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class GamePatternInline(_ReadOnlyInline):
    """A game's patterns and how often each occurs, read-only."""

    model = m.GamePattern
    fields = ("pattern", "count")
    readonly_fields = fields


class RoutinePatternInline(_ReadOnlyInline):
    """A routine's patterns with the evidence each rests on, read-only."""

    model = m.RoutinePattern
    fields = ("pattern", "evidence")
    readonly_fields = fields


class LessonPatternInline(_ReadOnlyInline):
    """A lesson's patterns and their counts, read-only."""

    model = m.LessonPattern
    fields = ("pattern", "count")
    readonly_fields = fields


def entity_uri(entity: str, key: str) -> TmUri:
    """The address of the entity a correction key names (a routine's is ``<game>/<routine>``)."""
    if entity == "routine":
        game, _, routine = key.partition("/")
        return tm_uri("entity", "game", game, "routine", routine)
    return tm_uri("entity", entity, key)


class EntityAdmin(AddressedAdmin):
    """Read-only but for the model's ``CORRECTABLE`` fields; a save records corrections."""

    entity = ""

    @override
    def address(self, obj: Any) -> TmUri:
        return entity_uri(self.entity, self.correction_key(obj))

    @override
    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        editable = set(self.model.CORRECTABLE)
        names = [f.name for f in self.model._meta.fields if f.name not in editable]
        return [n for n in names if n not in {"id", "load_token"}]

    @override
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @override
    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def correction_key(self, obj: Any) -> str:
        """The key a correction of ``obj`` is filed under: the entity's own key."""
        return str(obj.key)

    @override
    def save_model(
        self, request: HttpRequest, obj: Any, form: ModelForm[Any], change: bool
    ) -> None:
        corrections.correct(
            self.entity, self.correction_key(obj), obj, form.changed_data, request.user
        )


@admin.register(m.Pattern)
class PatternAdmin(EntityAdmin):
    """Patterns: their description may be corrected."""

    entity = "pattern"
    list_display = ("key", "description", "position")
    search_fields = ("key", "description")
    inlines = ()


@admin.register(m.Game)
class GameAdmin(EntityAdmin):
    """Games: their name may be corrected; filtered by mapper and bank counts."""

    entity = "game"
    list_display = ("key", "name", "mapper", "prg", "chr", "position")
    list_filter = ("mapper", "prg", "chr")
    search_fields = ("key", "name", "sha256")
    inlines = (GamePatternInline,)


@admin.register(m.Routine)
class RoutineAdmin(EntityAdmin):
    """Routines: name and kind may be corrected; filed under ``<game>/<routine key>``."""

    entity = "routine"
    list_display = ("name", "routine_key", "game", "bank", "kind")
    list_filter = ("kind", "game", "patterns")
    search_fields = ("name", "game__key", "game__name", "patterns__key")
    list_select_related = ("game",)
    inlines = (RoutinePatternInline,)

    @override
    def correction_key(self, obj: Any) -> str:
        return f"{obj.game.key}/{obj.routine_key}"


@admin.register(m.Lesson)
class LessonAdmin(EntityAdmin):
    """Lessons: title, kind and description may be corrected."""

    entity = "lesson"
    list_display = ("key", "title", "kind", "game", "tree")
    list_filter = ("kind", "game")
    search_fields = ("key", "title", "description", "game__key", "game__name")
    list_select_related = ("game",)
    inlines = (LessonPatternInline,)


@admin.register(m.Correction)
class CorrectionAdmin(ReadOnlyAdmin):
    """Every correction, who and when; kept whole, so nothing here can change."""

    list_display = (
        "corrected_at",
        "entity",
        "key",
        "field",
        "value",
        "record_value",
        "corrected_by_name",
    )
    list_filter = ("entity", "field", "corrected_by_name", "corrected_at")
    search_fields = ("key", "field", "corrected_by_name")
    date_hierarchy = "corrected_at"

    @override
    def address(self, obj: Any) -> TmUri:
        return entity_uri(obj.entity, obj.key)
