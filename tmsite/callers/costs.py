"""What a request costs from the caller's bucket, and what kind of read it is.

The price follows what the server has to do, decided from the URI's mount and facet:

=========  ====  ==========================================================================
kind       cost  what
=========  ====  ==========================================================================
protocol   1     initialize, ping, discover, the lists, templates, completion
(mount)    1     a file, a record, a listing: fs, git, entity, offbox, trail, kinds, …
history    1     a git history (``?as=log``, ``?as=blame``): kept once computed, it costs
                 what a file does; its walk, when it runs, is charged after (below)
blocks     2     ``?as=blocks``: one address assembled from many
mcp        2     another MCP server's record, its tool and resource descriptions, its map
http       4     a page: fetched from the front door as a visitor gets it
mcp-run    8     a path the server's map names (runs a tool on another MCP server), or the
                 content of its resource (``mcp/<server>/resources/<uri>``, read from it)
tool       1-4   ``licensing`` 1, ``piece`` 2, ``overview`` 4 (probes every piece)
propose    30    ``propose``: a proposal for the maintainers, a quarter of the default burst;
                 refused for its input (``bad-argument``, ``exists``) it costs 1, as a
                 ``bad-uri`` read does (``as_answered``)
search     3     ``search``, ``/api/v1/search``, ``?as=search``: a full-text query of the index
prompt     8     ``prompts/get``: reads its address and what it links (pages among them)
listen     4     ``subscriptions/listen``, or a 2025-11-25 session's GET stream
                 (``session-stream``): a stream held open (its slot, its watchers)
=========  ====  ==========================================================================

``resolve`` costs what the URI it reads costs. ``TM_RATE_COSTS`` (a dict in settings) may
reprice any kind. The kind is also the request log's ``kind`` column, and the URI its
``target`` (a receipt's token left out: :func:`target`).

That price is spent before the request runs. What the request then made the box do is counted
as it happens (``tmsite.core.work``): a token for the request itself (reading it, dispatching
it, writing the answer) and the units it spent, priced below. When the whole tokens of that come
to more than the price up front, the difference is charged after the answer (``charged``; a
fraction of a token is not charged) and the caller's bucket may go into debt. A token is about
2 ms of one core; ``bench/budget.py`` measures each unit's share:

=========  ===========  =====================================================================
unit       tokens       measured (``bench/budget.py``, CPU beyond a small file read's)
=========  ===========  =====================================================================
ranked     1 / 4,000    0.5 µs a name: a refusal that ranks 5,000 names costs 2
scanned    1 / 10,000   a directory's names read from the disk, once per change of it
listed     1 / 16       0.13 ms an entry (a stat each): a listing page of 500 costs 32
commits    1 / 20       0.1 ms a commit: a history walk over 2,000 commits costs 101
fetched    3            a page fetched through the front door: a page read costs its 4
peer       1            a request to another MCP server: a description read costs its 2
bytes      1 / 262,144  each 256 KiB of answer
cpu        1 / 2        a millisecond of CPU a heavy computation took beyond its units (a
                        blame's diffs: a token is about 2 ms of one core), for a caller with
                        a limit; a blame of git/git's diff.c spent 2,400 commits' worth, 121
                        tokens by its commits, in about 10 s of CPU before this was counted
=========  ===========  =====================================================================

So a small file, ``ping`` or ``tools/list`` costs the 1 it is priced at, a page the 4, a
history walk of 20 commits 2 and a history kept by an earlier walk (``tmsite.gitstore.kept``:
for every worker and machine) 1; a prompt that fetches three pages costs 10, not 8.

A heavy read (a blame, a history walk, a deep tree) is never charged more than a caller's whole
budget (``TM_RATE_BURST``): its walk runs against that allowance (``tmsite.core.work.heavy``),
and the commit that would take it past is where it stops and is refused ``too-costly``, with
the tokens spent so far charged, ``cost`` and ``budget`` said, and narrower reads offered. What
stopped is remembered with the answers: the next rate-limited caller who asks it is refused at
once, without the walk, until a caller with no limit (the operator, the box's own loopback)
computes it; from then it is kept, and costs 1 like any other.
``TM_RATE_UNIT_COSTS`` (a dict in settings) may reprice any unit.

Spec: OP1, OP2, ANY3.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote

from django.conf import settings

from tmsite.core.errors import Refusal
from tmsite.core.settled import settled
from tmsite.core.uri import TmUri, parse
from tmsite.core.work import Unit

COSTS: dict[str, int] = {
    "protocol": 1,
    "file": 1,
    "history": 1,
    "blocks": 2,
    "mcp": 2,
    "http": 4,
    "mcp-run": 8,
    "tool:licensing": 1,
    "tool:piece": 2,
    "tool:overview": 4,
    "tool:propose": 30,
    "tool:search": 3,
    "prompt": 8,
    "listen": 4,
}
#: Tokens one unit of work costs (the second table above).
UNIT_COSTS: dict[Unit, float] = {
    "ranked": 1 / 4_000,
    "scanned": 1 / 10_000,
    "listed": 1 / 16,
    "commits": 1 / 20,
    "fetched": 3,
    "peer": 1,
    "bytes": 1 / 262_144,
    "cpu": 1 / 2,
}
#: Tokens a request costs itself, whatever it reads: what the price of the cheapest covers.
REQUEST_TOKENS = 1.0
#: Slack for float sums: work that comes to exactly N tokens is charged N.
_SLACK = 1e-9
#: Paths under ``mcp/<server>/`` that describe the server rather than run one of its tools.
MCP_DESCRIBING = frozenset({"tools", "resources", "prompts", "map"})
#: Facets that make a read of any other mount cost more than a file, and the kind they are.
FACET_KINDS: dict[str, str] = {
    "log": "history",
    "blame": "history",
    "blocks": "blocks",
    "search": "tool:search",
}
MAX_TARGET = 500
#: The request log's ``method`` of a 2025-11-25 session's GET stream (it has no JSON-RPC one).
SESSION_STREAM = "session-stream"


@dataclass(frozen=True)
class Priced:
    """What one request asked for, as the log and the bucket see it.

    Attributes:
        kind: The category the log aggregates by and the cost table prices.
        cost: Tokens it spends.
        target: The URI (rebuilt from its parsed form) or tool name; ``""`` when none.
        facet: The URI's ``as`` parameter, or ``""``.
    """

    kind: str
    cost: int
    target: str = ""
    facet: str = ""


@settled
def _costs() -> dict[str, int]:
    return {**COSTS, **getattr(settings, "TM_RATE_COSTS", {})}


@settled
def unit_prices() -> dict[Unit, float]:
    """Tokens one of each unit costs: ``TM_RATE_UNIT_COSTS`` over ``UNIT_COSTS``."""
    return {
        unit: float(cost)
        for unit, cost in {**UNIT_COSTS, **getattr(settings, "TM_RATE_UNIT_COSTS", {})}.items()
    }


def price(kind: str) -> int:
    """Tokens a ``kind`` costs: ``TM_RATE_COSTS`` over ``COSTS``; an unknown kind is a file."""
    table = _costs()
    return int(table.get(kind, table["file"]))


def charged(priced: Priced, units: Mapping[Unit, int]) -> Priced:
    """What a request that ran costs: its price, or the whole tokens of its work when more."""
    prices = unit_prices()
    work = sum(count * prices[unit] for unit, count in units.items())
    worked = math.floor(REQUEST_TOKENS + work + _SLACK)
    return replace(priced, cost=worked) if worked > priced.cost else priced


def _uri_kind(uri: TmUri) -> str:
    """The kind of a read: by mount first (root, page, another server), then by facet."""
    if uri.mount is None:
        return "protocol"
    if uri.mount == "http":
        return "http"
    if uri.mount == "mcp":
        return _mcp_kind(uri)
    return FACET_KINDS.get(uri.param("as") or "", uri.mount)


def _mcp_kind(uri: TmUri) -> str:
    """``mcp`` for a server's record and descriptions, ``mcp-run`` for what asks the server.

    That is a path its map runs, and a resource's content (``resources/<uri>`` read plainly or
    ``?as=raw``; its declaration, stat and links are descriptions).
    """
    path = uri.path
    if len(path) <= 1:
        return "mcp"
    if path[1] == "resources" and len(path) == 3 and not uri.collection:
        return "mcp-run" if uri.param("as") in (None, "raw") else "mcp"
    if path[1] in MCP_DESCRIBING:
        return "mcp"
    return "mcp-run"


def of_uri(text: object) -> Priced:
    """Price a read of ``text``; a URI that does not parse costs as a file and logs no target."""
    key = text if isinstance(text, str) and len(text) <= MAX_KEPT_URI else None
    read = _reads.get(key) if key is not None else None
    if read is None:
        read = _read_of(text)
        if key is not None:
            if len(_reads) >= MAX_READS:
                _reads.clear()
            _reads[key] = read
    kind, target, facet = read
    if kind == "bad-uri":
        return Priced(kind, price("file"))
    return Priced(kind, price(kind), target, facet)


def _read_of(text: object) -> tuple[str, str, str]:
    """The kind, target and facet of a read of ``text`` (the kind ``bad-uri``: no URI)."""
    try:
        uri = parse(text)
    except Refusal:
        return "bad-uri", "", ""
    return _uri_kind(uri), target(uri)[:MAX_TARGET], (uri.param("as") or "")[:32]


#: Mounts whose address carries a secret in a path segment (``proposals/<receipt token>``: it
#: reads an open proposal), and what the log's target holds in its place. A segment that is a
#: number (a decided proposal, public) is kept.
SECRET_SEGMENTS: dict[str, str] = {"proposals": "{receipt}"}


def target(uri: TmUri) -> str:
    """The log's ``target`` of a read of ``uri``: the address, any secret segment replaced."""
    stand_in = SECRET_SEGMENTS.get(uri.mount or "")
    if stand_in is None or all(segment.isdigit() for segment in uri.path):
        return str(uri)
    path = tuple(segment if segment.isdigit() else stand_in for segment in uri.path)
    return str(replace(uri, path=path)).replace(quote(stand_in, safe=""), stand_in)


#: The reads priced so far, by the text asked (a client reads the same URIs again and again);
#: emptied when it holds ``MAX_READS``. What they cost is looked up each time (a setting).
_reads: dict[str, tuple[str, str, str]] = {}
MAX_READS = 1024
#: The longest URI text remembered (a longer one is priced each time).
MAX_KEPT_URI = 1024


#: Refusals of what a request asked (its input), made before the work the price is for.
INPUT_REFUSALS = frozenset({"bad-argument", "bad-uri", "exists"})
#: Kinds priced for what they do when they succeed: refused for their input, such a request
#: costs what a read of a URI that does not parse costs (a file's price).
PRICED_FOR_SUCCESS = frozenset({"tool:propose"})


def as_answered(priced: Priced, outcome: str) -> Priced:
    """What a request that was answered with ``outcome`` is priced at.

    A ``propose`` refused for its input keeps nothing for the maintainers: it costs what any
    refused read does. Its price was spent up front; the difference is given back (``_settle``
    in ``tmsite.oplog.hooks``).
    """
    if priced.kind in PRICED_FOR_SUCCESS and outcome in INPUT_REFUSALS:
        return replace(priced, cost=min(priced.cost, price("file")))
    return priced


def of_prompt(name: object) -> Priced:
    """Price a prompt's rendering; only the prompt's name is kept, never its arguments."""
    return Priced("prompt", price("prompt"), name[:64] if isinstance(name, str) else "")


def of_tool(name: object, arguments: object) -> Priced:
    """Price a tool call; only the tool's name is kept, never its arguments."""
    if not isinstance(name, str):
        return Priced("tool", price("protocol"))
    if name == "resolve":
        uri = arguments.get("uri") if isinstance(arguments, dict) else None
        read = of_uri(uri)
        return Priced(read.kind, read.cost, "resolve")
    kind = f"tool:{name}"
    if kind in COSTS:
        return Priced(kind, price(kind), name)
    return Priced("tool", price("protocol"), name[:64])


def of_message(method: str, params: Any) -> Priced:
    """Price one JSON-RPC request."""
    params = params if isinstance(params, dict) else {}
    if method == "resources/read":
        return of_uri(params.get("uri"))
    if method == "tools/call":
        return of_tool(params.get("name"), params.get("arguments"))
    if method == "prompts/get":
        return of_prompt(params.get("name"))
    if method in ("subscriptions/listen", SESSION_STREAM):  # a stream held open, not one answer
        return Priced("listen", price("listen"))
    return Priced("protocol", price("protocol"))


#: REST route (the path after ``/api/v1/``, first segment) → the kind it is.
REST_KINDS: dict[str, str] = {
    "overview": "tool:overview",
    "pieces": "tool:overview",
    "licensing": "tool:licensing",
    "resources": "protocol",
    "templates": "protocol",
    "complete": "protocol",
    "prompts": "protocol",
    "proposals": "tool:propose",
    "search": "tool:search",
}


def of_rest(route: str, query: Any) -> Priced:
    """Price a REST call by its route (``pieces/c64`` → one piece) and query."""
    head, _, rest = route.partition("/")
    if head == "resolve":
        return of_uri(query.get("uri"))
    if head == "pieces" and rest:
        return Priced("tool:piece", price("tool:piece"), "piece")
    if head == "prompts" and rest and "/" not in rest:  # a rendering, not its completion
        return of_prompt(rest)
    kind = REST_KINDS.get(head, "protocol")
    return Priced(kind, price(kind), head[:64])
