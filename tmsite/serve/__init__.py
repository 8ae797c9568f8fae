"""The ASGI serving model: ``tmsite.serve.app`` on granian, started by ``python -m tmsite.serve``.

Spec: T1, OP5.
"""
