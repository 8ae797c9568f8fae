"""Start-up system checks: every configuration mistake fails loudly with a stable id."""

from __future__ import annotations

from typing import Any

from django.core.checks import register

from tmsite.check_registry import CHECKS


@register()
def tmsite_checks(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    """Run every check a part of tmsite registered in ``tmsite.check_registry``."""
    from tmsite.mounts import registry

    for name in registry.MOUNTS:  # a mount registers its own checks when imported
        registry.mount_class(name)
    messages: list[Any] = []
    for check in CHECKS:
        messages.extend(check())
    return messages
