"""What the box may run and where it may connect: the operator's, named outside the web admin.

**Programs.** A stdio server record names a *program*; what that program is — its argument
list, working directory and the environment variables it may see — is the operator's, in the
deploy configuration:

* the embedded default, ``elements``: the demo server shipped with tmsite
  (``python -m tmsite.demo.mcp_server``), so a fresh checkout reads its demo peer;
* ``TM_STDIO_PROGRAMS``: the path of a JSON (or ``.toml``) file mapping a program name to
  ``{"argv": [...], "cwd": "...", "env_allow": [...]}`` (``cwd`` relative to the project root,
  empty for the root; ``env_allow`` defaults to PATH and the locale; an ``argv[0]`` of
  ``{python}`` is the box's own interpreter). ``manage.py tm_servers add NAME --stdio PROGRAM
  [ARG …]`` writes its entry there — it needs a shell on the box. A name mapped to ``null``
  removes the embedded default. (Settings may also hold the mapping itself.)

The admin only chooses among these names. A record naming a program that is not (or no longer)
allowed starts nothing: the start-up check ``tm.W030`` names it, and it is read as ``gated``
(``failed: program-not-allowed``). A programs file that cannot be read is ``tm.E031``.

**Addresses.** HTTP peers are reached under :func:`dial_policy`: ``https`` to public addresses,
plus the hosts ``TM_MCP_ALLOWED_HOSTS`` names (``host`` or ``host:port``), which may resolve to
addresses that are not public and, on loopback, may use plain ``http``. A record whose URL the
policy refuses on its face is ``tm.W032`` at start-up; every connection is judged again on the
address actually dialled (:mod:`tmsite.core.addresses`).

Spec: MCP, OP4.
"""

from __future__ import annotations

import json
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError

from tmsite.check_registry import check
from tmsite.core.addresses import AddressRefused, DialPolicy
from tmsite.mcpclient.stdio import DEFAULT_ENV_ALLOW
from tmsite.servers import grammar

#: The embedded default: the demo server tmsite ships.
DEMO_PROGRAM = "elements"
#: What is known of a program's tools beyond their schemas, by program and tool: fields the
#: index driver gives the entry it derives (a derived entry still, not a maintainer's
#: correction, so re-deriving keeps it and a maintainer may still correct it).
CONFIRMED: dict[str, dict[str, dict[str, str]]] = {
    DEMO_PROGRAM: {
        "get_element": {
            "confidence": "exact",
            "notes": "Confirmed: get_element reads one element by its symbol, any case; "
            "an unknown symbol is a tool error.",
        }
    }
}
PYTHON = "{python}"
NOT_ALLOWED = "tm.W030"
UNREADABLE = "tm.E031"
URL_REFUSED = "tm.W032"


@dataclass(frozen=True)
class Program:
    """One program the operator allows the box to start (never through a shell)."""

    name: str
    argv: tuple[str, ...]
    cwd: str = ""
    env_allow: tuple[str, ...] = DEFAULT_ENV_ALLOW

    def as_json(self) -> dict[str, Any]:
        """The entry as the programs file keeps it."""
        return {"argv": list(self.argv), "cwd": self.cwd, "env_allow": list(self.env_allow)}

    def working_directory(self) -> Path:
        """Where it runs: ``cwd`` under the project root (or absolute), else the root."""
        base = Path(settings.BASE_DIR)
        return (base / self.cwd).resolve() if self.cwd else base


class ProgramsUnreadable(ValueError):
    """``TM_STDIO_PROGRAMS`` names a file that cannot be read, or entries that are malformed."""


class ProgramNotAllowed(Exception):
    """A stdio record names a program the operator does not allow: nothing is started."""

    def __init__(self, server: str, program: str, why: str = "") -> None:
        named = f"the program {program!r}" if program else "no program"
        super().__init__(
            f"the MCP server {server} names {named}, which the operator does not allow "
            f"({NOT_ALLOWED}{': ' + why if why else ''}); allowed programs are named in "
            "TM_STDIO_PROGRAMS or with manage.py tm_servers add --stdio"
        )
        self.server = server
        self.program = program
        self.check_id = NOT_ALLOWED


def embedded() -> dict[str, Program]:
    """The programs every box allows unless its file removes them."""
    return {DEMO_PROGRAM: Program(DEMO_PROGRAM, (sys.executable, "-m", "tmsite.demo.mcp_server"))}


def programs_file() -> Path | None:
    """The file ``TM_STDIO_PROGRAMS`` names, or None (unset, or set to a mapping)."""
    value = getattr(settings, "TM_STDIO_PROGRAMS", "")
    if isinstance(value, str | Path) and str(value):
        return Path(value)
    return None


def _raw() -> Mapping[str, Any]:
    value = getattr(settings, "TM_STDIO_PROGRAMS", "")
    if isinstance(value, Mapping):
        return value
    path = programs_file()
    if path is None:
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}  # nothing registered yet: the embedded default only
    except OSError as exc:
        raise ProgramsUnreadable(f"{path}: {exc.strerror or exc}") from None
    try:
        raw = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text or "{}")
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ProgramsUnreadable(f"{path}: {exc}") from None
    if not isinstance(raw, dict):
        raise ProgramsUnreadable(f"{path}: a mapping of program names to launch specs")
    return raw


def parse_program(name: str, spec: Any) -> Program:
    """One entry of the programs file, checked (``{python}`` as the box's interpreter).

    Raises:
        ProgramsUnreadable: the name or the spec is malformed.
    """
    if not isinstance(name, str) or not grammar.SERVER_NAME.fullmatch(name):
        raise ProgramsUnreadable(f"{name!r}: a program name is lowercase letters, digits, '-'")
    if not isinstance(spec, Mapping):
        raise ProgramsUnreadable(f"{name}: a mapping with argv, cwd and env_allow")
    unknown = set(spec) - {"argv", "cwd", "env_allow"}
    argv = spec.get("argv")
    cwd = spec.get("cwd", "")
    env_allow = spec.get("env_allow", list(DEFAULT_ENV_ALLOW))
    if unknown:
        raise ProgramsUnreadable(f"{name}: unknown keys {sorted(unknown)}")
    if (
        not isinstance(argv, list)
        or not argv
        or not all(isinstance(a, str) and a and "\0" not in a for a in argv)
    ):
        raise ProgramsUnreadable(f"{name}: argv is a non-empty list of strings (no NUL)")
    if not isinstance(cwd, str) or "\0" in cwd:
        raise ProgramsUnreadable(f"{name}: cwd is a path")
    if not isinstance(env_allow, list) or not all(
        isinstance(n, str) and grammar.ENV_NAME.fullmatch(n) for n in env_allow
    ):
        raise ProgramsUnreadable(f"{name}: env_allow is a list of environment variable names")
    program = [sys.executable if argv[0] == PYTHON else argv[0], *argv[1:]]
    return Program(name, tuple(program), cwd, tuple(env_allow))


def allowed() -> dict[str, Program]:
    """Every program the operator allows, by name: the embedded default and the file's.

    Raises:
        ProgramsUnreadable: the file cannot be read or an entry is malformed.
    """
    found = embedded()
    for name, spec in _raw().items():
        if spec is None:
            found.pop(name, None)
        else:
            found[name] = parse_program(name, spec)
    return found


def program_for(server: str, program: str) -> Program:
    """The program a stdio record names, as the operator allows it now.

    Raises:
        ProgramNotAllowed: it is not allowed (or the programs file cannot be read).
    """
    try:
        found = allowed().get(program)
    except ProgramsUnreadable as exc:
        raise ProgramNotAllowed(server, program, str(exc)) from None
    if found is None:
        raise ProgramNotAllowed(server, program)
    return found


def register(program: Program) -> Path:
    """Write ``program`` into the programs file (``manage.py tm_servers add --stdio``).

    Raises:
        ProgramsUnreadable: no file is configured, or the one named cannot be read or written.
    """
    path = programs_file()
    if path is None:
        raise ProgramsUnreadable(
            "TM_STDIO_PROGRAMS names no file: set it to the path of a JSON file the box's "
            "operator keeps, then add the program again"
        )
    if path.suffix == ".toml":
        raise ProgramsUnreadable(f"{path}: a TOML file is edited by hand; use a .json file here")
    current = dict(_raw())
    current[program.name] = program.as_json()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        scratch = path.with_name(path.name + ".new")
        scratch.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n", "utf-8")
        scratch.replace(path)
    except OSError as exc:
        raise ProgramsUnreadable(f"{path}: {exc.strerror or exc}") from None
    return path


def dial_policy() -> DialPolicy:
    """Where the box's MCP client may connect (``TM_MCP_ALLOWED_HOSTS``)."""
    hosts = getattr(settings, "TM_MCP_ALLOWED_HOSTS", ())
    return DialPolicy.of(str(h) for h in hosts)


def url_refusal(url: str) -> AddressRefused | None:
    """Why the policy refuses an HTTP record's URL on its face (before resolving), or None."""
    try:
        dial_policy().check_url(url)
    except AddressRefused as exc:
        return exc
    return None


@check
def server_records() -> list[Any]:
    """``tm.E031``, ``tm.W030``, ``tm.W032``: records name programs and URLs the operator allows.

    ``tm.E031`` (an error: the box does not start): ``TM_STDIO_PROGRAMS`` cannot be read.
    Warnings, since the box serves everything else and the record itself is refused (read as
    ``gated``, starting nothing, dialling nothing): ``tm.W030``, a stdio record names a program
    that is not allowed; ``tm.W032``, an HTTP record's URL is refused on its face (scheme, a
    literal address that is not public). Records are read from the database; when
    it has no tables yet (before ``migrate``), or cannot be used (``tm.E002``), there is nothing
    to check.
    """
    from tmsite.servers.models import McpServer

    try:
        names = set(allowed())
    except ProgramsUnreadable as exc:
        return [checks.Error(f"TM_STDIO_PROGRAMS cannot be used: {exc}", id=UNREADABLE)]
    if getattr(settings, "TM_DATABASE_URL_PROBLEM", ""):
        return []  # no database to read the records from: tm.E002 says why
    try:
        records = list(McpServer.objects.values_list("name", "transport", "program", "url"))
    except (DatabaseError, ImproperlyConfigured):
        return []
    out: list[Any] = []
    for name, transport, program, url in records:
        if transport == "stdio" and program not in names:
            out.append(
                checks.Warning(
                    f"the MCP server {name} names the program {program!r}, which is not allowed",
                    hint="add it to the TM_STDIO_PROGRAMS file (manage.py tm_servers add "
                    f"{name} --stdio PROGRAM …), or choose an allowed one: {sorted(names)}",
                    id=NOT_ALLOWED,
                )
            )
        elif transport == "http" and (refusal := url_refusal(url)) is not None:
            out.append(
                checks.Warning(
                    f"the MCP server {name}'s URL is refused: {refusal}",
                    hint="https to a public host, or name the host in TM_MCP_ALLOWED_HOSTS",
                    id=URL_REFUSED,
                )
            )
    return out
