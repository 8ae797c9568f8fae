"""Start-up system checks: every configuration mistake fails loudly with a stable id."""

from __future__ import annotations

from typing import Any

from django.core.checks import register

from tmsite.check_registry import CHECKS, NAMESPACE_CHECKS


@register()
def tmsite_checks(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    """Run every check a part of tmsite registered in ``tmsite.check_registry``.

    The checks that read through the namespace run last, and only when no check found an
    error: a configuration that fails (``tm.E001`` …) is reported, not built and crashed on.
    """
    from tmsite.mounts import registry

    for name in registry.MOUNTS:  # a mount registers its own checks when imported
        registry.mount_class(name)
    messages: list[Any] = []
    for check in CHECKS:
        messages.extend(check())
    if any(message.is_serious() for message in messages):
        return messages  # the namespace cannot be built from this configuration: read nothing
    for namespace_check in NAMESPACE_CHECKS:
        messages.extend(namespace_check(registry.namespace))
    return messages
