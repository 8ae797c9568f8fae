"""The entity mount's change source: a stamp of its records, read while they are listened to.

The stamp is each kind's load token (a reload writes a new one), the newest correction's id
(corrections are only ever added) and how many times this process saved or deleted a record by
hand (neither a reload nor a correction): one query of a few one-row reads by index, whatever
the number of records or corrections. The entity models' and corrections' saves and deletes wake
the watcher in the process that saved; another process's are seen at its next read of the
stamp. The entity mount vouches for its reads with it too, so it is asked before every such
read: spelled out as one statement rather than built by the ORM each time.

Spec: SUB3, SRCH1.
"""

from __future__ import annotations

from collections.abc import Hashable
from functools import cache

from django.db import DatabaseError, connection, models, transaction

#: The models whose saves and deletes wake the watcher in the process that saved.
SENDERS = (
    "tm_entities.Pattern",
    "tm_entities.Game",
    "tm_entities.Routine",
    "tm_entities.Lesson",
    "tm_entities.Correction",
)


#: Saves and deletes of the records in this process (each counted again once committed).
_saved = 0


def _save() -> None:
    global _saved
    _saved += 1


def _saved_here(sender: object, using: str = "default", **kwargs: object) -> None:
    _save()
    transaction.on_commit(_save, using=using)


for _label in SENDERS:
    models.signals.post_save.connect(_saved_here, sender=_label, dispatch_uid=f"stamp-{_label}")
    models.signals.post_delete.connect(_saved_here, sender=_label, dispatch_uid=f"stamp-{_label}")


@cache
def _statement(vendor: str) -> str:
    """The first row's load token of each kind, by primary key, and the newest correction."""
    from tmsite.entities import models as m

    quote = connection.ops.quote_name
    first = "(SELECT {} FROM {} ORDER BY {} LIMIT 1)"
    tokens = [
        first.format(quote("load_token"), quote(kind._meta.db_table), quote(kind._meta.pk.column))
        for kind in (m.Pattern, m.Game, m.Routine, m.Lesson)
    ]
    fixes = m.Correction._meta
    newest = f"(SELECT MAX({quote(fixes.pk.column)}) FROM {quote(fixes.db_table)})"
    return "SELECT " + ", ".join([*tokens, newest])


def stamp() -> Hashable:
    """Each kind's load token, the newest correction, the saves here: moves on any change."""
    try:
        with connection.cursor() as cursor:
            cursor.execute(_statement(connection.vendor))
            row = cursor.fetchone()
    except DatabaseError:
        return None
    return (tuple(row[:4]), row[4], _saved)
