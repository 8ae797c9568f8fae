"""A stdio record names one of the operator's programs instead of keeping its own command.

Each stdio record's program, arguments, working directory and environment allow-list become the
name of a program: the operator's entry with the same launch spec if there is one, ``elements``
for the demo server, else the record's own name — which the operator does not allow until the
programs file names it (``tm.W030``; the record is ``gated`` meanwhile). What the record ran is
kept in its history: one ``program`` change whose old value is the launch spec it had. The
fields themselves go in ``0004``, once the data has moved: schema changes and the rows written
here are not mixed in one transaction.
"""

from typing import Any

from django.db import migrations, models

BY = "migration tm_servers 0003"
DEMO_ARGS = ["-m", "tmsite.demo.mcp_server"]


def _named(command: str, args: list[Any], cwd: str, env_allow: list[Any]) -> str | None:
    """The allowed program with exactly this launch spec, if the operator has one."""
    from tmsite.servers import programs

    try:
        allowed = programs.allowed()
    except programs.ProgramsUnreadable:
        return None
    for name, program in allowed.items():
        if name == programs.DEMO_PROGRAM and list(args) == DEMO_ARGS and not cwd:
            return name
        if list(program.argv) == [command, *args] and program.cwd == cwd:
            if list(program.env_allow) == list(env_allow):
                return name
    return None


def to_programs(apps: Any, schema_editor: Any) -> None:
    server_model = apps.get_model("tm_servers", "McpServer")
    change_model = apps.get_model("tm_servers", "ServerChange")
    for server in server_model.objects.filter(transport="stdio"):
        spec = {
            "command": server.command,
            "args": server.args,
            "cwd": server.cwd,
            "env_allow": server.env_allow,
        }
        server.program = (
            _named(server.command, server.args, server.cwd, server.env_allow) or server.name
        )
        server.save(update_fields=["program"])
        change_model.objects.create(
            server=server,
            server_name=server.name,
            field="program",
            old=spec,
            new=server.program,
            changed_by=None,
            changed_by_name=BY,
        )


class Migration(migrations.Migration):
    dependencies = [
        ("tm_servers", "0002_map_version"),
    ]

    operations = [
        migrations.AddField(
            model_name="mcpserver",
            name="program",
            field=models.CharField(
                blank=True,
                help_text="stdio: which of the programs the operator allows it runs (its "
                "argument list, working directory and environment are the operator's, in "
                "TM_STDIO_PROGRAMS).",
                max_length=50,
            ),
        ),
        migrations.RunPython(to_programs, migrations.RunPython.noop),
    ]
