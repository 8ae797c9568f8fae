"""The entity mount's change source: a stamp of its records, read while they are listened to.

The stamp is each kind's load token (a reload writes a new one) and the newest correction's id
(corrections are only ever added): a few one-row reads by index, whatever the number of records
or corrections. The entity models' and corrections' saves and deletes wake the watcher in the
process that saved; another process's are seen at its next read of the stamp.

Spec: SUB3, SRCH1.
"""

from __future__ import annotations

from collections.abc import Hashable

from django.db import DatabaseError

#: The models whose saves and deletes wake the watcher in the process that saved.
SENDERS = (
    "tm_entities.Pattern",
    "tm_entities.Game",
    "tm_entities.Routine",
    "tm_entities.Lesson",
    "tm_entities.Correction",
)


def stamp() -> Hashable:
    """Each entity kind's load token and the newest correction: moves on a reload or a fix."""
    from tmsite.entities import models as m

    try:
        tokens = tuple(
            model.objects.order_by().values_list("load_token", flat=True).first()
            for model in (m.Pattern, m.Game, m.Routine, m.Lesson)
        )
        newest = m.Correction.objects.order_by("-id").values_list("id", flat=True).first()
    except DatabaseError:
        return None
    return (tokens, newest)
