"""``/metrics`` in process: who may read it, what its labels may hold, what it reads at a scrape.

Only loopback and ``TM_METRICS_ALLOWED`` read it, the caller found as the rate limit finds it
(a trusted proxy's ``X-Forwarded-For``); anyone else gets the 404 of a URL not served. A
method or tool the protocol does not name is ``other``; a request that is not MCP adds no
operation. Proposals waiting, peers by state and the search index's documents and lag are read
from the database at the scrape. A ``TM_METRICS_ALLOWED`` entry that is no address is the
start-up check ``tm.E040``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from tmsite import checks
from tmsite.core.types import Document
from tmsite.oplog import metrics
from tmsite.oplog.recorder import Row
from tmsite.proposals import receipts
from tmsite.proposals.models import Proposal
from tmsite.search import index
from tmsite.servers.models import McpServer

pytestmark = [pytest.mark.spec("OBS1", "SRCH1"), pytest.mark.django_db]


def samples(client: Client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    answer = client.get("/metrics")
    assert answer.status_code == 200
    assert answer["Content-Type"].startswith("text/plain; version=")
    found = {}
    for family in text_string_to_metric_families(answer.content.decode()):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


@pytest.mark.parametrize(
    ("peer", "forwarded", "allowed"),
    [
        ("127.0.0.1", None, True),
        ("::1", None, True),
        ("127.0.0.1", "192.0.2.77", True),  # forwarded by the trusted proxy, in the network
        ("192.0.2.77", None, True),
        ("2001:db8:5::9", None, True),
        ("::ffff:192.0.2.8", None, True),
        ("127.0.0.1", "203.0.113.5", False),
        ("203.0.113.5", None, False),
        ("203.0.113.5", "127.0.0.1", False),  # an untrusted peer's header is not believed
        ("2001:db8:6::9", None, False),
        ("127.0.0.1", "unknown", False),
    ],
)
def test_only_loopback_and_the_allowed_read_metrics(
    settings: Any, peer: str, forwarded: str | None, allowed: bool
) -> None:
    settings.TM_METRICS_ALLOWED = ["192.0.2.0/24", "2001:db8:5::/48"]
    extra = {"REMOTE_ADDR": peer}
    if forwarded is not None:
        extra["HTTP_X_FORWARDED_FOR"] = forwarded
    answer = Client().get("/metrics", **extra)  # type: ignore[arg-type]
    assert answer.status_code == (200 if allowed else 404)
    assert (b"mcp_server_operation_duration_seconds" in answer.content) is allowed


def test_a_post_is_not_served(client: Client) -> None:
    assert client.post("/metrics").status_code == 404


def test_labels_hold_only_the_protocol_s_words(client: Client) -> None:
    before = samples(client)
    at = timezone.now()
    for row in (
        Row(at, "mcp-http", method="zq7-method", outcome="ok", duration_us=10),
        Row(at, "mcp-http", method="tools/call", target="zq7-tool", outcome="rpc-32602"),
        Row(at, "mcp-http", method="tools/call", target="piece", outcome="ok"),
        Row(at, "mcp-http", method="ping", outcome="Not A Reason zq7"),
        Row(at, "mcp-stdio", method="ping", outcome="ok"),
        Row(at, "rest", method="GET zq7", outcome="ok", status=200),
    ):
        metrics.observe(row)
    after = samples(client)
    text = repr(after)
    assert "zq7" not in text and "Not A Reason" not in text

    def more(method: str, tool: str, outcome: str) -> float:
        key = (
            "mcp_server_operation_duration_seconds_count",
            (("gen_ai_tool_name", tool), ("mcp_method_name", method), ("outcome", outcome)),
        )
        return after.get(key, 0) - before.get(key, 0)

    assert more("other", "", "ok") == 1
    assert more("tools/call", "other", "rpc-32602") == 1
    assert more("tools/call", "piece", "ok") == 1
    assert more("ping", "", "other") == 1
    assert more("ping", "", "ok") == 1  # stdio: an operation, not an HTTP request
    http = ("tmsite_http_requests_total", (("status", "200"), ("surface", "mcp-http")))
    rest = ("tmsite_http_requests_total", (("status", "200"), ("surface", "rest")))
    assert after[http] - before.get(http, 0) == 4
    assert after[rest] - before.get(rest, 0) == 1


def _proposal(n: int, status: str, age_days: int = 0) -> None:
    Proposal.objects.create(
        receipt=receipts.new_id(),
        fingerprint=f"{n:064d}",
        kind="address",
        status=status,
        proposed={"uri": f"tm://tinymachines/nothing-{n}"},
        change={},
        created_at=timezone.now() - timedelta(days=age_days),
    )


def test_proposals_waiting_and_peers_are_read_at_the_scrape(client: Client) -> None:
    _proposal(1, "open")
    _proposal(2, "open")
    _proposal(3, "open", age_days=400)  # expired, whatever its row says
    _proposal(4, "approved")
    for name, outcome in (("a", "answered"), ("b", "answered"), ("c", "unreachable"), ("d", "")):
        McpServer.objects.create(name=name, transport="http", url="https://example.org/mcp")
        McpServer.objects.filter(name=name).update(last_outcome=outcome)
    found = samples(client)
    assert found[("tmsite_proposals_waiting", ())] == 2
    peers = {k[1][0][1]: v for k, v in found.items() if k[0] == "tmsite_peers"}
    assert peers == {"answered": 2, "gated": 0, "unreachable": 1, "unasked": 1}


@dataclass
class _Offered:
    """A mount as the index sees it: ``count`` notes of one stamp."""

    name: str
    count: int

    def documents(self) -> Iterator[Document]:
        for n in range(self.count):
            uri = f"tm://test/{self.name}/note-{n}.md"
            yield Document(uri, f"note {n}", "file", "1", "text/markdown", lambda: "a note")


def _search_figures(client: Client) -> tuple[dict[str, float], float | None]:
    found = samples(client)
    documents = {k[1][0][1]: v for k, v in found.items() if k[0] == "tmsite_search_index_documents"}
    return documents, found.get(("tmsite_search_index_lag_seconds", ()))


def test_search_documents_and_lag_are_read_at_the_scrape(client: Client) -> None:
    index.clear()
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM search_state")
    assert _search_figures(client) == ({}, None), "no lag before a first sync"
    index.sync({"fs": _Offered("fs", 3), "git": _Offered("git", 2)})
    documents, lag = _search_figures(client)
    assert documents == {"fs": 3, "git": 2}
    assert lag is not None and 0 <= lag < 5
    earlier = (timezone.now() - timedelta(seconds=90)).isoformat(timespec="milliseconds")
    with connection.cursor() as cursor:
        cursor.execute("UPDATE search_state SET value = %s WHERE name = 'applied'", [earlier])
    index.sync({"fs": _Offered("fs", 3), "git": _Offered("git", 2)})  # nothing changed
    documents, lag = _search_figures(client)
    assert documents == {"fs": 3, "git": 2}
    assert lag is not None and 90 <= lag < 95, "a quiet round changes nothing, so lag grows"
    index.sync({"fs": _Offered("fs", 4)})  # git is no longer served: its documents go
    documents, lag = _search_figures(client)
    assert documents == {"fs": 4}
    assert lag is not None and 0 <= lag < 5


def test_an_allowed_entry_that_is_no_address_stops_the_start(settings: Any) -> None:
    settings.TM_METRICS_ALLOWED = ["192.0.2.0/24", "prometheus.internal"]
    [error] = checks.metrics_allowed()
    assert error.id == "tm.E040"
    assert "'prometheus.internal' is not an IP address or network" in error.msg
    settings.TM_METRICS_ALLOWED = ["192.0.2.0/24", "::1", "10.0.0.5"]
    assert checks.metrics_allowed() == []
