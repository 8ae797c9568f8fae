"""Admin pieces the apps share.

Spec: OP4.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from typing_extensions import override


class ReadOnlyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """An admin that can only be looked at: no add, change or delete (history is kept whole)."""

    @override
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @override
    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @override
    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
