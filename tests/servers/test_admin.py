"""A maintainer corrects a map item in the admin; the correction survives re-deriving and
changes what the namespace answers. Every change is kept with who and when."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.test import Client

from tests.servers.test_commands import form
from tmsite.core.errors import NotFound
from tmsite.mounts.mcp.mount import McpMount
from tmsite.mounts.namespace import Namespace
from tmsite.servers.models import MapEntry, MapEntryChange, McpServer, ServerChange

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db,
    pytest.mark.urls("tests.servers.admin_urls"),
    pytest.mark.spec("OP4", "MCP"),
]
E = "tm://test/mcp/elements/"


def test_a_correction_survives_rederiving_and_changes_the_namespace(
    admin_client: Client,
) -> None:
    call_command("tm_servers", "ensure-demo", stdout=open("/dev/null", "w"))  # noqa: SIM115
    entry = MapEntry.objects.get(server__name="elements", tool="get_element")
    assert (entry.confidence, entry.touched) == ("exact", False)  # derived, confirmed, untouched
    url = f"/admin/tm_servers/mapentry/{entry.pk}/change/"
    data = form(admin_client, url)
    data.update(path_template="atom/{symbol}", kind="atom", notes="One atom, by symbol.")
    response = admin_client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    changes = MapEntryChange.objects.filter(entry=entry, action="correct", changed_by_name="admin")
    assert sorted(c.field for c in changes) == ["kind", "notes", "path_template"]
    kind = changes.get(field="kind")
    assert (kind.old, kind.new, kind.changed_by is not None) == ("element", "atom", True)
    # Re-deriving adds nothing and changes nothing a maintainer touched.
    call_command("tm_servers", "derive", "elements", stdout=open("/dev/null", "w"))  # noqa: SIM115
    entries = list(MapEntry.objects.filter(server__name="elements"))
    assert [(e.path_template, e.kind, e.confidence) for e in entries] == [
        ("atom/{symbol}", "atom", "exact")
    ]
    ns = Namespace("test", {"mcp": McpMount("test")})
    atom = ns.read(E + "atom/Fe")
    assert atom.mime_type == "application/vnd.tm.atom+json" and atom.body["symbol"] == "Fe"
    assert [(lk.href, lk.confidence) for lk in atom.links if lk.rel == "tm:read-with"] == [
        (E + "tools/get_element", "exact")
    ]
    with pytest.raises(NotFound) as refused:
        ns.read(E + "element/Fe")
    assert refused.value.data["reason"] == "not-found"
    the_map = ns.read(E + "map").body["entries"]
    assert [(m["path"], m["corrected"], m["notes"]) for m in the_map] == [
        ("atom/{symbol}", True, "One atom, by symbol.")
    ]
    # The change log is listed, and cannot be edited.
    listing = admin_client.get("/admin/tm_servers/mapentrychange/?q=atom")
    assert listing.status_code == 200 and "atom/{symbol}" in listing.content.decode()
    change = MapEntryChange.objects.filter(entry=entry).first()
    assert change is not None
    edit = admin_client.post(f"/admin/tm_servers/mapentrychange/{change.pk}/change/", {})
    assert edit.status_code == 403


def test_server_records_are_changed_with_who_and_when(admin_client: Client) -> None:
    server = McpServer.objects.create(name="later", program="elements")
    url = f"/admin/tm_servers/mcpserver/{server.pk}/change/"
    data = form(admin_client, url)
    data.update(description="Read later.", licence_basis="CC0")
    response = admin_client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    rows = ServerChange.objects.filter(server=server).order_by("field")
    assert [(r.field, r.new, r.changed_by_name) for r in rows] == [
        ("description", "Read later.", "admin"),
        ("licence_basis", "CC0", "admin"),
    ]
    found = admin_client.get("/admin/tm_servers/mcpserver/?q=later")
    assert found.status_code == 200 and "later" in found.content.decode()
