"""What a 2025-11-25 session's subscriptions share between processes and machines.

A session itself is a signed, expiring token (:mod:`tmsite.subscriptions.sessions`): no row
says it exists. These tables hold only what must outlive one request and be seen by every
worker: that a session was ended (``DELETE``), the URIs it subscribed to, which GET stream is
its live one, and the events kept for a reconnect (``Last-Event-ID``). Every row is keyed by a
hash of the session's random id and carries the session's expiry so that what is past it is
pruned; a subscription also keeps the rate limit's key of its caller for the day (a digest that
links to nothing the next day), so one caller's sessions can be capped.

Spec: SUB2.
"""

from __future__ import annotations

from typing import ClassVar

from django.db import models

#: The longest subscribed URI kept (longer ones are refused before they reach a row).
URI_MAX = 2000


class SessionEnd(models.Model):
    """A session ended by its client before its expiry: its token is answered 404 from now."""

    key = models.CharField(max_length=64, primary_key=True)
    expires = models.DateTimeField(db_index=True)

    class Meta:
        db_table = "tm_subscriptions_sessionend"


class SessionSubscription(models.Model):
    """One URI a session subscribed to (``resources/subscribe``)."""

    session = models.CharField(max_length=64)
    uri = models.CharField(max_length=URI_MAX)
    expires = models.DateTimeField(db_index=True)
    #: The caller as the rate limit keys it for the UTC day ("" for the box's own calls): what
    #: caps the sessions one caller may fill.
    holder = models.CharField(max_length=64, default="", db_index=True)

    class Meta:
        db_table = "tm_subscriptions_subscription"
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(fields=["session", "uri"], name="tm_subscription_once")
        ]


class SessionStream(models.Model):
    """The session's live GET stream (a newer one takes over) and its last event id."""

    session = models.CharField(max_length=64, primary_key=True)
    stream = models.CharField(max_length=32)
    seq = models.BigIntegerField(default=0)
    expires = models.DateTimeField(db_index=True)

    class Meta:
        db_table = "tm_subscriptions_stream"


class SessionEvent(models.Model):
    """One event sent (or due) on the session's GET stream, kept for a reconnect."""

    session = models.CharField(max_length=64)
    seq = models.BigIntegerField()
    uri = models.CharField(max_length=URI_MAX)
    at = models.DateTimeField(db_index=True)

    class Meta:
        db_table = "tm_subscriptions_event"
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(fields=["session", "seq"], name="tm_subscription_event_once")
        ]
