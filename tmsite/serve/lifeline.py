"""A worker does not outlive its launcher.

granian's workers are child processes of the launcher (``python -m tmsite.serve``, which
becomes granian's main process). On SIGTERM the launcher stops them and waits for them; but
should the launcher itself die (SIGKILL, the OOM killer), its workers would go on serving the
port and writing request-log rows nobody expects any more. So each worker asks Linux to send it
SIGTERM when its parent dies (``PR_SET_PDEATHSIG``): it then stops as on an ordinary stop,
finishing what it holds and writing its buffered rows. Elsewhere this is a no-op.

Spec: OP5.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import sys

#: ``prctl``'s option: the signal this process gets when its parent dies.
PR_SET_PDEATHSIG = 1
#: Set by the launcher before it becomes granian: the process the workers' parent must be.
LAUNCHER_ENV = "TM_SERVE_LAUNCHER_PID"

logger = logging.getLogger("tmsite.serve")


def bind() -> bool:
    """In a worker of the launcher: be stopped when it dies. Whether that was arranged."""
    launcher = os.environ.get(LAUNCHER_ENV, "")
    if not launcher.isdigit() or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError) as exc:
        logger.warning("a worker could not tie itself to its launcher: %s", exc)
        return False
    if os.getppid() != int(launcher):  # the launcher died before the call: stop now
        with contextlib.suppress(OSError):
            os.kill(os.getpid(), signal.SIGTERM)
    return True
