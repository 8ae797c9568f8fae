"""The box's Prometheus metrics, counted where each request's row is made.

Every request the box answers over MCP (HTTP or stdio) or REST, and every one the serving
model refuses before it reaches them, becomes one request-log row (``recorder.record``); that
row is what :func:`observe` counts, whether or not the log keeps it. So every serving path
(the MCP endpoint in the event loop or on a thread, the REST routes, ``tmsite.serve.guard``) is
counted by the one call, with the row's own outcome and duration.

================================================  =========  =====================================
metric                                            type       labels
================================================  =========  =====================================
``mcp_server_operation_duration_seconds``         histogram  ``mcp_method_name``,
                                                             ``gen_ai_tool_name`` (``tools/call``),
                                                             ``outcome`` (``ok`` or the reason)
``tmsite_http_requests_total``                    counter    ``surface``, ``status``
``tmsite_rate_limited_total``                     counter    ``surface``
``tmsite_listen_streams``                         gauge      (open ``subscriptions/listen``)
``tmsite_session_streams``                        gauge      (open 2025-11-25 session streams)
``tmsite_request_log_pending_rows``               gauge      (rows not yet written)
``tmsite_request_log_dropped_rows_total``         counter    (rows dropped, the buffer full)
``tmsite_git_cache_hits``, ``…_misses``           gauge      ``cache`` (``objects``, ``reads``)
``tmsite_proposals_waiting``                      gauge      (read at scrape: open proposals)
``tmsite_peers``                                  gauge      ``state`` (read at scrape)
``tmsite_search_index_documents``                 gauge      ``mount`` (read at scrape)
``tmsite_search_index_lag_seconds``               gauge      (read at scrape)
================================================  =========  =====================================

The names follow the OpenTelemetry semantic conventions for MCP (``mcp.server.operation.
duration``, ``mcp.method.name``, ``gen_ai.tool.name``) as Prometheus spells them. No label
names a caller: a method or tool the protocol does not name is ``other``, an outcome is the
server's own word, a status a number; addresses, agents, sessions, tokens and URIs are never
labels.

Across worker processes: ``python -m tmsite.serve`` gives its workers a directory
(``PROMETHEUS_MULTIPROC_DIR``, under ``var/metrics/``, new at each start) and every process
counts into its own memory-mapped files there; ``/metrics`` (``tmsite.oplog.exposition``) sums
them. A gauge is the sum over the live processes; the gauges sampled from a process's own
state (its unwritten rows, its git caches) are set by a small thread each ``SAMPLE_SECONDS``.
Without the directory (one process: ``runserver``, the tests) the metrics are this process's.

Spec: OBS1.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, values
from prometheus_client.multiprocess import mark_process_dead

from tmsite.oplog import metrics_dir, process

if TYPE_CHECKING:
    from tmsite.oplog.recorder import Row

#: Where the process's own metrics live when it serves alone (no multiprocess directory).
REGISTRY = CollectorRegistry(auto_describe=True)
MULTIPROCESS_ENV = metrics_dir.MULTIPROCESS_ENV
#: Seconds between two samples of a process's own state.
SAMPLE_SECONDS = 1.0
#: The semantic conventions' buckets, with the sub-millisecond ones this server's answers need.
DURATION_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.02,
    0.05,
    0.1,
    0.2,
    0.5,
    1.0,
    2.0,
    5.0,
    10.0,
    30.0,
    60.0,
    120.0,
    300.0,
)
#: A row's surface → whether it is an HTTP request (stdio is not).
HTTP_SURFACES = frozenset({"mcp-http", "rest"})
OTHER = "other"
#: A refusal for the caller's bucket (its status is 429 over REST, 200 in MCP's JSON-RPC error).
RATE_LIMITED_OUTCOME = "rate-limited"
#: The protocol's request methods, and this server's stream of a session (``session-stream``).
MCP_METHODS = frozenset(
    {
        "initialize",
        "ping",
        "server/discover",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "logging/setLevel",
        "subscriptions/listen",
        "session-stream",
    }
)
#: An outcome is the server's word (``ok``, a reason, ``rpc-32601``, ``http-404``): longer or
#: other text is not a label.
_OUTCOME = re.compile(r"[a-z0-9-]{1,32}")
_tools: set[str] = set()

if os.environ.get(MULTIPROCESS_ENV):
    # Each write asks whether the process forked; the kernel's answer costs more than the write.
    values.ValueClass = values.MultiProcessValue(process.pid)  # type: ignore[no-untyped-call]

OPERATION_DURATION = Histogram(
    "mcp_server_operation_duration_seconds",
    "MCP request duration as observed on the server, from its receipt until its answer is made.",
    ("mcp_method_name", "gen_ai_tool_name", "outcome"),
    buckets=DURATION_BUCKETS,
    registry=REGISTRY,
)
HTTP_REQUESTS = Counter(
    "tmsite_http_requests",
    "HTTP requests to the MCP endpoint and the REST routes, by the status answered.",
    ("surface", "status"),
    registry=REGISTRY,
)
RATE_LIMITED = Counter(
    "tmsite_rate_limited",
    "Requests refused 429: the caller's bucket was short, or it had too many in flight.",
    ("surface",),
    registry=REGISTRY,
)
LISTEN_STREAMS = Gauge(
    "tmsite_listen_streams",
    "Open subscriptions/listen streams.",
    registry=REGISTRY,
    multiprocess_mode="livesum",
)
SESSION_STREAMS = Gauge(
    "tmsite_session_streams",
    "Open streams of 2025-11-25 sessions (their GET).",
    registry=REGISTRY,
    multiprocess_mode="livesum",
)
LOG_PENDING = Gauge(
    "tmsite_request_log_pending_rows",
    "Request-log rows recorded and not yet written to the database.",
    registry=REGISTRY,
    multiprocess_mode="livesum",
)
LOG_DROPPED = Counter(
    "tmsite_request_log_dropped_rows",
    "Request-log rows dropped because the database could not take them for too long.",
    registry=REGISTRY,
)
GIT_CACHE_HITS = Gauge(
    "tmsite_git_cache_hits",
    "Look-ups the git caches answered (since each process started or last emptied them).",
    ("cache",),
    registry=REGISTRY,
    multiprocess_mode="livesum",
)
GIT_CACHE_MISSES = Gauge(
    "tmsite_git_cache_misses",
    "Look-ups the git caches could not answer.",
    ("cache",),
    registry=REGISTRY,
    multiprocess_mode="livesum",
)

#: The labelled children made so far, by their labels: ``labels()`` is worked out once each.
_durations: dict[tuple[str, str, str], Any] = {}
_statuses: dict[tuple[str, int], Any] = {}


def multiprocess() -> bool:
    """Whether this process counts into the shared directory (``PROMETHEUS_MULTIPROC_DIR``)."""
    return bool(os.environ.get(MULTIPROCESS_ENV))


def forget_dead() -> None:
    """Drop the live gauges of processes no longer running (a worker granian replaced)."""
    directory = os.environ.get(MULTIPROCESS_ENV)
    if not directory:
        return
    for path in Path(directory).glob("gauge_live*_*.db"):
        pid = path.stem.rpartition("_")[2]
        if pid.isdigit() and not metrics_dir.running(int(pid)):
            mark_process_dead(int(pid), directory)  # type: ignore[no-untyped-call]


def leaving() -> None:
    """This process stops: its live gauges no longer count."""
    directory = os.environ.get(MULTIPROCESS_ENV)
    if directory:
        mark_process_dead(process.pid(), directory)  # type: ignore[no-untyped-call]


def name_tools(names: Iterable[str]) -> None:
    """The tool names a ``tools/call`` row may be labelled with (the MCP surface's)."""
    _tools.update(names)


def tool_name(method: str, target: str) -> str:
    """A ``tools/call``'s tool as a label may name it: one the box offers, else ``other``."""
    if method != "tools/call":
        return ""
    return target if target in _tools else OTHER


def observe(row: Row) -> None:
    """Count one request from its row: its duration, its status, a 429."""
    _ensure_sampler()
    if row.surface.startswith("mcp") and row.method:
        method = row.method if row.method in MCP_METHODS else OTHER
        tool = tool_name(method, row.target)
        outcome = row.outcome if _OUTCOME.fullmatch(row.outcome) else OTHER
        key = (method, tool, outcome)
        child = _durations.get(key)
        if child is None:
            child = _durations[key] = OPERATION_DURATION.labels(method, tool, outcome)
        child.observe(row.duration_us / 1_000_000)
    if row.surface in HTTP_SURFACES:
        status_key = (row.surface, row.status)
        counter = _statuses.get(status_key)
        if counter is None:
            counter = _statuses[status_key] = HTTP_REQUESTS.labels(row.surface, str(row.status))
        counter.inc()
        if row.status == 429 or row.outcome == RATE_LIMITED_OUTCOME:
            RATE_LIMITED.labels(row.surface).inc()


def dropped(rows: int) -> None:
    """Count request-log rows dropped (``recorder``'s buffer was full)."""
    LOG_DROPPED.inc(rows)


def stream_opened(kind: str) -> None:
    """A stream of ``kind`` (``listen``, ``session``) is open in this process."""
    _STREAMS[kind].inc()


def stream_closed(kind: str) -> None:
    """A stream of ``kind`` opened with :func:`stream_opened` is over."""
    _STREAMS[kind].dec()


_STREAMS = {"listen": LISTEN_STREAMS, "session": SESSION_STREAMS}


# --- a process's own state, sampled ---------------------------------------------------------

_sampler = {"pid": -1}
_sampler_lock = threading.Lock()


def sample() -> None:
    """Set the gauges read from this process's own state (its buffer, its caches)."""
    from tmsite.gitstore import cache
    from tmsite.oplog import recorder

    LOG_PENDING.set(recorder.pending())
    for name, held in (("objects", cache.OBJECTS), ("reads", cache.READS)):
        GIT_CACHE_HITS.labels(name).set(held.hits)
        GIT_CACHE_MISSES.labels(name).set(held.misses)


def _ensure_sampler() -> None:
    """Start this process's sampling thread once (again after a fork)."""
    if _sampler["pid"] == process.pid():
        return
    with _sampler_lock:
        if _sampler["pid"] == process.pid():
            return
        _sampler["pid"] = process.pid()
    threading.Thread(target=_sample_forever, name="tm-metrics-sampler", daemon=True).start()


def _sample_forever() -> None:
    pid = process.pid()
    stop = threading.Event()
    while _sampler["pid"] == pid:
        with contextlib.suppress(Exception):  # a sample informs; the next one tries again
            sample()
        stop.wait(SAMPLE_SECONDS)
