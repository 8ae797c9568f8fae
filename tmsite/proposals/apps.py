"""The Django app of proposals and the curated links approved from them."""

from django.apps import AppConfig


class ProposalsConfig(AppConfig):
    """App ``tm_proposals``: clients' proposals, the queue, and the curated links."""

    name = "tmsite.proposals"
    label = "tm_proposals"
    verbose_name = "Proposals"
    default_auto_field = "django.db.models.BigAutoField"
