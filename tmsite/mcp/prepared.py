"""Answers that do not change between requests, serialized once and spliced with the request id.

The methods whose row of the method table says ``prepared`` (``initialize`` per negotiated
version, ``ping``, ``server/discover``, ``tools/list``, ``resources/templates/list``,
``prompts/list``) and the read of the root ``tm://<host>/`` give the same result to every
request of one protocol version, so their result is built once by the ordinary path
(``methods.dispatch``, the era's stamp) and kept as JSON text; each answer is that text with the
request's id put in front. What each depends on is kept beside it and compared on every use;
when it differs the entry is built again:

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

A plain read a mount vouches for (a small ``fs`` file: its stat; a ``git`` file: its commit;
an entity or a trail: its records' stamp) is kept by the namespace (``Namespace.kept``, which
says what is compared when); its answer is kept beside that kept read (``Kept.answers``), and
goes with it. Its kind is counted on every answer as well.

Spec: T7, T10.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from django.conf import settings

from tmsite.kinds import counter as kind_counter
from tmsite.mcp import lifecycle
from tmsite.mcp.methods import METHODS
from tmsite.mcp.protocol import CallContext
from tmsite.mounts import registry

_USES_NAMESPACE = frozenset({"resources/templates/list", "resources/read"})


class Depends(NamedTuple):
    """What one prepared answer depends on; the answer stands while it compares equal.

    The namespace is compared by identity (``Namespace`` defines no equality), the settings'
    strings by value. A named tuple: it is built and compared on every prepared answer, in C.
    """

    #: The row of the method table that answers the method (a new handler, anew).
    row: Any
    host: str
    public_url: str
    #: The namespace, for the templates and reads (None for the others).
    namespace: Any = None
    #: Whether the server delivers subscriptions, which ``server/discover`` and
    #: ``initialize`` advertise (None for the answers that do not say).
    delivered: bool | None = None
    #: A plain read being built: its stamp before, which the read kept after must have.
    stamp: Hashable | None = None


@dataclass(frozen=True)
class Prepared:
    """One prepared answer: what it depends on, its result, and the result's JSON text."""

    depends: Depends
    result: dict[str, Any]
    text: str
    #: Whether ``envelope.dumps`` had to escape the result to ASCII (it holds lone surrogates).
    ascii_only: bool = False
    after: Callable[[], None] | None = None
    tail: bytes = field(init=False, repr=False, compare=False, default=b"")

    def __post_init__(self) -> None:
        # the response's end, after the id, in UTF-8 once (a 24 KB list with one dash in it
        # costs more to encode than to answer)
        object.__setattr__(self, "tail", (',"result":' + self.text + "}").encode("utf-8"))

    def answer(self, rid: str | int) -> tuple[str, bytes] | None:
        """The whole response for ``rid``, as ``envelope.dumps`` writes it, and in UTF-8.

        None when the splice cannot write it so (an id ``dumps`` would escape otherwise).
        """
        if isinstance(rid, int):
            id_text = str(int(rid))
        else:
            id_text = json.dumps(rid, ensure_ascii=self.ascii_only)
            if not self.ascii_only and not id_text.isascii():
                try:
                    id_text.encode("utf-8")
                except UnicodeEncodeError:  # dumps would escape the whole response
                    return None
        head = '{"jsonrpc":"2.0","id":' + id_text
        text = head + ',"result":' + self.text + "}"
        return text, head.encode("utf-8") + self.tail


Key = tuple[str, str, str]

_entries: dict[Key, Prepared] = {}
#: An entry a request was judged answerable with, without waiting (``current``), and its key.
Chosen = tuple[Key, Prepared]


def variant(method: str, params: dict[str, Any], ctx: CallContext) -> Key | None:
    """The prepared answer a request may take (method, version, variant), or None for none."""
    row = METHODS.get(method)
    prepare = None if row is None else row.prepared
    if prepare == "fixed":
        return (method, ctx.version, "")
    if prepare == "negotiated":
        return (method, ctx.version, lifecycle.negotiated_version(params))
    if prepare == "first-page":
        return (method, ctx.version, "") if params.get("cursor") is None else None
    if method == "resources/read":
        uri = params.get("uri")
        if isinstance(uri, str) and uri == f"tm://{settings.TM_HOST}/":
            return (method, ctx.version, uri)
        if isinstance(uri, str) and registry.namespace().keeps(uri):
            return (method, ctx.version, uri)
    return None


def _file_read(key: Key) -> bool:
    return key[0] == "resources/read" and not key[2].endswith("/")


def _depends(key: Key, delivers: bool) -> Depends:
    method = key[0]
    row, host, public_url = METHODS.get(method), settings.TM_HOST, lifecycle.public_url()
    if method in _USES_NAMESPACE:
        return Depends(row, host, public_url, namespace=registry.namespace())
    return Depends(row, host, public_url, delivered=delivers)


def _find(key: Key, delivers: bool, *, wait: bool) -> tuple[Prepared | None, Depends]:
    depends = _depends(key, delivers)
    if _file_read(key):
        kept = depends.namespace.kept(key[2], wait=wait)
        entry = None if kept is None else kept.answers.get(key)
    else:
        entry = _entries.get(key)
    if entry is None or entry.depends != depends:
        return None, depends
    return entry, depends


def lookup(
    key: Key, delivers: bool, chosen: Chosen | None = None
) -> tuple[Prepared | None, Depends]:
    """The entry for ``key`` if still current (else None), and what it depends on now.

    An entry is current when what it depends on is as it was when it was built; the
    dependencies are returned for ``store`` to keep beside a new entry. A plain read's entry
    is the one kept beside the namespace's kept read; one not kept carries the read's stamp
    now, before it is built. ``delivers``: whether the server answering delivers
    subscriptions (``CallContext.delivers``). ``chosen``: the entry already judged current for
    the request (``current``, in the event loop), given as it is.
    """
    if chosen is not None and chosen[0] == key:
        return chosen[1], chosen[1].depends
    entry, depends = _find(key, delivers, wait=True)
    if entry is None and _file_read(key):
        return None, depends._replace(stamp=depends.namespace.stamp_of(key[2]))
    return entry, depends


def current(key: Key, delivers: bool) -> Prepared | None:
    """The entry for ``key`` when it is current and can be given without waiting on anything.

    As ``lookup``, except that a plain read whose links are due to be compared (which may ask
    the database) is None: it is for a thread to answer.
    """
    return _find(key, delivers, wait=False)[0]


def store(key: Key, depends: Depends, result: dict[str, Any], text: str) -> Prepared:
    """Keep the result just built for ``key`` (``depends`` taken before building it)."""
    after: Callable[[], None] | None = None
    kept = None
    if _file_read(key):
        # kept only beside the read the namespace keeps at the stamp it had before this one
        kept = depends.namespace.kept(key[2])
        if kept is not None and kept.stamp != depends.stamp:
            kept = None
        depends = depends._replace(stamp=None)
        if kept is not None:
            after = _count_kind(kept.content)
    elif key[0] == "resources/read":
        with kind_counter.quiet():  # the read just answered was counted already
            content = depends.namespace.read(key[2])
        after = _count_kind(content)
    plain = json.dumps(result, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    entry = Prepared(depends, result, text, ascii_only=plain != text, after=after)
    if kept is not None:
        depends.namespace.memo.answered(key[2], kept, key, entry, len(entry.tail))
    elif not _file_read(key):
        _entries[key] = entry
    return entry


def _count_kind(content: Any) -> Callable[[], None]:
    return functools.partial(kind_counter.record_tally, kind_counter.tally_of(content))


def clear() -> None:
    """Forget every prepared answer (tests)."""
    _entries.clear()
