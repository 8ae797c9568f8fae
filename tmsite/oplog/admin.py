"""The request log in the admin: counts per day by outcome and kind, never a row.

Maintainers see how the box is used (how many reads of which kind, how they ended, bytes and
time) without browsing individual requests: the change list is replaced by the aggregates, and
there is no add, change, delete or detail view.

The admin's own logins and lock-outs are listed as they are (:class:`LoginEventAdmin`), read
only: the account, the outcome, a lock-out's end and how many attempts it refused, and the
caller only as the first digits of its key for the day — no address exists to show.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Avg, Count, QuerySet, Sum
from django.db.models.functions import TruncDate
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path
from typing_extensions import override

from tmsite.admin_base import ReadOnlyAdmin
from tmsite.oplog.models import LoginEvent, RequestLog


def aggregates(rows: QuerySet[RequestLog]) -> list[dict[str, Any]]:
    """One entry per (day, kind, outcome): requests, bytes, mean duration in ms; newest first."""
    grouped = (
        rows.annotate(day=TruncDate("at"))
        .values("day", "kind", "outcome")
        .annotate(requests=Count("id"), bytes=Sum("bytes"), mean_us=Avg("duration_us"))
        .order_by("-day", "kind", "outcome")
    )
    return [
        {
            "day": item["day"],
            "kind": item["kind"] or "-",
            "outcome": item["outcome"],
            "requests": item["requests"],
            "bytes": item["bytes"] or 0,
            "mean_ms": round((item["mean_us"] or 0) / 1000, 2),
        }
        for item in grouped
    ]


@admin.register(RequestLog)
class RequestLogAdmin(ReadOnlyAdmin):
    """The request log's one admin page: the day-by-day aggregates in place of a change list."""

    @override
    def get_urls(self) -> list[URLPattern]:
        info = self.opts.app_label, self.opts.model_name
        view = self.admin_site.admin_view(self.changelist_view)
        return [path("", view, name="{}_{}_changelist".format(*info))]

    @override
    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        if not self.has_view_permission(request):
            from django.core.exceptions import PermissionDenied

            raise PermissionDenied
        context = {
            **self.admin_site.each_context(request),
            "title": "Requests per day, by kind and outcome",
            "opts": self.opts,
            "rows": aggregates(RequestLog.objects.all()),
            "total": RequestLog.objects.count(),
        }
        return TemplateResponse(request, "admin/tm_oplog/aggregates.html", context)


@admin.register(LoginEvent)
class LoginEventAdmin(ReadOnlyAdmin):
    """The last logins and lock-outs, newest first; nothing here can be changed or deleted."""

    list_display = ("at", "account", "outcome", "scope", "until", "refused", "caller_key")
    list_filter = ("outcome", "scope")
    search_fields = ("account",)
    ordering = ("-at", "-id")
    date_hierarchy = "at"
    list_per_page = 100

    @admin.display(description="caller (key of the day)")
    def caller_key(self, obj: LoginEvent) -> str:
        """The first digits of the caller's key: enough to tell callers of one day apart."""
        return obj.caller[:8]
