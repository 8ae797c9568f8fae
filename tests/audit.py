"""Rules the whole suite runs under, checked by an audit hook (``sys.addaudithook``).

The hook sees what a process does however the code asked for it, so these are facts of every
run rather than things a test remembers to look at:

* ``git-subprocess`` — tmsite code never starts ``git`` (``subprocess``, ``os.exec*``,
  ``os.posix_spawn``, ``os.spawn*``, ``os.system``): git is read through dulwich's plumbing.
  Tests may run the git CLI as an oracle: the nearest frame of this checkout on the stack
  decides whose call it is, so a test's own call is allowed and tmsite's, from any thread, is
  not.
* ``loopback-only`` — no socket connects (or sends a datagram) to anything but loopback
  (127.0.0.0/8, ::1) or a local (AF_UNIX) socket, whoever asks.
* ``revision-parser`` — tmsite code never hands text to dulwich's revision parsers
  (``dulwich.objectspec``: ``parse_object``, ``parse_commit``, ``parse_ref``, …). They are
  wrapped at session start (:func:`guard_revision_parsers`) to raise an audit event of their
  own, so a call from anywhere in tmsite is seen.

A broken rule raises :class:`AuditViolation` where it happened (so the action never takes place)
and is recorded; the test it happened in fails with the rule's name (see ``tests/conftest.py``),
even if the code swallowed the exception or it happened in a server thread. Audit hooks cannot
be removed: :data:`RULES` is the switch the hook reads (``TM_TEST_AUDIT=0`` starts with it off),
and :func:`provoked` collects violations a test causes on purpose instead of failing it.
"""

from __future__ import annotations

import ipaddress
import os
import shlex
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import wraps
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parents[1]
_TMSITE = f"{_ROOT / 'tmsite'}{os.sep}"
_TESTS = f"{_ROOT / 'tests'}{os.sep}"
_HERE = str(Path(__file__).resolve())

#: The audit event the wrapped revision parsers raise.
REVISION_PARSER_EVENT = "tmsite.tests.revision-parser"
_PROCESS_EVENTS = {"subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn", "os.system"}
_NETWORK_EVENTS = {"socket.connect", "socket.sendto", "socket.sendmsg"}
_SHELLS = {"sh", "bash", "dash", "zsh"}


class AuditViolation(RuntimeError):
    """A suite-wide rule was broken (not an ``OSError``, so no caller mistakes it for one)."""


@dataclass
class Rules:
    """The switch the hook reads, and what it found."""

    enforcing: bool = os.environ.get("TM_TEST_AUDIT", "1") != "0"
    found: list[str] = field(default_factory=list)
    provoked: list[str] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


RULES = Rules()
#: Callbacks that see every connect (family, address), enforcing or not: the recorders.
_connect_listeners: list[Callable[[int, Any], None]] = []


def _nearest_project_frame() -> str | None:
    """The file of the nearest frame on the stack that is tmsite's or a test's."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if name != _HERE and (name.startswith(_TMSITE) or name.startswith(_TESTS)):
            return name
        frame = frame.f_back  # type: ignore[assignment]
    return None


def _by_tmsite() -> str | None:
    where = _nearest_project_frame()
    if where is not None and where.startswith(_TMSITE):
        return where[len(str(_ROOT)) + 1 :]
    return None


def _is_git(program: object) -> bool:
    if isinstance(program, bytes):
        program = os.fsdecode(program)
    if not isinstance(program, str | os.PathLike):
        return False
    name = os.path.basename(os.fspath(program))
    return name == "git" or name.startswith("git-")


def _command_words(command: object) -> list[str]:
    if isinstance(command, bytes):
        command = os.fsdecode(command)
    if isinstance(command, str):
        try:
            return shlex.split(command)
        except ValueError:
            return command.split()
    if isinstance(command, list | tuple):
        return [os.fsdecode(w) if isinstance(w, bytes) else str(w) for w in command]
    return []


def _runs_git(event: str, args: tuple[Any, ...]) -> bool:
    if event == "os.system":
        programs: list[object] = [*_command_words(args[0])[:1]]
    elif event == "os.spawn":
        programs = [args[1], *_command_words(args[2])[:1]]
    else:
        programs = [args[0], *_command_words(args[1])[:1]]
    words = _command_words(args[0] if event == "os.system" else args[1])
    if len(words) >= 3 and os.path.basename(words[0]) in _SHELLS and words[1] == "-c":
        programs.extend(_command_words(words[2])[:1])
    return any(_is_git(p) for p in programs)


def _loopback(family: int, address: Any) -> bool:
    if family == socket.AF_UNIX:
        return True
    if family not in (socket.AF_INET, socket.AF_INET6) or not isinstance(address, tuple):
        return False
    host = address[0]
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False  # a name: connecting by name resolves it, wherever it points
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def _broken(rule: str, what: str) -> None:
    message = f"audit rule {rule}: {what}"
    with RULES.lock:
        (RULES.provoked if RULES.provoked is not None else RULES.found).append(message)
    raise AuditViolation(message)


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if event in _NETWORK_EVENTS:
        sock, address = args
        family = getattr(sock, "family", -1)
        if event == "socket.connect":
            for listener in tuple(_connect_listeners):
                listener(family, address)
        if RULES.enforcing and address is not None and not _loopback(family, address):
            _broken("loopback-only", f"{event} to {address!r}: only loopback is allowed")
    elif event in _PROCESS_EVENTS:
        if RULES.enforcing and _runs_git(event, args) and (where := _by_tmsite()):
            command = args[0] if event == "os.system" else args[1]
            _broken("git-subprocess", f"{where} ran {command!r} (git is read through dulwich)")
    elif event == REVISION_PARSER_EVENT and RULES.enforcing and (where := _by_tmsite()):
        _broken("revision-parser", f"{where} called dulwich.objectspec.{args[0]}")


def guard_revision_parsers() -> None:
    """Make every call of dulwich's revision parsers raise :data:`REVISION_PARSER_EVENT`.

    The module's functions are replaced, and so is every reference to them already held by a
    module of tmsite or dulwich (an earlier ``from dulwich.objectspec import …``). Calling it
    again replaces only what is new.
    """
    from dulwich import objectspec

    guards: dict[int, Callable[..., Any]] = {}
    for name, current in list(vars(objectspec).items()):
        public = name.startswith("parse_") or name == "scan_for_short_id"
        if not public or getattr(current, "__module__", None) != objectspec.__name__:
            continue
        if getattr(current, "_guarded", False):
            guards[id(current.__wrapped__)] = current
            continue

        def guarded(*a: Any, __name: str = name, __original: Any = current, **k: Any) -> Any:
            sys.audit(REVISION_PARSER_EVENT, __name)
            return __original(*a, **k)

        wrapper = wraps(current)(guarded)
        wrapper._guarded = True  # type: ignore[attr-defined]
        guards[id(current)] = wrapper
        setattr(objectspec, name, wrapper)
    for module_name, module in list(sys.modules.items()):
        if module is None or not module_name.startswith(("tmsite", "dulwich")):
            continue
        for attr, value in list(vars(module).items()):
            guard = guards.get(id(value))
            if guard is not None and guard.__wrapped__ is value:  # type: ignore[attr-defined]
                setattr(module, attr, guard)


def take_found() -> list[str]:
    """What was broken since the last call (outside :func:`provoked`), and forget it."""
    with RULES.lock:
        found, RULES.found[:] = list(RULES.found), []
    return found


@contextmanager
def provoked() -> Iterator[list[str]]:
    """Collect the violations caused inside the block instead of failing the test."""
    with RULES.lock:
        RULES.provoked = []
        collected = RULES.provoked
    try:
        yield collected
    finally:
        with RULES.lock:
            RULES.provoked = None


@contextmanager
def recorded_connections() -> Iterator[list[tuple[str, int]]]:
    """Every address any socket of this process connects to while inside the block.

    Built on the ``socket.connect`` audit event, so it sees a connect however it is made
    (``socket.create_connection``, ``http.client``, a bare ``socket.connect``). An address is
    ``(host, port)``; a local socket's is ``(path, 0)``.
    """
    seen: list[tuple[str, int]] = []

    def listen(family: int, address: Any) -> None:
        if isinstance(address, tuple) and len(address) >= 2:
            seen.append((str(address[0]), int(address[1])))
        else:
            seen.append((os.fsdecode(address) if isinstance(address, bytes) else str(address), 0))

    _connect_listeners.append(listen)
    try:
        yield seen
    finally:
        _connect_listeners.remove(listen)


_installed = False


def install() -> None:
    """Add the hook (once per process) and guard the revision parsers."""
    global _installed
    if not _installed:
        _installed = True
        sys.addaudithook(_hook)
        guard_revision_parsers()
