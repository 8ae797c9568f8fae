"""The Django app of the 2025-11-25 sessions' subscriptions (:mod:`tmsite.subscriptions.models`)."""

from django.apps import AppConfig


class SubscriptionsConfig(AppConfig):
    """App ``tm_subscriptions``: ended sessions, their subscribed URIs, streams and events."""

    name = "tmsite.subscriptions"
    label = "tm_subscriptions"
    verbose_name = "Subscriptions"
    default_auto_field = "django.db.models.BigAutoField"
