"""The ASGI serving model: ``tmsite.serve.app`` on granian, started by ``python -m tmsite.serve``.

Imported first in a worker (granian imports ``tmsite.serve.app``): a stop sent while the
worker starts is remembered from here on, before Django's set-up (``lifeline``).

Spec: T1, OP5.
"""

from tmsite.serve import lifeline

lifeline.hear_early_stops()
