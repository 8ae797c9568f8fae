"""Map-named reads from a per-process memo of the map and declaration, checked against the
server's ``map_version`` in the database on every read."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from tests.mcpmount.conftest import BASE, DEMO
from tmsite.core.errors import NotFound
from tmsite.mounts.namespace import Namespace
from tmsite.servers.changes import correct_entry
from tmsite.servers.connect import probe_record
from tmsite.servers.index import rederive
from tmsite.servers.models import MapEntry, McpServer

pytestmark = [pytest.mark.slow, pytest.mark.spec("MCP")]
E = BASE + "elements/"


@pytest.fixture
def elements(stdio_server: Callable[..., McpServer]) -> McpServer:
    server = stdio_server("elements", DEMO, description="The chemical elements.")
    assert probe_record(server).outcome == "answered"
    rederive(server)
    server.refresh_from_db()
    return server


def confidence_of(ns: Namespace, uri: str) -> str:
    body = ns.read(uri).body
    assert isinstance(body, dict)
    return str(body["_meta"]["tinymachines.ai/provenance"]["confidence"])


@pytest.mark.django_db
def test_a_warm_map_named_read_asks_the_database_for_the_record_alone(
    ns: Namespace, elements: McpServer
) -> None:
    ns.read(E + "element/Fe")
    with CaptureQueriesContext(connection) as queries:
        body = ns.read(E + "element/Na").body
    assert isinstance(body, dict) and body["symbol"] == "Na"
    assert len(queries) == 1, [q["sql"] for q in queries]
    assert "tm_servers_mcpserver" in queries[0]["sql"]


@pytest.mark.django_db
def test_a_correction_is_seen_by_the_next_read(ns: Namespace, elements: McpServer) -> None:
    assert confidence_of(ns, E + "element/Fe") == "exact"
    entry = MapEntry.objects.get(server=elements)
    correct_entry(entry, {"confidence": "inferred"}, None, "maintainer")
    assert confidence_of(ns, E + "element/Fe") == "inferred"
    entry.delete()
    with pytest.raises(NotFound) as gone:
        ns.read(E + "element/Fe")
    assert gone.value.data["reason"] == "not-found"
    assert gone.value.data["uri"] == E + "element/Fe"
    assert "map names" in str(gone.value)


@pytest.mark.django_db(transaction=True)
def test_a_change_from_another_connection_is_seen(ns: Namespace, elements: McpServer) -> None:
    assert confidence_of(ns, E + "element/Fe") == "exact"
    entry = MapEntry.objects.get(server=elements)

    def elsewhere() -> None:
        # Another worker: its own connection, plain SQL, no signal of this process involved.
        try:
            with connections["default"].cursor() as cursor:
                cursor.execute(
                    "UPDATE tm_servers_mapentry SET confidence = %s WHERE id = %s",
                    ["inferred", entry.pk],
                )
                cursor.execute(
                    "UPDATE tm_servers_mcpserver SET map_version = map_version + 1 WHERE id = %s",
                    [elements.pk],
                )
        finally:
            connections["default"].close()

    worker = threading.Thread(target=elsewhere)
    worker.start()
    worker.join(10)
    assert not worker.is_alive()
    assert confidence_of(ns, E + "element/Fe") == "inferred"
