"""This process's id without a system call each time it is asked.

Per-process state (the request log's threads, its constants) is keyed by the process id, so
that a forked worker starts its own; asking the kernel on every request costs a system call.
The id is kept here and worked out again in a forked child (``os.register_at_fork``).

Spec: OP2.
"""

from __future__ import annotations

import os

_pid = os.getpid()


def pid() -> int:
    """This process's id (the child's, after a fork)."""
    return _pid


def _forked() -> None:
    global _pid
    _pid = os.getpid()


os.register_at_fork(after_in_child=_forked)
