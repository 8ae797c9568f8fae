"""What a stdio peer runs is the operator's: the admin chooses a name, never types a program.

Through the admin's real views: a logged-in staff user, the CSRF token fetched with the form and
posted back (``enforce_csrf_checks``). The programs file is the operator's, in a temporary
directory; ``manage.py tm_servers add --stdio`` writes it, the admin never does.
"""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client

from tests.peers.processes import PEERS, children
from tests.servers.test_commands import form
from tmsite.core.errors import Gated
from tmsite.mounts.mcp.mount import McpMount
from tmsite.mounts.namespace import Namespace
from tmsite.servers import programs
from tmsite.servers.connect import probe_record
from tmsite.servers.models import McpServer, ServerChange
from tmsite.servers.programs import server_records

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.urls("tests.servers.admin_urls"),
    pytest.mark.spec("OP4", "MCP"),
]
ADD = "/admin/tm_servers/mcpserver/add/"
KOYU = [sys.executable, str(PEERS / "koyu_peer.py")]
#: What a post may carry that would make the box run something: never taken from the web.
SMUGGLED = {
    "command": "/bin/sh",
    "args": '["-c", "touch /tmp/owned"]',
    "cwd": "/",
    "env_allow": '["HOME", "TM_SECRET_KEY"]',
    "argv": "/bin/sh",
}


@pytest.fixture
def programs_file(settings: Any, tmp_path: Path) -> Path:
    path = tmp_path / "deploy" / "programs.json"
    settings.TM_STDIO_PROGRAMS = str(path)
    return path


@pytest.fixture
def staff(db: None) -> Client:
    """A staff user who may add and change server records, logged in; CSRF checks on."""
    user = User.objects.create_user("maintainer", password="not-used-here", is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label="tm_servers", codename__in=["add_mcpserver", "change_mcpserver"]
        )
    )
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


def fetched(client: Client, url: str) -> tuple[str, dict[str, str]]:
    """The form page and the values a browser would post back (its CSRF token included)."""
    page = client.get(url)
    assert page.status_code == 200
    data = form(client, url)
    assert data.get("csrfmiddlewaretoken"), "the form carries its CSRF token"
    return page.content.decode(), data


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("tm_servers", *args, stdout=out, stderr=out)
    return out.getvalue()


def test_the_form_offers_no_program_to_type_only_a_choice_of_the_allowed_ones(
    staff: Client, programs_file: Path
) -> None:
    run("add", "koyu", "--stdio", *KOYU)
    html, _ = fetched(staff, ADD)
    names = set(re.findall(r'name="([^"]+)"', html))
    assert not names & {"command", "args", "cwd", "env_allow", "argv"}, names
    [select] = re.findall(r'<select[^>]*name="program"[^>]*>(.*?)</select>', html, re.S)
    assert re.findall(r'<option value="([^"]*)"', select) == ["", "elements", "koyu"]
    assert not re.search(r'<(input|textarea)[^>]*name="program"', html)


def test_posting_a_program_anyway_changes_nothing(staff: Client, programs_file: Path) -> None:
    _, data = fetched(staff, ADD)
    data.update(name="demo", transport="stdio", program="elements", **SMUGGLED)
    response = staff.post(ADD, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    server = McpServer.objects.get(name="demo")
    assert list(server.launch().argv) == [sys.executable, "-m", "tmsite.demo.mcp_server"]
    assert server.launch().cwd == "" and "HOME" not in server.launch().env_allow
    [added] = ServerChange.objects.filter(server=server)
    assert (added.field, added.changed_by_name) == ("*", "maintainer")
    assert added.new["program"] == "elements" and not set(added.new) & set(SMUGGLED)
    assert not programs_file.exists(), "the admin never writes the operator's programs"
    # A change posted with them again: only the description changes, and is kept with who.
    url = f"/admin/tm_servers/mcpserver/{server.pk}/change/"
    _, data = fetched(staff, url)
    data.update(description="The elements.", **SMUGGLED)
    assert staff.post(url, data).status_code == 302
    rows = ServerChange.objects.filter(server=server).exclude(field="*")
    assert [(r.field, r.new, r.changed_by_name) for r in rows] == [
        ("description", "The elements.", "maintainer")
    ]
    assert list(McpServer.objects.get(pk=server.pk).launch().argv)[1:] == [
        "-m",
        "tmsite.demo.mcp_server",
    ]


def test_a_program_the_operator_does_not_allow_cannot_be_chosen(
    staff: Client, programs_file: Path
) -> None:
    _, data = fetched(staff, ADD)
    data.update(name="shell", transport="stdio", program="sh")
    response = staff.post(ADD, data)
    assert response.status_code == 200
    assert "Select a valid choice. sh is not one of the available choices." in (
        response.content.decode()
    )
    assert not McpServer.objects.filter(name="shell").exists()


def test_without_the_csrf_token_nothing_is_saved(staff: Client, programs_file: Path) -> None:
    _, data = fetched(staff, ADD)
    data.pop("csrfmiddlewaretoken")
    data.update(name="demo", transport="stdio", program="elements")
    assert staff.post(ADD, data).status_code == 403
    assert not McpServer.objects.exists()


@pytest.mark.slow
def test_a_record_naming_a_removed_program_is_gated_with_the_check_id(
    staff: Client, programs_file: Path
) -> None:
    said = run("add", "koyu", "--description", "koyu", "--stdio", *KOYU)
    assert f"koyu: program {' '.join(KOYU)} allowed in {programs_file}\n" in said
    assert json.loads(programs_file.read_text())["koyu"]["argv"] == KOYU
    server = McpServer.objects.get(name="koyu")
    assert probe_record(server).outcome == "answered"
    assert server_records() == []
    # The operator removes it from the deploy configuration.
    programs_file.write_text(json.dumps({}))
    [message] = server_records()
    assert (message.id, message.msg) == (
        "tm.W030",
        "the MCP server koyu names the program 'koyu', which is not allowed",
    )
    said_by_check = io.StringIO()
    call_command("check", stdout=io.StringIO(), stderr=said_by_check)  # a warning: it starts
    assert "(tm.W030) the MCP server koyu names" in said_by_check.getvalue()
    before = children()
    outcome = probe_record(server)
    assert children() == before, "nothing was started"
    server.refresh_from_db()
    assert (server.last_outcome, server.last_failure) == ("gated", "program-not-allowed")
    assert "(tm.W030)" in server.last_detail
    ns = Namespace("test", {"mcp": McpMount("test")})
    record = ns.read("tm://test/mcp/koyu/").body["server"]
    assert (record["outcome"], record["failure"], record["check"], record["program"]) == (
        "gated",
        "program-not-allowed",
        "tm.W030",
        "koyu",
    )
    assert outcome.outcome == "gated"
    # Its change page still opens; the form says the program is not one it may choose.
    url = f"/admin/tm_servers/mcpserver/{server.pk}/change/"
    _, data = fetched(staff, url)
    assert data["program"] == ""
    data.update(program="koyu")
    response = staff.post(url, data)
    assert response.status_code == 200 and "Select a valid choice." in response.content.decode()


def test_a_map_named_read_of_a_removed_program_is_gated_before_anything_starts(
    programs_file: Path,
) -> None:
    server = McpServer.objects.create(name="gone", transport="stdio", program="gone")
    server.map_entries.create(path_template="element/{symbol}", tool="get_element", kind="x")
    ns = Namespace("test", {"mcp": McpMount("test")})
    before = children()
    with pytest.raises(Gated) as refused:
        ns.read("tm://test/mcp/gone/element/Fe")
    assert children() == before
    assert refused.value.data == {
        "reason": "gated",
        "uri": "tm://test/mcp/gone/element/Fe",
        "failed": "program-not-allowed",
        "program": "gone",
        "check": "tm.W030",
    }


def test_the_embedded_default_is_allowed_and_the_file_can_remove_it(
    settings: Any, programs_file: Path
) -> None:
    settings.TM_STDIO_PROGRAMS = ""
    assert list(programs.allowed()) == ["elements"]
    settings.TM_STDIO_PROGRAMS = str(programs_file)
    programs_file.parent.mkdir(parents=True)
    programs_file.write_text(json.dumps({"elements": None, "peer": {"argv": ["{python}", "p"]}}))
    assert {n: p.argv for n, p in programs.allowed().items()} == {"peer": (sys.executable, "p")}
    toml = programs_file.with_suffix(".toml")
    toml.write_text('[koyu]\nargv = ["koyu-mcp"]\ncwd = "examples"\n')
    settings.TM_STDIO_PROGRAMS = str(toml)
    assert programs.allowed()["koyu"] == programs.Program("koyu", ("koyu-mcp",), "examples")


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("{not json", "Expecting property name"),
        ('["koyu"]', "a mapping of program names to launch specs"),
        ('{"Koyu": {"argv": ["k"]}}', "a program name is lowercase letters"),
        ('{"koyu": {"argv": []}}', "argv is a non-empty list of strings"),
        ('{"koyu": {"argv": ["k"], "shell": true}}', "unknown keys ['shell']"),
        ('{"koyu": {"argv": ["k"], "env_allow": ["A B"]}}', "env_allow is a list of"),
    ],
)
def test_a_programs_file_that_cannot_be_used_is_tm_e031(
    programs_file: Path, content: str, says: str
) -> None:
    programs_file.parent.mkdir(parents=True)
    programs_file.write_text(content)
    [message] = server_records()
    assert message.id == "tm.E031" and says in message.msg
    with pytest.raises(ValidationError) as refused:
        McpServer(name="x", transport="stdio", program="elements").full_clean()
    assert says in refused.value.message_dict["program"][0]


def test_add_stdio_needs_a_programs_file_and_program_names_an_allowed_one(
    settings: Any, programs_file: Path
) -> None:
    settings.TM_STDIO_PROGRAMS = ""
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="TM_STDIO_PROGRAMS names no file"):
        run("add", "koyu", "--stdio", *KOYU)
    assert not McpServer.objects.exists()
    assert run("add", "demo", "--program", "elements") == "demo: saved (stdio)\n"
    with pytest.raises(CommandError, match="one of the programs the operator allows"):
        run("add", "other", "--program", "koyu")
    assert run("programs").startswith(f"elements\t{sys.executable} -m tmsite.demo.mcp_server\t")


MIGRATE_FROM = [("tm_servers", "0002_map_version")]
MIGRATE_TO = [("tm_servers", "0004_no_command")]


@pytest.mark.slow
def test_the_migration_maps_commands_to_programs_and_keeps_what_they_ran(
    transactional_db: None, settings: Any, tmp_path: Path
) -> None:
    path = tmp_path / "programs.json"
    path.write_text(json.dumps({"koyu": {"argv": ["koyu-mcp", "serve"], "cwd": "ex"}}))
    settings.TM_STDIO_PROGRAMS = str(path)
    executor = MigrationExecutor(connection)
    executor.migrate(MIGRATE_FROM)
    old = executor.loader.project_state(MIGRATE_FROM).apps.get_model("tm_servers", "McpServer")
    demo = ["-m", "tmsite.demo.mcp_server"]
    old.objects.create(name="elements", transport="stdio", command="/usr/bin/python3", args=demo)
    old.objects.create(name="koyu", transport="stdio", command="koyu-mcp", args=["serve"], cwd="ex")
    old.objects.create(name="typed", transport="stdio", command="/bin/sh", args=["-c", "id"])
    old.objects.create(name="web", transport="http", url="https://mcp.example.org/")
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(MIGRATE_TO)
    now = executor.loader.project_state(MIGRATE_TO).apps.get_model("tm_servers", "McpServer")
    found = dict(now.objects.values_list("name", "program"))
    assert found == {"elements": "elements", "koyu": "koyu", "typed": "typed", "web": ""}
    changes = executor.loader.project_state(MIGRATE_TO).apps.get_model("tm_servers", "ServerChange")
    kept = changes.objects.get(server_name="typed")
    assert (kept.field, kept.new, kept.changed_by_name) == (
        "program",
        "typed",
        "migration tm_servers 0003",
    )
    assert kept.old == {
        "command": "/bin/sh",
        "args": ["-c", "id"],
        "cwd": "",
        "env_allow": ["PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ"],
    }
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
    [message] = server_records()
    assert (message.id, "typed" in message.msg) == ("tm.W030", True)
