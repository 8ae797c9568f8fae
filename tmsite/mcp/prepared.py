"""Answers that do not change between requests, serialized once and spliced with the request id.

``initialize`` (per negotiated version), ``ping``, ``server/discover``, ``tools/list``,
``resources/templates/list``, ``prompts/list`` and the read of the root ``tm://<host>/`` give
the same result to every request of one protocol version, so their result is built once by the
ordinary path (``methods.dispatch``, the era's stamp) and kept as JSON text; each answer is that
text with the request's id put in front. What each depends on is kept beside it and compared on
every use; when it differs the entry is built again:

* the row of the method table that answers the method (``methods.METHODS``);
* the box's name (``TM_HOST``) and public front door (``TM_PUBLIC_URL``): ``serverInfo``, the
  icons of the tools, the instructions;
* the namespace (``registry.namespace()``, rebuilt when the mounts change): the templates and
  the root listing, which lists each mount by its root, title and sentence (all fixed per
  mount, whatever the mount holds or whether it answers);
* the protocol version the request speaks (the handler is told it), and for ``initialize``
  the version it negotiates.

A request whose params could make the answer differ (a ``cursor`` on a list, a root URI
spelled otherwise) takes the ordinary path. A root read counts its kind on every answer, as
the ordinary read does.

Spec: T7, T10.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from tmsite.kinds import counter as kind_counter
from tmsite.mcp import lifecycle
from tmsite.mcp.protocol import CallContext
from tmsite.mounts import registry
from tmsite.subscriptions import delivery

#: Methods whose answer depends only on the version and the settings below.
_FIXED = frozenset({"ping", "server/discover", "tools/list"})
#: Lists answered in one page: prepared unless the request carries a cursor.
_ONE_PAGE = frozenset({"resources/templates/list", "prompts/list"})
_USES_NAMESPACE = frozenset({"resources/templates/list", "resources/read"})


@dataclass(frozen=True)
class Prepared:
    """One prepared answer: what it depends on, its result, and the result's JSON text."""

    depends: tuple[Any, ...]
    result: dict[str, Any]
    text: str
    #: Whether ``envelope.dumps`` had to escape the result to ASCII (it holds lone surrogates).
    ascii_only: bool = False
    after: Callable[[], None] | None = None

    def answer(self, rid: str | int) -> str | None:
        """The whole response for ``rid``, as ``envelope.dumps`` writes it (None: it cannot)."""
        if isinstance(rid, int):
            id_text = str(int(rid))
        else:
            id_text = json.dumps(rid, ensure_ascii=self.ascii_only)
            if not self.ascii_only and not id_text.isascii():
                try:
                    id_text.encode("utf-8")
                except UnicodeEncodeError:  # dumps would escape the whole response
                    return None
        return '{"jsonrpc":"2.0","id":' + id_text + ',"result":' + self.text + "}"


_entries: dict[tuple[str, str, str], Prepared] = {}


def variant(method: str, params: dict[str, Any], ctx: CallContext) -> tuple[str, str, str] | None:
    """The prepared answer a request may take (method, version, variant), or None for none."""
    if method in _FIXED:
        return (method, ctx.version, "")
    if method == "initialize":
        return (method, ctx.version, lifecycle.negotiated_version(params))
    if method in _ONE_PAGE:
        return (method, ctx.version, "") if params.get("cursor") is None else None
    if method == "resources/read":
        uri = params.get("uri")
        if isinstance(uri, str) and uri == f"tm://{settings.TM_HOST}/":
            return (method, ctx.version, uri)
    return None


def _depends(method: str) -> tuple[Any, ...]:
    from tmsite.mcp.methods import METHODS  # the row that answers it: a new handler, anew

    host: str = settings.TM_HOST
    streams = delivery.here()  # what server/discover advertises
    if method in _USES_NAMESPACE:
        return (METHODS.get(method), host, lifecycle.public_url(), registry.namespace(), streams)
    return (METHODS.get(method), host, lifecycle.public_url(), streams)


def lookup(key: tuple[str, str, str]) -> tuple[Prepared | None, tuple[Any, ...]]:
    """The entry for ``key`` if still current (else None), and what it depends on now.

    An entry is current when what it depends on is as it was when it was built; the
    dependencies are returned for ``store`` to keep beside a new entry. The namespace is
    compared by identity (``Namespace`` defines no equality), the settings' strings by value.
    """
    depends = _depends(key[0])
    entry = _entries.get(key)
    if entry is None or entry.depends != depends:
        return None, depends
    return entry, depends


def store(
    key: tuple[str, str, str], depends: tuple[Any, ...], result: dict[str, Any], text: str
) -> Prepared:
    """Keep the result just built for ``key`` (``depends`` taken before building it)."""
    after: Callable[[], None] | None = None
    if key[0] == "resources/read":
        with kind_counter.quiet():  # the read just answered was counted already
            content = depends[3].read(key[2])
        after = _count_kind(content)
    plain = json.dumps(result, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    entry = Prepared(depends, result, text, ascii_only=plain != text, after=after)
    _entries[key] = entry
    return entry


def _count_kind(content: Any) -> Callable[[], None]:
    def count() -> None:
        kind_counter.record(content)

    return count


def clear() -> None:
    """Forget every prepared answer (tests)."""
    _entries.clear()
