"""Lifecycle: ``initialize`` and ``ping`` (initialize era), ``server/discover`` (2026-07-28).

All three describe the same server the same way: one capability table, one ``serverInfo``, one
paragraph of instructions for the model. The version rules:

* ``initialize`` echoes a version from ``INITIALIZE_VERSIONS`` and answers
  ``LATEST_INITIALIZE_VERSION`` to anything else (unknown, missing, or not a string) — the
  negotiation rule of every initialize-era revision (``basic/lifecycle.mdx``): the server answers
  a version it supports and the client decides whether it can use it.
* ``server/discover`` lists every version served, newest first, and identifies the server in
  ``_meta["io.modelcontextprotocol/serverInfo"]`` (``DiscoverResult`` has no ``serverInfo``
  member; spec PR #3002 moved it into ``_meta``). ``resultType``, ``ttlMs`` and ``cacheScope``
  are added by ``tmsite.mcp.methods.dispatch``.

``serverInfo`` says what the server is (``description``), where the box is (``websiteUrl``, its
public front door) and shows its icon (``icons``, same origin, SVG and PNG), as 2025-11-25 added
them; older revisions' clients ignore members they do not know.

Spec: T7, T9, PR1, SUB2.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

import tmsite
from tmsite import icon, operations
from tmsite.bus import delivery
from tmsite.mcp.protocol import (
    INITIALIZE_VERSIONS,
    LATEST_INITIALIZE_VERSION,
    SUPPORTED_VERSIONS,
    CallContext,
)

#: The ``_meta`` key under which a 2026-07-28 result names the server that produced it.
SERVER_INFO_META_KEY = "io.modelcontextprotocol/serverInfo"


def capabilities(era: str = "2025", delivers: bool = False) -> dict[str, Any]:
    """What the server offers: tools, resources, prompts and completions.

    On a server that ``delivers`` subscriptions (:mod:`tmsite.bus.delivery`), in 2026-07-28
    the list changes and resource subscriptions its ``subscriptions/listen`` streams deliver;
    in the initialize era, ``resources.subscribe``.
    """
    offered: dict[str, Any] = {
        "tools": {"listChanged": False},
        "resources": {"subscribe": False, "listChanged": False},
        "prompts": {"listChanged": False},
        "completions": {},
    }
    if era == "2026":
        offered.update(delivery.listen_capabilities(delivers))
    else:
        offered.update(delivery.session_capabilities(delivers))
    return offered


def public_url() -> str:
    """The box's public front door (``TM_PUBLIC_URL``), without a trailing ``/``."""
    return str(getattr(settings, "TM_PUBLIC_URL", settings.TM_FRONT_DOOR)).rstrip("/")


def server_info() -> dict[str, Any]:
    """The server's ``Implementation``: who it answers for, what it is, where, and its icon.

    ``websiteUrl`` is the box's public front door (its site's front page); the icons are
    served by the box on that same origin (:mod:`tmsite.icon`).
    """
    host: str = settings.TM_HOST
    origin = public_url()
    return {
        "name": host,
        "title": f"{host}: the box's documents, data, pages and pieces over MCP",
        "version": tmsite.__version__,
        "description": (
            f"The box {host}, read-only: its documents, data, repositories, pages, records and "
            "the MCP servers it reads, as one tm:// namespace of typed, linked resources, and "
            "tools that say what the six pieces of the 6502 work are and whether they answer."
        ),
        "websiteUrl": f"{origin}/",
        "icons": icon.icons(origin),
    }


def instructions() -> str:
    """One paragraph for the model: what to call first, where to start reading, how to walk."""
    host: str = settings.TM_HOST
    return (
        f"This server answers for the box {host}, read-only. Call the `overview` tool first: it "
        "says what the box is, what its pieces are and which of them answer right now (measured "
        "when you ask). Everything else is the tm:// namespace, spoken as MCP resources: start by "
        f"reading tm://{host}/, which lists the mounts; read any URI that ends in `/` to list it, "
        "and any other URI to get the thing itself (a file, a page as a visitor gets it, a record, "
        "a repository at any ref). Every read carries typed links in its "
        '_meta["tinymachines.ai/links"] — follow them instead of guessing paths; the `resolve` '
        "tool reads the same URIs and puts the links in its body. A read that fails names the "
        "nearest URIs that do resolve. resources/templates/list and completion/complete give the "
        "URI grammar and live values. When you know what you want but not where it is, call "
        "the `search` tool (or read <collection>?as=search&q=<words>): each hit is an address "
        "narrowed to the passage that matched; walk from the root to see what exists."
        + _first_document()
    )


def _first_document() -> str:
    """The sentence naming the document to read first, when the served checkout has one."""
    found = operations.help_uri()
    return f" The first document to read is {found}." if found else ""


def negotiated_version(params: Any) -> str:
    """The version ``initialize`` answers: the client's when it is one we speak, else our latest."""
    requested = params.get("protocolVersion") if isinstance(params, dict) else None
    if isinstance(requested, str) and requested in INITIALIZE_VERSIONS:
        return requested
    return LATEST_INITIALIZE_VERSION


def initialize(params: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
    """Answer the handshake in the version ``negotiated_version`` picks."""
    return {
        "protocolVersion": negotiated_version(params),
        "capabilities": capabilities("2025", ctx.delivers),
        "serverInfo": server_info(),
        "instructions": instructions(),
    }


def ping(params: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
    """The liveness check of the initialize era: an empty result."""
    return {}


def discover(params: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
    """``server/discover``: the versions served, capabilities, instructions, and who we are."""
    return {
        "supportedVersions": sorted(SUPPORTED_VERSIONS, reverse=True),
        "capabilities": capabilities(ctx.era, ctx.delivers),
        "instructions": instructions(),
        "_meta": {SERVER_INFO_META_KEY: server_info()},
    }
