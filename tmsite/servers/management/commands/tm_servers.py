"""``manage.py tm_servers add|list|probe|derive|remove|ensure-demo`` — the MCP server records.

    tm_servers add NAME --stdio PROGRAM [ARG …]        a stdio server (no shell: an argument list)
    tm_servers add NAME --program ALLOWED              a stdio server running an allowed program
    tm_servers add NAME --http URL                     a Streamable HTTP server
        [--description TEXT] [--cwd DIR] [--env-allow NAME …] [--token-setting NAME]
        [--source TEXT …] [--licence-basis TEXT] [--start-timeout S] [--call-timeout S]
    tm_servers programs                                the programs the operator allows
    tm_servers list
    tm_servers probe NAME … | --all                    ask now; record what happened; re-derive
    tm_servers derive NAME …                           re-derive maps (hand corrections kept)
    tm_servers remove NAME …
    tm_servers ensure-demo                             the demo server, probed, its map derived

``--stdio`` takes the rest of the command line verbatim, so put it last: every argument after
it, ``--`` and options included, is the server's (``--stdio uv run -- server`` stores
``uv`` with ``["run", "--", "server"]``). One ``--`` straight after ``--stdio`` only separates
and is dropped. ``--stdio`` is how a program becomes one the box may start: it writes the
program (named like the record; ``--cwd`` and ``--env-allow`` belong to it) into the programs
file ``TM_STDIO_PROGRAMS`` names — a file of the deploy configuration, which this command (run
in a shell on the box) writes and the web admin never does. ``--program`` names one already
allowed. Changes made here are kept as changes by ``manage.py tm_servers``, like the admin's.
The start-up checks do not stop this command: it is how a record they refuse is mended.

Spec: MCP, OP5.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from typing_extensions import override

from tmsite.servers import changes, programs
from tmsite.servers.connect import probe_record
from tmsite.servers.index import rederive
from tmsite.servers.models import MapEntry, MapEntryChange, McpServer

BY = "manage.py tm_servers"
DEMO_NAME = "elements"


class _Parser(CommandParser):
    """A parser on which one option, when given, takes the rest of the command line verbatim.

    ``argparse.REMAINDER`` on an option stops at ``--`` and leaves the rest unrecognized, so the
    arguments after ``rest_option`` are cut off before parsing and put back as its value.
    """

    def __init__(self, *args: Any, rest_option: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rest_option = rest_option

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        given = list(sys.argv[1:] if args is None else args)
        option, rest = self.rest_option, None
        if option is not None:
            for at, arg in enumerate(given):
                if arg == option:
                    given, rest = given[: at + 1], given[at + 1 :]
                    break
                if arg.startswith(option + "="):
                    given, rest = [*given[:at], option], [arg[len(option) + 1 :], *given[at + 1 :]]
                    break
        parsed, extras = super().parse_known_args(given, namespace)
        if rest is not None:
            assert option is not None
            setattr(parsed, option.lstrip("-").replace("-", "_"), rest)
        return parsed, extras


class Command(BaseCommand):
    """``manage.py tm_servers``: the server records kept from the command line (see the module)."""

    help = "Add, list, probe, re-derive and remove the MCP servers the box reads."
    #: It mends what the start-up checks refuse (a programs file that cannot be read,
    #: ``tm.E031``), so those checks do not stop it.
    requires_system_checks: Any = ()

    @override
    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True, parser_class=_Parser)
        add = sub.add_parser("add", help="add or replace a server record", rest_option="--stdio")
        add.add_argument("name")
        add.add_argument("--description", default="")
        add.add_argument("--cwd", default="")
        add.add_argument("--env-allow", action="append", default=None, dest="env_allow")
        add.add_argument("--token-setting", default="", dest="token_setting")
        add.add_argument("--source", action="append", default=[], dest="sources")
        add.add_argument("--licence-basis", default="", dest="licence_basis")
        add.add_argument("--start-timeout", type=float, default=10.0, dest="start_timeout")
        add.add_argument("--call-timeout", type=float, default=15.0, dest="call_timeout")
        how = add.add_mutually_exclusive_group(required=True)
        how.add_argument("--http", metavar="URL")
        how.add_argument("--stdio", nargs=argparse.REMAINDER, metavar="PROGRAM")
        how.add_argument("--program", metavar="ALLOWED")
        sub.add_parser("list", help="the records and what happened when each was last asked")
        sub.add_parser("programs", help="the programs the operator allows stdio servers to run")
        probe = sub.add_parser("probe", help="ask servers now and record what they declared")
        probe.add_argument("names", nargs="*")
        probe.add_argument("--all", action="store_true")
        probe.add_argument("--no-derive", action="store_true", dest="no_derive")
        derive = sub.add_parser("derive", help="re-derive index maps (hand corrections kept)")
        derive.add_argument("names", nargs="+")
        remove = sub.add_parser("remove", help="remove server records")
        remove.add_argument("names", nargs="+")
        sub.add_parser("ensure-demo", help="register the demo server, probe it, derive its map")

    @override
    def handle(self, *args: Any, **options: Any) -> None:
        actions: dict[str, Callable[[dict[str, Any]], None]] = {
            "add": self._add,
            "list": lambda _options: self._list(),
            "programs": lambda _options: self._programs(),
            "probe": self._probe_named,
            "derive": self._derive_named,
            "remove": self._remove_named,
            "ensure-demo": lambda _options: self._ensure_demo(),
        }
        actions[options["action"]](options)

    # ---- actions ----------------------------------------------------------------------------

    def _servers(self, names: list[str]) -> list[McpServer]:
        found = {s.name: s for s in McpServer.objects.filter(name__in=names)}
        missing = [n for n in names if n not in found]
        if missing:
            raise CommandError(f"no server named {', '.join(missing)}")
        return [found[n] for n in names]

    def _probe_named(self, options: dict[str, Any]) -> None:
        names = options["names"]
        if options["all"]:
            names = list(McpServer.objects.values_list("name", flat=True))
        if not names:
            raise CommandError("name the servers to probe, or --all")
        for server in self._servers(names):
            self._probe(server, derive=not options["no_derive"])

    def _derive_named(self, options: dict[str, Any]) -> None:
        for server in self._servers(options["names"]):
            self._derive(server)

    def _remove_named(self, options: dict[str, Any]) -> None:
        for server in self._servers(options["names"]):
            server.delete()
            self.stdout.write(f"{server.name}: removed")

    def _add(self, options: dict[str, Any]) -> None:
        values: dict[str, Any] = {
            "description": options["description"],
            "token_setting": options["token_setting"],
            "sources": options["sources"],
            "licence_basis": options["licence_basis"],
            "start_timeout": options["start_timeout"],
            "call_timeout": options["call_timeout"],
        }
        if options["http"]:
            if options["cwd"] or options["env_allow"] is not None:
                raise CommandError("--cwd and --env-allow belong to a stdio program")
            values.update(transport="http", url=options["http"], program="")
        elif options["program"]:
            if options["cwd"] or options["env_allow"] is not None:
                raise CommandError("--cwd and --env-allow belong to the program: use --stdio")
            values.update(transport="stdio", program=options["program"], url="")
        else:
            argv = list(options["stdio"] or [])
            if argv[:1] == ["--"]:  # a separator before the program, not one of its arguments
                argv = argv[1:]
            if not argv:
                raise CommandError("--stdio needs a program")
            self._register(options["name"], argv, options["cwd"], options["env_allow"])
            values.update(transport="stdio", program=options["name"], url="")
        server = self._save(options["name"], values)
        self.stdout.write(f"{server.name}: saved ({server.transport})")

    def _register(self, name: str, argv: list[str], cwd: str, env: list[str] | None) -> None:
        """Write the program into the operator's programs file."""
        spec: dict[str, Any] = {"argv": argv, "cwd": cwd}
        if env is not None:
            spec["env_allow"] = env
        try:
            program = programs.parse_program(name, spec)
            path = programs.register(program)
        except programs.ProgramsUnreadable as exc:
            raise CommandError(f"{name}: {exc}") from None
        self.stdout.write(f"{name}: program {' '.join(program.argv)} allowed in {path}")

    def _programs(self) -> None:
        try:
            allowed = programs.allowed()
        except programs.ProgramsUnreadable as exc:
            raise CommandError(str(exc)) from None
        for program in allowed.values():
            where = program.cwd or "."
            self.stdout.write(
                f"{program.name}\t{' '.join(program.argv)}\t{where}\t{','.join(program.env_allow)}"
            )

    def _save(self, name: str, values: dict[str, Any]) -> McpServer:
        with transaction.atomic():
            server = McpServer.objects.filter(name=name).first()
            old: dict[str, Any] = {}
            if server is None:
                server = McpServer(name=name)
            else:
                old = {f: getattr(server, f) for f in McpServer.CORRECTABLE}
            for field, value in values.items():
                setattr(server, field, value)
            try:
                server.full_clean()
            except ValidationError as exc:
                raise CommandError(f"{name}: {exc.message_dict}") from None
            if old and all(old[f] == getattr(server, f) for f in values if f in old):
                return server
            server.save()
            changes.log_server_fields(server, values, old, None, BY)
        return server

    def _list(self) -> None:
        for server in McpServer.objects.all():
            where = server.url if server.transport == "http" else f"program {server.program}"
            asked = server.last_asked_at.isoformat() if server.last_asked_at else "never asked"
            outcome = server.last_outcome or "-"
            if server.last_failure:
                outcome += f" ({server.last_failure})"
            entries = server.map_entries.count()
            self.stdout.write(
                f"{server.name}\t{server.transport}\t{outcome}\t{asked}\t"
                f"{entries} map entries\t{where}"
            )

    def _probe(self, server: McpServer, derive: bool) -> bool:
        outcome = probe_record(server)
        line = f"{server.name}: {outcome.outcome}"
        if outcome.declaration is not None:
            d = outcome.declaration
            line += (
                f" ({d.protocol_version}, {len(d.tools)} tools, {len(d.resources)} resources, "
                f"{len(d.resource_templates)} templates, {len(d.prompts)} prompts, "
                f"{d.seconds:.2f}s)"
            )
            for listing, error in d.listing_errors.items():
                line += f"\n  {listing}: {error}"
        else:
            line += f" — {outcome.failure}: {outcome.detail}"
        self.stdout.write(line)
        if derive and outcome.declaration is not None:
            self._derive(server)
        return outcome.declaration is not None

    def _derive(self, server: McpServer) -> None:
        summary = rederive(server)
        self.stdout.write(
            f"{server.name}: map +{len(summary.added)} ~{len(summary.updated)} "
            f"-{len(summary.removed)}; {len(summary.kept)} kept as corrected"
        )

    def _ensure_demo(self) -> None:
        """The demo server, its declaration, and its derived map (``get_element`` confirmed).

        The confirmation is the index driver's (``programs.CONFIRMED``), not a maintainer's: an
        entry only this command ever corrected (as it once did) is handed back to the driver.
        """
        server = self._save(
            DEMO_NAME,
            {
                "description": "The demo MCP server shipped with tmsite: the 118 chemical "
                "elements (python -m tmsite.demo.mcp_server).",
                "transport": "stdio",
                "program": programs.DEMO_PROGRAM,
                "url": "",
                "token_setting": "",
                "sources": ["tmsite.demo.mcp_server.elements (IUPAC standard atomic weights)"],
                "licence_basis": "Facts of nature: the element table is in the public domain.",
            },
        )
        _hand_back_to_the_driver(server)
        if not self._probe(server, derive=True):
            self.stderr.write(f"{server.name}: the demo server did not answer; map unchanged")
            return
        entry = MapEntry.objects.filter(server=server, tool="get_element").first()
        if entry is None:
            self.stderr.write(f"{server.name}: no map entry for get_element")
            return
        self.stdout.write(f"{server.name}/{entry.path_template}: {entry.confidence}")


def _hand_back_to_the_driver(server: McpServer) -> None:
    """Untouch the demo entries whose every correction was this command's own."""
    for entry in MapEntry.objects.filter(server=server, touched=True):
        correctors = set(
            MapEntryChange.objects.filter(entry=entry, action="correct").values_list(
                "changed_by_name", flat=True
            )
        )
        if correctors == {BY}:
            MapEntry.objects.filter(pk=entry.pk).update(touched=False)
