"""Admin pieces the apps share.

* :class:`AddressedAdmin` — a change page that links to the ``tm://`` address its row governs:
  Django's "View on site" opens the explorer (``/explore?uri=…``) on that address.
* :class:`ReadOnlyAdmin` — history, looked at and never changed.

Spec: OP4.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.contrib import admin
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse
from typing_extensions import override

from tmsite.core.uri import TmUri


def changed_by(user: Any) -> tuple[Any, str]:
    """(user or None, the name kept) for a request's user: who a change row names."""
    if user is not None and getattr(user, "is_authenticated", False):
        return user, str(user.get_username())
    return None, ""


def tm_uri(mount: str, *path: str, collection: bool = False) -> TmUri:
    """An address on this box's host (``settings.TM_HOST``)."""
    return TmUri(str(settings.TM_HOST), mount, tuple(path), collection)


def explorer_url(uri: TmUri) -> str | None:
    """The explorer page that draws ``uri`` (the site's ``/explore?uri=…``).

    None where the URLconf has no explorer (an admin served alone): the page then has no link.
    """
    try:
        explore = reverse("site:explore")
    except NoReverseMatch:
        return None
    return f"{explore}?uri={quote(str(uri), safe='')}"


class AddressedAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """An admin whose change page links ("View on site") to the address its row governs."""

    def address(self, obj: Any) -> TmUri | None:
        """The ``tm://`` address ``obj`` governs, or None (the page then has no link)."""
        return None

    def view_on_site(self, obj: Any) -> str | None:
        """Django's "View on site": the explorer on :meth:`address`."""
        uri = self.address(obj)
        return explorer_url(uri) if uri is not None else None


class ReadOnlyAdmin(AddressedAdmin):
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
