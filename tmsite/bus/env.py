"""The subscriptions' numeric settings, read from the environment when asked.

Each is a positive number (``TM_LISTEN_*``, ``TM_SESSION_*``): one that is unset, not a
number, zero or negative is the default, so a typo never turns a cap or a clock off.

Spec: SUB1, SUB2.
"""

from __future__ import annotations

import os


def positive(name: str, default: float) -> float:
    """The environment's ``name`` if it is a positive number, else ``default``."""
    declared = os.environ.get(name, "")
    try:
        value = float(declared) if declared else default
    except ValueError:
        return default
    return value if value > 0 else default
