"""A worker does not outlive its launcher, and hears its stop as soon as it is sent.

granian's workers are child processes of the launcher (``python -m tmsite.serve``, which
becomes granian's main process). On SIGTERM the launcher stops them and waits for them; but
should the launcher itself die (SIGKILL, the OOM killer), its workers would go on serving the
port and writing request-log rows nobody expects any more. So each worker asks Linux to send it
SIGTERM when its parent dies (``PR_SET_PDEATHSIG``, :func:`bind`): it then stops as on an
ordinary stop, finishing what it holds and writing its buffered rows. Elsewhere this is a no-op.

A worker's SIGTERM comes from its launcher (which passes its own on), from the kernel (its
launcher died), or straight from whoever stops the whole process group (systemd's default stop,
a container's stop): the same stop each way. On it, granian stops accepting and waits for the
requests in flight to end before it tells the application (``lifespan.shutdown``); an event
stream never ends by itself, so the worker would be killed at the graceful timeout with its
streams cut. :func:`on_stop` tells the application the moment the signal arrives, so it ends
its streams gracefully at once and the worker stops well within the deadline.

A worker is forked from the launcher with the launcher's own stop handler, which does nothing
in a worker, until granian installs the worker's (after the application is imported: Django's
set-up, a second or two). A stop sent meanwhile would be lost and the worker killed at the
deadline. :func:`hear_early_stops` (run as ``tmsite.serve`` is imported, before Django is)
remembers such a stop, and :func:`on_stop` sends it again once granian's handler is there.

Spec: OP5.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

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


#: The signals that stop a worker (granian's own: it stops on either).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
#: Seconds after the application's start-up a stop heard before it is sent again: by then
#: granian's worker serves (its stop is not heard before it serves).
RESEND_AFTER = 0.05
#: The stop signal this worker heard before granian's handler was in place, if any.
_early: list[int] = []


def _launched_worker() -> bool:
    """Whether this is the main thread of a worker the launcher started (its child)."""
    launcher = os.environ.get(LAUNCHER_ENV, "")
    return (
        launcher.isdigit()
        and os.getppid() == int(launcher)
        and threading.current_thread() is threading.main_thread()
    )


def hear_early_stops() -> bool:
    """In a worker of the launcher: remember a stop that comes before granian's handler.

    Until granian installs it, the launcher's handler, inherited, would drop the signal.
    Whether the handler was installed (not in the launcher, nor in any other process).
    """
    if not _launched_worker():
        return False
    for signum in STOP_SIGNALS:
        signal.signal(signum, _remember)
    return True


def _remember(signum: int, frame: FrameType | None) -> None:
    if not _early:
        _early.append(signum)


def on_stop(loop: asyncio.AbstractEventLoop, callback: Callable[[], None]) -> bool:
    """Run ``callback`` in ``loop`` as soon as a stop signal reaches this process.

    Chained in front of the handler the server installed for each of ``STOP_SIGNALS``, which
    still runs after it, unchanged (granian's event loop hears the signal through its wake-up
    descriptor as before). Only from the main thread, and only over a handler the server set:
    where there is none (an in-thread test server), nothing is installed. A stop heard while
    the worker started (:func:`hear_early_stops`) is sent again, to this process, once it
    serves. Whether the handler was installed.
    """
    if threading.current_thread() is not threading.main_thread():
        return False
    installed = False
    for signum in STOP_SIGNALS:
        previous = signal.getsignal(signum)
        if not callable(previous) or previous is _remember:  # not the server's to chain
            continue
        signal.signal(signum, _chained(loop, callback, previous))
        installed = True
    if installed and _early:  # heard while the worker was starting: now it is heard for real
        loop.call_later(RESEND_AFTER, os.kill, os.getpid(), _early.pop())
    return installed


def _chained(
    loop: asyncio.AbstractEventLoop,
    callback: Callable[[], None],
    previous: Callable[[int, FrameType | None], Any],
) -> Callable[[int, FrameType | None], None]:
    def handler(signum: int, frame: FrameType | None) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: the worker is ending
            loop.call_soon_threadsafe(callback)
        previous(signum, frame)

    return handler
