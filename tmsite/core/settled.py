"""Values worked out from the settings once, and again only when a setting changes.

Every request reads a few values derived from the settings (the rate limit's store and policy,
the cost tables, the request log's thresholds, the hosts the MCP endpoint serves). Reading them
through Django's lazy settings and rebuilding them costs more than the answer to a ``ping``;
a function decorated with :func:`settled` computes its value once and forgets it when Django
says a setting changed (``setting_changed``, which ``override_settings`` and the tests'
``settings`` fixture send). A running server's settings never change.

Spec: T1.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from django.core.signals import setting_changed

T = TypeVar("T")

_forgettable: list[Callable[[], None]] = []


def settled(compute: Callable[[], T]) -> Callable[[], T]:
    """``compute()`` once; again after any setting changes."""
    cached = functools.cache(compute)
    _forgettable.append(cached.cache_clear)
    return functools.wraps(compute)(cached)


def forget(**_: Any) -> None:
    """Forget every settled value (a setting changed)."""
    for clear in _forgettable:
        clear()


setting_changed.connect(forget, dispatch_uid="tmsite.core.settled")
