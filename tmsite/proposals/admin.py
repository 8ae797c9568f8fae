"""The maintainers' queue: proposals reviewed and decided in the Django admin.

* The list shows every proposal (filter ``status`` to ``open`` for the queue), by kind, status
  and age, with its count and a one-line summary; proposals are never added or deleted here.
  An open proposal older than ``TM_PROPOSALS_EXPIRE_DAYS`` is shown and filtered as expired
  and cannot be decided, whether or not its row was marked expired yet.
* A proposal's page shows what was proposed, the prepared change as a unified diff, the
  nearest addresses and the mount, and whether the change still applies (a stale one says why
  and cannot be approved as is). Everything a client wrote is shown as plain text, escaped:
  it is never rendered as HTML.
* A maintainer approves or rejects with a reason, one by one (the page's form) or in bulk
  (the list's actions, with the reason in the action bar). Approving applies the change in one
  transaction (:func:`tmsite.operations.decide.decide`); rejecting changes nothing but the
  proposal's status.

Spec: PROP1, PROP2, OP4.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ActionForm
from django.core.exceptions import ValidationError
from django.db.models import Q, QuerySet
from django.forms import ModelForm
from django.http import HttpRequest
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from typing_extensions import override

from tmsite.admin_base import AddressedAdmin, ReadOnlyAdmin
from tmsite.core.uri import TmUri, parse
from tmsite.operations import decide
from tmsite.proposals import diff
from tmsite.proposals.models import STATUSES, CuratedLink, Proposal, expiry_cutoff

DECISIONS = [("", "—"), ("approve", "approve"), ("reject", "reject")]


class DecisionForm(ModelForm):  # type: ignore[type-arg]
    """Approve or reject, with a reason; approving a stale change is refused on the form."""

    decision = forms.ChoiceField(choices=DECISIONS, required=False)
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3, "cols": 80}), required=False)

    class Meta:
        model = Proposal
        fields: tuple[str, ...] = ()

    @override
    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        decision = data.get("decision")
        if not decision:
            return data
        if self.instance.state != "open":
            raise ValidationError(f"this proposal is {self.instance.state}, not open")
        if not (data.get("reason") or "").strip():
            raise ValidationError({"reason": "say why: the proposer reads the reason"})
        if decision == "approve":
            problem = decide.stale(self.instance)
            if problem:
                raise ValidationError(f"stale, cannot be approved as is: {problem}")
        return data


class ReasonActionForm(ActionForm):
    """The list's action bar, with the reason a bulk decision gives."""

    reason = forms.CharField(required=False, label="Reason")


class StatusFilter(admin.SimpleListFilter):
    """The status as served: open ones past their age are expired."""

    title = "status"
    parameter_name = "status"

    @override
    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return list(STATUSES)

    @override
    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        aged = Q(status="open", created_at__lt=expiry_cutoff())
        if self.value() == "open":
            return queryset.filter(status="open").exclude(aged)
        if self.value() == "expired":
            return queryset.filter(Q(status="expired") | aged)
        if self.value():
            return queryset.filter(status=self.value())
        return queryset


class AgeFilter(admin.SimpleListFilter):
    """How long ago a proposal was first made."""

    title = "age"
    parameter_name = "age"

    @override
    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("day", "today"), ("week", "this week"), ("older", "older than a week")]

    @override
    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        now = timezone.now()
        if self.value() == "day":
            return queryset.filter(created_at__gte=now - timedelta(days=1))
        if self.value() == "week":
            return queryset.filter(created_at__gte=now - timedelta(days=7))
        if self.value() == "older":
            return queryset.filter(created_at__lt=now - timedelta(days=7))
        return queryset


def summary(proposal: Proposal) -> str:
    """One line of what was proposed (plain text)."""
    p = proposal.proposed
    if proposal.kind == "address":
        return str(p["uri"])
    if proposal.kind == "link":
        return f"{p['from']} {p['rel']} {p['to']}"
    if proposal.kind == "correction":
        return f"{p['uri']} {p.get('entry', '')} {p['field']}".replace("  ", " ")
    return f"trail/{p['name']}: {p['title']}"


@admin.register(Proposal)
class ProposalAdmin(AddressedAdmin):
    """The queue: review a proposal's change, then approve or reject it with a reason."""

    form = DecisionForm
    action_form = ReasonActionForm
    actions = ("approve_selected", "reject_selected")
    list_display = ("id", "kind", "status_now", "count", "what", "created_at", "last_proposed_at")
    list_filter = (StatusFilter, "kind", AgeFilter)
    ordering = ("-last_proposed_at",)
    readonly_fields = (
        "kind",
        "status_now",
        "count",
        "created_at",
        "last_proposed_at",
        "proposed_text",
        "change_diff",
        "nearest_addresses",
        "mount",
        "applies",
        "decided_at",
        "decided_by_name",
        "reason",
    )
    fieldsets = (
        (None, {"fields": ("kind", "status_now", "count", "created_at", "last_proposed_at")}),
        ("Proposed", {"fields": ("proposed_text", "nearest_addresses", "mount")}),
        ("Prepared change", {"fields": ("change_diff", "applies")}),
        ("Decision", {"fields": ("decision", "reason", "decided_at", "decided_by_name")}),
    )

    @admin.display(description="status", ordering="status")
    def status_now(self, obj: Proposal) -> str:
        """The status as served (an open one past its age: expired)."""
        return obj.state

    @admin.display(description="what")
    def what(self, obj: Proposal) -> str:
        """One line of what was proposed."""
        return summary(obj)

    @admin.display(description="proposed")
    def proposed_text(self, obj: Proposal) -> str:
        """What was proposed, as plain text (escaped)."""
        text = json.dumps(obj.proposed, indent=2, ensure_ascii=False)
        return format_html("<pre>{}</pre>", text)

    @admin.display(description="diff")
    def change_diff(self, obj: Proposal) -> str:
        """The prepared change as a unified diff (escaped)."""
        return format_html("<pre class='tm-diff'>{}</pre>", diff.of(obj.kind, obj.change))

    @admin.display(description="nearest addresses")
    def nearest_addresses(self, obj: Proposal) -> str:
        """The nearest existing addresses, one a line."""
        if not obj.nearest:
            return "—"
        return format_html_join("", "<div><code>{}</code></div>", ((n,) for n in obj.nearest))

    @admin.display(description="applies now")
    def applies(self, obj: Proposal) -> str:
        """Whether the change still applies, or why it is stale."""
        if obj.state != "open":
            return obj.state
        problem = decide.stale(obj)
        return f"stale: {problem} (cannot be approved as is)" if problem else "yes"

    @override
    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = tuple(self.readonly_fields)
        if obj is None or obj.state == "open":
            return tuple(f for f in fields if f != "reason")
        return fields

    @override
    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is not None and obj.state != "open":
            decision = ("Decision", {"fields": ("reason", "decided_at", "decided_by_name")})
            return (*self.fieldsets[:3], decision)
        return self.fieldsets

    @override
    def address(self, obj: Any) -> TmUri | None:
        if obj.decided:
            return parse(decide.decided_uri(obj))
        return None

    @override
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @override
    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @override
    def save_model(
        self, request: HttpRequest, obj: Any, form: ModelForm[Any], change: bool
    ) -> None:
        decision = form.cleaned_data.get("decision")
        if not decision:
            return
        try:
            decide.decide(obj.pk, decision == "approve", form.cleaned_data["reason"], request.user)
        except decide.NotApplied as exc:
            messages.error(request, str(exc))
        obj.refresh_from_db()  # the admin's message names the proposal as the decision left it

    def _bulk(self, request: HttpRequest, queryset: QuerySet[Proposal], approve: bool) -> None:
        reason = str(request.POST.get("reason", "")).strip()
        if not reason:
            messages.error(request, "give a reason in the action bar: the proposers read it")
            return
        done, refused = 0, []
        for proposal in queryset.order_by("id"):
            try:
                decide.decide(proposal.pk, approve, reason, request.user)
                done += 1
            except decide.NotApplied as exc:
                refused.append(str(exc))
        verb = "approved" if approve else "rejected"
        messages.info(request, f"{done} {verb}")
        for text in refused:
            messages.warning(request, text)

    @admin.action(description="Approve selected (applies each change)", permissions=["change"])
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[Proposal]) -> None:
        """Approve each selected proposal with the action bar's reason."""
        self._bulk(request, queryset, approve=True)

    @admin.action(description="Reject selected (changes nothing)", permissions=["change"])
    def reject_selected(self, request: HttpRequest, queryset: QuerySet[Proposal]) -> None:
        """Reject each selected proposal with the action bar's reason."""
        self._bulk(request, queryset, approve=False)


@admin.register(CuratedLink)
class CuratedLinkAdmin(ReadOnlyAdmin):
    """The curated links approved from proposals, read-only (each with its proposal)."""

    list_display = ("source", "rel", "target", "proposal", "created_at")
    list_filter = ("rel",)
    search_fields = ("source", "target")
