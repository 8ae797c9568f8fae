"""``GET /metrics``: the Prometheus text of every worker's metrics, to allowed addresses only.

Who may read it is the caller as the rate limit finds it (``caller.client``: the socket's
peer, or the address a trusted proxy forwarded): loopback, or an address or network
``TM_METRICS_ALLOWED`` names. Anyone else is answered 404, as for a URL that is not served, and
the refusal counts nothing. Under ``python -m tmsite.serve`` the answer sums every worker's
files (``prometheus_client``'s multiprocess collector); alone, it is this process's metrics.
What is read from the database — open proposals waiting for a decision, MCP peers by the state
they were last found in — and the search index's documents per mount and its lag (seconds
since a sync last changed it) are read at the scrape (small aggregate queries); a database that
does not answer leaves them out of that scrape.

Spec: OBS1.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from tmsite.callers import caller
from tmsite.core.settled import settled
from tmsite.oplog import failures, metrics
from tmsite.search import index

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
#: A peer's last outcome (``McpServer.last_outcome``) → its state as the metric labels it.
PEER_STATES = {
    "answered": "answered",
    "gated": "gated",
    "unreachable": "unreachable",
    "": "unasked",
}


def _network(entry: str) -> Network | None:
    try:
        return ipaddress.ip_network(entry, strict=False)
    except ValueError:
        return None


def allowed_problem(entries: list[str]) -> str:
    """What is wrong with ``TM_METRICS_ALLOWED`` (an entry that is no address or network)."""
    for entry in entries:
        if _network(entry) is None:
            return f"{entry!r} is not an IP address or network"
    return ""


@settled
def _allowed() -> tuple[Network, ...]:
    found = (_network(entry) for entry in settings.TM_METRICS_ALLOWED)
    return tuple(network for network in found if network is not None)  # tm.E040 names the rest


def allowed(meta: dict[str, Any]) -> bool:
    """Whether the caller of a request (its ``META``) may read the metrics."""
    who = caller.client(*caller.seen(meta))
    if caller.loopback(who):
        return True
    try:
        address = ipaddress.ip_address(who)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return any(address in network for network in _allowed())


class _Scraped(Collector):
    """What is read from the database at each scrape."""

    def describe(self) -> Iterator[GaugeMetricFamily]:
        """The families, without reading the database (registration asks for them)."""
        yield GaugeMetricFamily("tmsite_proposals_waiting", "")
        yield GaugeMetricFamily("tmsite_peers", "", labels=["state"])
        yield GaugeMetricFamily("tmsite_search_index_documents", "", labels=["mount"])
        yield GaugeMetricFamily("tmsite_search_index_lag_seconds", "")

    def collect(self) -> Iterator[GaugeMetricFamily]:
        try:
            waiting, peers = _database_counts()
            documents, applied = index.documents(), index.applied()
        except Exception as exc:
            failures.report("metrics", exc)
            return
        yield GaugeMetricFamily(
            "tmsite_proposals_waiting", "Open proposals waiting for a decision.", value=waiting
        )
        family = GaugeMetricFamily(
            "tmsite_peers",
            "MCP servers the box reads, by how they last answered.",
            labels=["state"],
        )
        for state, count in peers.items():
            family.add_metric([state], count)
        yield family
        indexed = GaugeMetricFamily(
            "tmsite_search_index_documents",
            "Documents the search index holds, by the mount that offers them.",
            labels=["mount"],
        )
        for mount, count in documents.items():
            indexed.add_metric([mount], count)
        yield indexed
        if applied is not None:
            yield GaugeMetricFamily(
                "tmsite_search_index_lag_seconds",
                "Seconds since a sync of the search index last applied a change.",
                value=max(0.0, (datetime.now(UTC) - applied).total_seconds()),
            )


def _database_counts() -> tuple[int, dict[str, int]]:
    from django.db.models import Count

    from tmsite.proposals.models import Proposal, expiry_cutoff
    from tmsite.servers.models import McpServer

    waiting = Proposal.objects.filter(status="open", created_at__gte=expiry_cutoff()).count()
    peers = dict.fromkeys(PEER_STATES.values(), 0)
    rows = McpServer.objects.values("last_outcome").annotate(n=Count("pk"))
    for row in rows:
        state = PEER_STATES.get(str(row["last_outcome"]), "unasked")
        peers[state] += int(row["n"])
    return waiting, peers


_SCRAPED = _Scraped()
metrics.REGISTRY.register(_SCRAPED)


def registry() -> CollectorRegistry:
    """The registry a scrape reads: every worker's files, or this process's metrics."""
    metrics.sample()  # this process's own state, as of now
    if not metrics.multiprocess():
        return metrics.REGISTRY
    merged = CollectorRegistry()
    MultiProcessCollector(merged)  # type: ignore[no-untyped-call]
    merged.register(_SCRAPED)
    return merged


def metrics_view(request: HttpRequest) -> HttpResponse:
    """``GET /metrics`` (404 to anyone not allowed)."""
    if request.method not in ("GET", "HEAD") or not allowed(request.META):
        raise Http404("not found")
    return HttpResponse(generate_latest(registry()), content_type=CONTENT_TYPE_LATEST)
