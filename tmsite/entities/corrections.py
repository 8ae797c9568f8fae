"""A maintainer's correction of an entity's fields, kept with who and when.

One path for the admin's change page and for an approved proposal: one
:class:`~tmsite.entities.models.Correction` row per changed field (with what the record said),
then the entity saved. The latest row of a field wins over the record on every reload.

Spec: OP4.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tmsite.entities import models as m


def correct(entity: str, key: str, obj: Any, fields: Iterable[str], user: Any) -> list[str]:
    """Keep ``obj``'s new values of ``fields`` (its correctable ones) and save them.

    ``obj`` already holds the new values; ``key`` is the key a correction is filed under (a
    routine's ``<game>/<routine>``); ``user`` is the request's user (None: nobody signed in).
    """
    changed = [name for name in fields if name in obj.CORRECTABLE]
    signed_in = user is not None and getattr(user, "is_authenticated", False)
    m.Correction.objects.bulk_create(
        m.Correction(
            entity=entity,
            key=key,
            field=field,
            value=getattr(obj, field),
            record_value=obj.recorded.get(field),
            corrected_by=user if signed_in else None,
            corrected_by_name=user.get_username() if signed_in else "",
        )
        for field in changed
    )
    if changed:
        obj.save(update_fields=changed)
    return changed
