"""The trails in the Django admin: every trail listed, searched, filtered — and corrected.

The decision: **the files stay the operator's, and the admin keeps corrections over them.**

* Every trail is listed: from its file (with the problem of a file that does not parse), or
  from a correction (added here, with no file; or retired). The list is the index's
  (:class:`~tmsite.trails.models.Trail`), brought up to date with the files and the
  corrections on every page.
* A maintainer corrects a trail's title, description and steps (a JSON array of ``{uri,
  note}``, in order: adding, removing and reordering steps is editing it), adds a trail that
  has no file, retires one (a checkbox, or the list's action) or gives one back to its file
  (an action). Each is one :class:`~tmsite.trails.models.TrailCorrection` — who, when, what
  changed, the trail as corrected and what its file said — checked by the same rules as a file
  (:func:`tmsite.trails.index.parse_trail`: its limits, its messages, shown on the form). A
  refused form changes nothing.
* Nothing is written into the checkout: the latest correction of a trail is served over its
  file by every reader. ``manage.py tm_trails export DIR`` writes the corrected trails as files
  for an operator who wants to commit them.
* Corrections are listed read-only: never edited or deleted, so the history of a trail stays
  whole. Trails are never deleted here either: retiring one is a correction.
* Each change page's "View on site" opens the explorer on the trail's address, ``trail/<name>``.

Spec: OP4, TRAILS.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.forms import ModelForm
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from typing_extensions import override

from tmsite.admin_base import AddressedAdmin, ReadOnlyAdmin, changed_by, tm_uri
from tmsite.core.uri import TmUri
from tmsite.trails import corrections, index
from tmsite.trails import models as tm

_STEPS_HELP = (
    'A JSON array, in order: [{"uri": "tm://…", "note": "…"}, …]. Add, remove or reorder '
    f"steps by editing it; at most {index.MAX_STEPS} steps."
)


class TrailForm(ModelForm):  # type: ignore[type-arg]
    """Title, description and steps checked as one trail file would be; retired, or not."""

    steps_text = forms.CharField(
        label="Steps", widget=forms.Textarea(attrs={"rows": 20, "cols": 100}), required=False
    )
    retired = forms.BooleanField(
        required=False, help_text="A retired trail is not served, whatever its file says."
    )

    class Meta:
        model = tm.Trail
        fields = ("name", "title", "description")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["steps_text"].help_text = _STEPS_HELP
        trail = self.instance
        if trail is not None and trail._state.adding is False:
            self.fields["steps_text"].initial = json.dumps(
                trail.steps, indent=2, ensure_ascii=False
            )
            self.fields["retired"].initial = trail.state == "retired"

    @override
    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        name = self.instance.name if not self.instance._state.adding else data.get("name", "")
        if self.instance._state.adding and name:
            if not index.NAME_RE.fullmatch(name):
                self.add_error("name", "a-z, 0-9 and -, starting with a letter or digit, ≤ 64")
            elif name in index.current().known:
                self.add_error("name", f"a trail named {name!r} is known: correct it instead")
        steps: Any = data.get("steps_text") or "[]"
        try:
            steps = json.loads(steps)
        except ValueError as exc:
            self.add_error("steps_text", f"steps are not JSON: {exc}")
            return data
        data["value"] = {
            "title": data.get("title") or "",
            "description": data.get("description") or "",
            "steps": steps,
        }
        if data.get("retired") or not name:
            return data
        try:
            index.from_json(name, data["value"])
        except index.TrailError as exc:
            self.add_error(_field_of(exc.message), ValidationError(exc.message, code="trail"))
        return data


def _field_of(message: str) -> str | None:
    """The form field a trail file's problem is about (None: the whole trail, e.g. its size)."""
    if message.startswith(("steps", f"at most {index.MAX_STEPS} steps")):
        return "steps_text"
    if message.startswith(("title ", "description ")):
        return message.split(" ", 1)[0]
    return None


@admin.register(tm.Trail)
class TrailAdmin(AddressedAdmin):
    """Trails: corrected, added, retired and given back to their files; each a correction."""

    form = TrailForm
    list_display = (
        "name",
        "title",
        "state",
        "step_count",
        "has_file",
        "problem",
        "corrected_at",
        "corrected_by_name",
        "file_modified",
    )
    list_filter = ("state", "has_file", "corrected_by_name")
    search_fields = ("name", "title", "description", "problem", "steps")
    readonly_fields = (
        "state",
        "has_file",
        "problem",
        "file_modified",
        "corrected_at",
        "corrected_by_name",
        "history",
    )
    actions = ("retire_selected", "back_to_files")

    @override
    def address(self, obj: Any) -> TmUri:
        return tm_uri("trail", obj.name)

    @override
    def get_queryset(self, request: HttpRequest) -> QuerySet[tm.Trail]:
        index.current()  # the rows as the files and the corrections are now
        return super().get_queryset(request)

    @override
    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = ["name", "title", "description", "steps_text", "retired"]
        return [*fields, *self.readonly_fields] if obj is not None else fields[:4]

    @override
    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return ("name", *self.readonly_fields) if obj is not None else ()

    @override
    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="Steps")
    def steps_text(self, obj: tm.Trail) -> str:
        """The steps as the form edits them, for a maintainer who may only look."""
        return format_html("<pre>{}</pre>", json.dumps(obj.steps, indent=2, ensure_ascii=False))

    @admin.display(description="Retired", boolean=True)
    def retired(self, obj: tm.Trail) -> bool:
        """Whether the trail is retired, for a maintainer who may only look."""
        return obj.state == "retired"

    @admin.display(description="Corrections")
    def history(self, obj: tm.Trail) -> str:
        """How many corrections the trail has, linked to them."""
        count = tm.TrailCorrection.objects.filter(trail=obj.name).count()
        url = reverse("admin:tm_trails_trailcorrection_changelist")
        return format_html('<a href="{}?trail__exact={}">{} kept</a>', url, obj.name, count)

    @override
    def save_model(
        self, request: HttpRequest, obj: Any, form: ModelForm[Any], change: bool
    ) -> None:
        user, by = changed_by(request.user)
        data = form.cleaned_data
        try:
            row = corrections.correct(
                obj.name, data["value"], user, by, retired=bool(data.get("retired"))
            )
        except index.TrailError as exc:  # checked by the form: changed since, say so
            self.message_user(request, exc.message, messages.ERROR)
            return
        if row is None:
            self.message_user(request, f"{obj.name}: nothing changed", messages.INFO)

    @override
    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        """Nothing is related: the correction is the whole change."""

    @admin.action(
        description="Retire the selected trails (a correction each)", permissions=["change"]
    )
    def retire_selected(self, request: HttpRequest, queryset: QuerySet[tm.Trail]) -> None:
        """Retire each selected trail that is served."""
        user, by = changed_by(request.user)
        done = [t.name for t in queryset if corrections.retire(t.name, user, by) is not None]
        self.message_user(request, f"retired: {', '.join(done) or 'none'}")

    @admin.action(
        description="Give the selected trails back to their files (a correction each)",
        permissions=["change"],
    )
    def back_to_files(self, request: HttpRequest, queryset: QuerySet[tm.Trail]) -> None:
        """Serve each selected trail from its file again (those that have one and are corrected)."""
        user, by = changed_by(request.user)
        done = [t.name for t in queryset if corrections.revert(t.name, user, by) is not None]
        self.message_user(request, f"back to their files: {', '.join(done) or 'none'}")


@admin.register(tm.TrailCorrection)
class TrailCorrectionAdmin(ReadOnlyAdmin):
    """Every trail correction, who and when; kept whole, so nothing here can change."""

    list_display = ("corrected_at", "trail", "action", "changed", "corrected_by_name")
    list_filter = ("action", "corrected_by_name", "corrected_at")
    search_fields = ("trail", "changed", "corrected_by_name")
    date_hierarchy = "corrected_at"

    @override
    def address(self, obj: Any) -> TmUri:
        return tm_uri("trail", obj.trail)
