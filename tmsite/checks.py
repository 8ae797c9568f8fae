"""Start-up system checks: every configuration mistake fails loudly with a stable id."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Error, register

from tmsite.check_registry import CHECKS, NAMESPACE_CHECKS, check

DATABASE_URL_HINT = (
    "Set TM_DATABASE_URL to postgres://user:password@host:5432/name (query options such as "
    "?sslmode=require&connect_timeout=5 are passed to the driver) or sqlite:////absolute/path, "
    "percent-encoding @ : / ? # in the user name and password; or unset it for SQLite in var/."
)


@check
def database_url() -> list[Any]:
    """``tm.E002``: ``TM_DATABASE_URL``, when set, names a database the box can use.

    ``tmsite.settings`` never fails on a bad URL (a traceback at import says nothing useful):
    it keeps why in ``TM_DATABASE_URL_PROBLEM`` and serves no database until it is mended.
    """
    problem = str(getattr(settings, "TM_DATABASE_URL_PROBLEM", ""))
    if not problem:
        return []
    return [
        Error(f"TM_DATABASE_URL cannot be used: {problem}", hint=DATABASE_URL_HINT, id="tm.E002")
    ]


@check
def metrics_allowed() -> list[Any]:
    """``tm.E040``: every entry of ``TM_METRICS_ALLOWED`` is an IP address or network."""
    from tmsite.oplog.exposition import allowed_problem

    problem = allowed_problem(list(settings.TM_METRICS_ALLOWED))
    if not problem:
        return []
    hint = "List addresses or CIDR networks, comma-separated: 10.0.0.5,192.0.2.0/24."
    return [Error(f"TM_METRICS_ALLOWED: {problem}", hint=hint, id="tm.E040")]


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
    for part_check in CHECKS:
        messages.extend(part_check())
    if any(message.is_serious() for message in messages):
        return messages  # the namespace cannot be built from this configuration: read nothing
    for namespace_check in NAMESPACE_CHECKS:
        messages.extend(namespace_check(registry.namespace))
    return messages
